"""The PostgreSQL adapter's text boundary, as pure functions (no server needed): the
lossless U+0000 escape (_text) and the ASCII case-folding rule the SQL search relies on
(_fold). The server side of both is checked in test_postgres_store.py."""

from __future__ import annotations

import sys

from hypothesis import given
from hypothesis import strategies as st

from markertools_adapters.postgres._fold import ascii_needle, python_match
from markertools_adapters.postgres._text import dec, enc, has_special

# Text that stresses the escape: the three special characters often, anything else too.
SPECIAL_HEAVY = st.text(
    alphabet=st.sampled_from(["\x00", "\x01", "\x02", "\x03", "a", "Z", "é", "\uffff"])
    | st.characters(),
    max_size=30,
)


@given(SPECIAL_HEAVY)
def test_escape_round_trips_and_stores_no_nul(text: str) -> None:
    stored = enc(text)
    assert "\x00" not in stored
    assert dec(stored) == text


@given(SPECIAL_HEAVY, SPECIAL_HEAVY)
def test_escape_keeps_code_point_order_and_equality(a: str, b: str) -> None:
    # UTF-8 byte order (COLLATE "C") is code point order, so str comparison of the stored
    # values is what ORDER BY on the server does.
    assert (enc(a) < enc(b)) == (a < b)
    assert (enc(a) == enc(b)) == (a == b)


@given(SPECIAL_HEAVY, SPECIAL_HEAVY)
def test_needles_without_special_characters_match_the_stored_text_exactly(
    text: str, needle: str
) -> None:
    if has_special(needle):
        return
    assert (needle in enc(text)) == (needle in text)


@given(st.text(alphabet=st.characters(blacklist_characters="\x00\x01"), max_size=40))
def test_ordinary_text_is_stored_unchanged(text: str) -> None:
    assert enc(text) == text
    assert dec(text) == text


def test_foreign_text_with_a_lone_escape_character_decodes_leniently() -> None:
    assert dec("a\x01") == "a\x01"
    assert dec("\x01x") == "\x01x"
    assert dec("\x01\x01\x01\x02\x02") == "\x00\x01\x02"


def test_only_two_non_ascii_characters_lowercase_to_something_with_ascii() -> None:
    """_fold Rule 1's premise, over every code point of this Python's Unicode tables."""
    leaking = [
        cp
        for cp in range(0x80, sys.maxunicode + 1)
        if not 0xD800 <= cp <= 0xDFFF and any(ch.isascii() for ch in chr(cp).lower())
    ]
    assert leaking == [0x130, 0x212A]


@given(st.text(max_size=12))
def test_ascii_needles_exclude_special_characters(q: str) -> None:
    needle = ascii_needle(q)
    if needle is not None:
        assert needle == q.lower()
        assert needle.isascii() and not has_special(needle)


@given(st.text(max_size=20), st.text(max_size=4))
def test_python_match_is_the_reference_semantics(text: str, q: str) -> None:
    assert python_match(q, text) == (q.lower() in text.lower())
    assert python_match(q, None, text) == (q.lower() in text.lower())
