# Owns: data framing (INJ-7). Any text another task or model produced (snapshots, file
# contents, previous attempt output) is wrapped as data:
#   1. a sentence saying it is data and carries no instructions;
#   2. opening/closing delimiter lines holding a random nonce the data does not contain
#      (re-drawn from the injectable random source until it does not occur);
#   3. inside them, a backtick fence longer than any backtick run in the data, so no
#      line of the data can close it: to a CommonMark reader (and to parse_turn) the
#      data is one code block, and a marker fence inside it is never a block (EXT-2).
#
# Invariants: pure; the data is reproduced verbatim (a missing final newline is added);
# the nonce never occurs in the data; the fence is never closed early by the data.
from __future__ import annotations

import re
from typing import Final

import attrs

from markertools._msg import Msg, msg
from markertools._ports import RandomSource

NONCE_BYTES: Final[int] = 8
_MAX_DRAWS: Final[int] = 64
_BACKTICK_RUN = re.compile(r"`+")


@attrs.frozen
class Framed:
    text: str
    nonce: str


def longest_backtick_run(text: str) -> int:
    return max((len(m) for m in _BACKTICK_RUN.findall(text)), default=0)


def draw_nonce(data: str, random: RandomSource) -> str:
    """A nonce not contained in `data` (falls back to a longer one after many collisions)."""
    nonce = random.token_hex(NONCE_BYTES)
    draws = 1
    while nonce in data:
        nbytes = NONCE_BYTES if draws < _MAX_DRAWS else NONCE_BYTES * 4
        nonce = random.token_hex(nbytes)
        draws += 1
    return nonce


def frame_data(data: str, label: Msg, random: RandomSource, locale: str = "en") -> Framed:
    """Wrap `data` as inert data; `label` names what it is (e.g. "output of task t2")."""
    nonce = draw_nonce(data, random)
    fence = "`" * max(3, longest_backtick_run(data) + 1)
    body = data if data.endswith(("\n", "\r")) else data + "\n"
    sentence = msg("frame.sentence", label=label).render(locale)
    text = (
        f"{sentence}\n<<<BEGIN DATA {nonce}>>>\n{fence}text\n{body}{fence}\n<<<END DATA {nonce}>>>"
    )
    return Framed(text, nonce)
