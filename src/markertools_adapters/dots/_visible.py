# Owns: how agent- or plan-supplied text is shown to a person (DOT-14, issue 37 item 6):
# every character that is invisible, reorders text or moves the cursor is written as
# an escape, so what a person reads is what the text holds. One function for every
# place that shows such text: the confirmations (terminal and MCP elicitation), the
# status lines, the decision prompt.
#
# Escaped (`needs_escape`): control characters (`plans.is_control_character`: C0, DEL,
# C1, U+2028/U+2029, the bidi controls), every character of the Unicode categories Cf
# (format: zero-width space and joiners, BOM, soft hyphen, tag characters), Co
# (private use), Cn (unassigned, noncharacters), Cs (lone surrogates), Zl/Zp, the tag
# block U+E0000-U+E007F whatever its category, and the Hangul fillers (letters that
# draw nothing). The backslash itself is written `\\`, so the escaped text decodes back
# to the original exactly (`unescape`): a literal "\u200b" typed by an agent never
# looks like an escaped zero-width space.
#
# Escapes: `\t`, `\r`, `\n`, `\\`; below U+0100 `\xNN`; in the BMP `\uNNNN`; beyond it
# `\UNNNNNNNN` (Python's own escapes, fixed width).
#
# Must never: show an escaped character raw, or two different texts the same way.
from __future__ import annotations

import unicodedata
from typing import Final

from markertools.plans import is_control_character

_NAMED: Final[dict[str, str]] = {"\t": "\\t", "\r": "\\r", "\n": "\\n", "\\": "\\\\"}
_HIDDEN_CATEGORIES: Final[frozenset[str]] = frozenset({"Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp"})
_HANGUL_FILLERS: Final[frozenset[int]] = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0})


def needs_escape(char: str) -> bool:
    """Whether `char` is shown as an escape (see the module header)."""
    code = ord(char)
    return (
        char == "\\"
        or is_control_character(char)
        or 0xE0000 <= code <= 0xE007F
        or code in _HANGUL_FILLERS
        or unicodedata.category(char) in _HIDDEN_CATEGORIES
    )


def escape_char(char: str) -> str:
    """`char` as shown: its escape when `needs_escape`, else itself."""
    if not needs_escape(char):
        return char
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str) -> str:
    """`text` with every character that `needs_escape` escaped (one line stays one
    line: a newline is `\\n`)."""
    return "".join(escape_char(c) for c in text)


def unescape(shown: str) -> str:
    """The text `visible` was given, back from what it showed (the inverse)."""
    out: list[str] = []
    i = 0
    simple = {"t": "\t", "r": "\r", "n": "\n", "\\": "\\"}
    widths = {"x": 2, "u": 4, "U": 8}
    while i < len(shown):
        char = shown[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        kind = shown[i + 1]
        if kind in simple:
            out.append(simple[kind])
            i += 2
            continue
        width = widths[kind]
        out.append(chr(int(shown[i + 2 : i + 2 + width], 16)))
        i += 2 + width
    return "".join(out)
