# Owns: how Python text is stored in PostgreSQL text columns. PostgreSQL text cannot hold
# U+0000, but agent output (tool output, binary files cat'ed into a turn) can; refusing
# it would lose a worker's data. So every text value crosses the boundary through a
# lossless, order-preserving escape that leaves ordinary text untouched:
#
#     U+0000 -> U+0001 U+0001      U+0001 -> U+0001 U+0002      everything else: itself
#
# Must never: store a value that decodes to something else; change any text that has no
# U+0000 and no U+0001 (so the tables stay readable by people and other tools).
#
# Invariants:
#   Rule 1: `dec(enc(s)) == s` for every str (no surrogates: they are not UTF-8 at all).
#   Rule 2: `enc` preserves code point order (ORDER BY on COLLATE "C" columns equals
#           Python's str order of the decoded values) and equality (a lookup encodes its
#           parameter the same way): the code {00->0101, 01->0102, 02->02} is prefix-free
#           and each codeword sorts like its character, below every other character.
#   Rule 3: a needle without U+0000..U+0002 occurs in `enc(s)` exactly where it occurs in
#           `s` (escape sequences consist of U+0001/U+0002 only); other needles are matched
#           in Python on decoded values (see _fold).
#   Rule 4: text not written by markertools is decoded leniently: a U+0001 that starts no
#           escape sequence is kept as it is.
from __future__ import annotations

import re
from typing import Final

_ENCODE: Final[dict[int, str]] = {0: "\x01\x01", 1: "\x01\x02"}
_ESCAPE: Final[re.Pattern[str]] = re.compile("\x01([\x01\x02])")


def enc(text: str) -> str:
    """Python text -> stored text (Rule 1-3)."""
    if "\x00" in text or "\x01" in text:
        return text.translate(_ENCODE)
    return text


def dec(text: str) -> str:
    """Stored text -> Python text (Rule 1, 4)."""
    if "\x01" in text:
        return _ESCAPE.sub(lambda m: "\x00" if m.group(1) == "\x01" else "\x01", text)
    return text


def enc_opt(text: str | None) -> str | None:
    return None if text is None else enc(text)


def dec_opt(text: str | None) -> str | None:
    return None if text is None else dec(text)


def has_special(text: str) -> bool:
    """True when `text` holds a character that escape sequences are made of (Rule 3)."""
    return "\x00" in text or "\x01" in text or "\x02" in text
