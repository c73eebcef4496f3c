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
# the nonce never occurs in the data, even when the random source repeats itself (framing
# always ends); the fence is never closed early by the data.
from __future__ import annotations

import re
from typing import Final

import attrs

from markertools.domain.ports import RandomSource
from markertools.text.msg import Msg, msg

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
    """A nonce not contained in `data`: re-drawn on a collision (longer after many), and
    after _MAX_DRAWS * 2 draws - a random source that keeps repeating itself - the last
    draw gets a numeric suffix that `data` does not contain. Always ends."""
    nonce = random.token_hex(NONCE_BYTES)
    for draws in range(1, 2 * _MAX_DRAWS):
        if nonce not in data:
            return nonce
        nbytes = NONCE_BYTES if draws < _MAX_DRAWS else NONCE_BYTES * 4
        nonce = random.token_hex(nbytes)
    return nonce if nonce not in data else absent_variant(nonce, data)


def absent_variant(base: str, data: str) -> str:
    """`base` + a fixed-width number such that the result does not occur in `data`.

    The len(data) + 2 candidates are distinct strings of one length L, and `data` holds at
    most len(data) substrings of length L, so one candidate is always absent."""
    width = len(str(len(data) + 1))
    for i in range(len(data) + 2):
        candidate = f"{base}{i:0{width}d}"
        if candidate not in data:
            return candidate
    raise AssertionError("unreachable: more candidates than substrings")  # pragma: no cover


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
