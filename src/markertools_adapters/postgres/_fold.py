# Owns: case-insensitive substring search (TLS-1, TDL-1) on PostgreSQL with EXACTLY the
# reference model's semantics: `q.lower() in text.lower()` (Python's full Unicode
# lowercasing), whatever the server's locale or ICU version.
#
# Must never: trust the server's lower() beyond ASCII (it depends on the database's
# LC_CTYPE / collation and Unicode tables, and differs from Python's str.lower).
#
# Invariants:
#   Rule 1: for a needle whose lowercase is pure ASCII, `text.lower()` and the SQL
#           expression `fold_sql(col)` contain it at the same places: on a COLLATE "C"
#           value lower() folds ASCII letters only; every non-ASCII character lowercases
#           to non-ASCII text in Python except U+0130 ('i' + U+0307) and U+212A ('k'),
#           which the expression rewrites first. (Checked against every code point by
#           tests/adapters/postgres/test_postgres_store.py.)
#           Needles holding U+0000..U+0002 also go to Python (_text Rule 3).
#   Rule 2: any other needle is matched in Python over the rows the other filters
#           select (`python_match`), so results never depend on the server's locale.
from __future__ import annotations

from typing import Final

from markertools_adapters.postgres._text import has_special

# U+0130 LATIN CAPITAL LETTER I WITH DOT ABOVE -> "i" U+0307; U+212A KELVIN SIGN -> "k"
_REWRITES: Final[tuple[tuple[int, str], ...]] = ((0x130, "'i' || chr(775)"), (0x212A, "'k'"))


def fold_sql(column: str) -> str:
    """SQL text of `column` lowercased like Python's str.lower, for ASCII needles only."""
    expr = column
    for code, replacement in _REWRITES:
        expr = f"replace({expr}, chr({code}), {replacement})"
    return f'lower(({expr}) COLLATE "C")'


def ascii_needle(q: str) -> str | None:
    """`q.lower()` when SQL can search it exactly: pure ASCII and none of the characters
    stored text escapes are made of (_text Rule 3); else None (match in Python)."""
    needle = q.lower()
    return needle if needle.isascii() and not has_special(needle) else None


def python_match(q: str, *texts: str | None) -> bool:
    """The reference semantics: the lowercased needle occurs in one of the texts."""
    needle = q.lower()
    return any(text is not None and needle in text.lower() for text in texts)
