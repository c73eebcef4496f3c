"""Every refusal of the strict JSON reader (VAL-1) as the agent reads it: the rendered
reason, word for word, with the literal it names cut the documented way (issue 20: the
mutation run showed reasons whose arguments no test read)."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from markertools.parse.jsonstrict import (
    MAX_BODY_CHARS,
    MAX_DEPTH,
    JsonRefusal,
    loads_object,
    too_deep,
)


def reason(body: str, locale: str = "en") -> str:
    result = loads_object(body)
    assert isinstance(result, JsonRefusal), result
    return result.reason.render(locale)


@pytest.mark.rule("VAL-1")
@pytest.mark.parametrize(
    ("body", "en", "zh"),
    [
        ("[1, 2]", "the body is a list; expected one JSON object {...}", "块体是一个列表；应为一个 JSON 对象 {...}"),
        ('"x"', "the body is a string; expected one JSON object {...}", "块体是一个字符串；应为一个 JSON 对象 {...}"),
        ("true", "the body is true/false; expected one JSON object {...}", "块体是布尔值 true/false；应为一个 JSON 对象 {...}"),
        ("false", "the body is true/false; expected one JSON object {...}", "块体是布尔值 true/false；应为一个 JSON 对象 {...}"),
        ("null", "the body is null; expected one JSON object {...}", "块体是null；应为一个 JSON 对象 {...}"),
        ("12", "the body is a number; expected one JSON object {...}", "块体是一个数字；应为一个 JSON 对象 {...}"),
        ("-1.5", "the body is a number; expected one JSON object {...}", "块体是一个数字；应为一个 JSON 对象 {...}"),
    ],
)  # fmt: skip
def test_a_body_that_is_not_an_object_names_its_type(body: str, en: str, zh: str) -> None:
    assert reason(body) == en
    assert reason(body, "zh") == zh


@pytest.mark.rule("VAL-1")
@pytest.mark.parametrize(
    ("body", "literal"),
    [
        ('{"a": NaN}', "NaN"),
        ('{"a": Infinity}', "Infinity"),
        ('{"a": [1, -Infinity]}', "-Infinity"),
    ],
)
def test_non_finite_literals_are_named(body: str, literal: str) -> None:
    assert reason(body) == (
        f"the body uses {literal}, which is not a JSON number; expected a finite number"
    )


@pytest.mark.rule("VAL-1")
@pytest.mark.parametrize(("literal"), ["1e400", "-1e400", "1.5E+999"])
def test_overflowing_numbers_are_named(literal: str) -> None:
    assert reason('{"n": ' + literal + "}") == (
        f"the number {literal} is too large (it overflows to infinity); expected a finite number"
    )


@pytest.mark.rule("VAL-1")
def test_a_long_overflowing_literal_is_shown_cut_in_the_middle() -> None:
    literal = "1" + "0" * 29 + "." + "5" * 20 + "e999"  # 55 characters
    assert reason('{"n": ' + literal + "}") == (
        f"the number {literal[:20]}…{literal[-10:]} is too large (it overflows to infinity); "
        "expected a finite number"
    )


@pytest.mark.rule("VAL-1")
@pytest.mark.parametrize("length", [39, 40, 41, 60])
def test_duplicate_key_is_shown_whole_up_to_40_characters(length: int) -> None:
    key = "".join(chr(ord("a") + i % 26) for i in range(length))
    body = '{"' + key + '": 1, "' + key + '": 2}'
    shown = key if length <= 40 else key[:20] + "…" + key[-10:]
    assert (
        reason(body) == f"the key '{shown}' appears twice in one object; expected each field once"
    )


@pytest.mark.rule("VAL-1")
def test_the_first_duplicate_in_document_order_is_named() -> None:
    body = '{"a": 1, "b": 2, "b": 3, "a": 4}'
    assert reason(body) == "the key 'b' appears twice in one object; expected each field once"
    nested = '{"x": {"k": 1, "k": 2}}'
    assert reason(nested) == "the key 'k' appears twice in one object; expected each field once"


@pytest.mark.rule("VAL-1")
def test_a_key_with_control_characters_is_shown_escaped() -> None:
    body = '{"a\\nb": 1, "a\\nb": 2}'
    assert reason(body) == "the key 'a\\nb' appears twice in one object; expected each field once"


@pytest.mark.rule("VAL-1")
@pytest.mark.parametrize("sign", ["", "-"])
def test_a_long_integer_names_its_digits_and_a_cut_literal(sign: str) -> None:
    literal = sign + "9" * 45
    assert reason('{"n": ' + literal + "}") == (
        f"the integer {literal[:20]}…{literal[-10:]} has 45 digits; at most 30 digits are accepted"
    )
    literal = sign + "1" * 31
    assert reason('{"n": ' + literal + "}") == (
        f"the integer {literal} has 31 digits; at most 30 digits are accepted"
    )


@pytest.mark.rule("VAL-1")
def test_length_depth_empty_and_syntax_reasons() -> None:
    long_body = '{"a": "' + "x" * (MAX_BODY_CHARS - 8) + '"}'
    assert len(long_body) == MAX_BODY_CHARS + 1
    assert reason(long_body) == (
        f"the body has {MAX_BODY_CHARS + 1} characters; at most {MAX_BODY_CHARS} are accepted"
    )
    deep = "{" + '"a": [' * MAX_DEPTH + "]" * MAX_DEPTH + "}"
    assert reason(deep) == (
        f"the body nests arrays/objects deeper than {MAX_DEPTH} levels; expected at most {MAX_DEPTH}"
    )
    assert reason(" \n\t ") == "the body is empty; expected one JSON object such as {}"
    assert reason("") == "the body is empty; expected one JSON object such as {}"
    assert reason('{"a": 1,\n "b": }') == (
        "the body is not valid JSON: Expecting value at line 2, column 7 of the body; "
        "expected one JSON object"
    )
    assert reason('{"a": "x\ny"}') == (
        "the body is not valid JSON: Invalid control character at line 1, column 9 of the "
        "body; expected one JSON object"
    )
    assert reason('{"a": 1} {"b": 2}') == (
        "the body is not valid JSON: Extra data at line 1, column 10 of the body; "
        "expected one JSON object"
    )
    assert reason('{"a": 1}\n x') == (
        "the body is not valid JSON: Extra data at line 2, column 2 of the body; "
        "expected one JSON object"
    )


@pytest.mark.rule("VAL-1")
def test_trailing_and_leading_json_whitespace_is_accepted() -> None:
    assert loads_object(' \r\n\t{"a": 1} \r\n\t') == {"a": 1}
    assert loads_object('{"a": 1}\n\n') == {"a": 1}


@pytest.mark.rule("VAL-1")
@pytest.mark.parametrize(
    ("body", "code"),
    [
        ('{"a": "\\ud800"}', "D800"),
        ('{"a": ["ok", {"b": "\\udfff"}]}', "DFFF"),
        ('{"\\udc00": 1}', "DC00"),
        ('{"a": {"\\ud83d": 1}}', "D83D"),
    ],
)
def test_unpaired_surrogates_are_named_at_any_depth(body: str, code: str) -> None:
    assert reason(body) == (
        f"the body contains an unpaired surrogate (U+{code}), which is not valid Unicode; "
        "expected valid text"
    )


@pytest.mark.rule("VAL-1")
def test_a_paired_surrogate_escape_is_valid_text() -> None:
    assert loads_object('{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}


@pytest.mark.rule("VAL-1")
@pytest.mark.parametrize(
    ("text", "deep"),
    [
        ("[" * 33, True),  # unbalanced and deep
        ("[" * 32, False),
        ("[" * 33 + "]" * 33, True),
        ("[" * 32 + "]" * 32, False),
        ("[]" * 40, False),  # many brackets, depth 1
        ('["' + "[" * 40 + '"]', False),  # brackets inside a string
        ('["\\"' + "[" * 40 + '"]', False),  # after an escaped quote, still inside
        ("]" * 40 + "[" * 32, False),  # closers never go below zero
        ("]" * 40 + "[" * 33, True),
        ('"' + "[" * 40, False),  # an unclosed string runs to the end
        ("[" * 20 + "{" * 13 + "}" * 13 + "]" * 20, True),  # both bracket kinds count
    ],
)
def test_too_deep_counts_nesting_outside_strings(text: str, deep: bool) -> None:
    assert too_deep(text) is deep


@pytest.mark.rule("VAL-1")
def test_dense_and_sparse_bodies_decode_alike() -> None:
    # the fast decoder (dense: many commas, no long digit runs) and the hooked one agree
    dense = "{" + ",".join(f'"k{i}": {i}' for i in range(200)) + "}"
    sparse = '{"text": "' + "y" * 5000 + '", "n": 12, "f": 1.5, "e": 2e10}'
    assert loads_object(dense) == {f"k{i}": i for i in range(200)}
    assert loads_object(sparse) == {"text": "y" * 5000, "n": 12, "f": 1.5, "e": 2e10}
    # dense, with a long digit run: the hooks run and refuse
    dense_long = "{" + ",".join(f'"k{i}": {i}' for i in range(200)) + ', "z": ' + "7" * 31 + "}"
    assert reason(dense_long) == (
        f"the integer {'7' * 31} has 31 digits; at most 30 digits are accepted"
    )
    # dense, with a 3-digit exponent: the hooks run and refuse
    dense_exp = "{" + ",".join(f'"k{i}": {i}' for i in range(200)) + ', "z": 1e999}'
    assert reason(dense_exp) == (
        "the number 1e999 is too large (it overflows to infinity); expected a finite number"
    )
    # dense, a 3-digit exponent that stays finite is accepted
    assert (
        loads_object("{" + ",".join(f'"k{i}": {i}' for i in range(200)) + ', "z": 1e100}')["z"]
        == 1e100
    )


@pytest.mark.rule("VAL-1")
@pytest.mark.parametrize(
    ("text", "deep"),
    [
        # unbalanced, so the C-speed reduction leaves brackets and the exact scan decides
        # (each has more than 32 openers: fewer are never too deep, and are not scanned)
        ("{" * 33, True),
        ("{}" + "{" * 32 + "]", False),
        ("[]" + "[" * 32 + "}", False),  # exactly the limit
        ("[" * 33 + "}", True),
        ("[" * 20 + "]" * 20 + "[" * 20 + "}", False),  # closers bring the depth down
        ("[" * 20 + "]" * 10 + "[" * 23 + "}", True),  # 10 still open, then 23 more
        ("[" * 20 + "]" * 10 + "[" * 22 + "}", False),
        ("]" * 40 + "[]" + "[" * 32 + "}", False),  # closers never go below zero
        ("]" * 40 + "[" * 33 + "}", True),
        ('"' + "[" * 40 + '"', False),  # every bracket inside a string
        # a stray closer or an unclosed string: the exact scan decides
        ("[" * 32 + '"' + "[" * 5, False),
        ("[" * 33 + '"' + "[" * 5, True),
        ("]" + "[" * 20 + "]" * 10 + "[" * 23, True),
        ("]" + "[" * 20 + "]" * 10 + "[" * 22, False),
    ],
)
def test_the_exact_depth_scan_counts_openers_and_closers(text: str, deep: bool) -> None:
    assert too_deep(text) is deep


@pytest.mark.rule("VAL-1")
def test_a_limit_of_zero_counts_only_brackets_outside_strings() -> None:
    assert not too_deep('"[["', 0)
    assert too_deep('"[[" [', 0)
    assert not too_deep('"[[" ]', 0)


@pytest.mark.rule("VAL-1")
def test_bodies_with_few_openers_are_never_too_deep() -> None:
    assert not too_deep("]" * 100 + "[" * 32)
    assert not too_deep("[" * 32)


@pytest.mark.rule("VAL-1")
def test_a_surrogate_deep_in_nested_objects_is_found() -> None:
    for depth in (1, 17, 31):
        body = '{"a": ' * depth + '["\\ud800"]' + "}" * depth
        assert reason(body) == (
            "the body contains an unpaired surrogate (U+D800), which is not valid Unicode; "
            "expected valid text"
        ), depth


@pytest.mark.rule("VAL-1")
def test_a_surrogate_deep_in_nested_lists_is_found() -> None:
    inner = '"\\ud800"'
    for depth in (1, 16, 17, 30):
        body = '{"a": ' + "[" * depth + inner + "]" * depth + "}"
        assert reason(body) == (
            "the body contains an unpaired surrogate (U+D800), which is not valid Unicode; "
            "expected valid text"
        ), depth


@pytest.mark.rule("VAL-1")
def test_a_raw_unpaired_surrogate_in_the_text_is_refused_too() -> None:
    # not an escape: the character itself (a Python str can hold it, UTF-8 cannot)
    assert reason('{"a": "é\ud800"}') == (
        "the body contains an unpaired surrogate (U+D800), which is not valid Unicode; "
        "expected valid text"
    )


@pytest.mark.rule("VAL-1")
@pytest.mark.parametrize(
    ("body", "en", "zh"),
    [
        (
            "[" * 33 + "\ud800" + "]" * 33,
            "the body nests arrays/objects deeper than 32 levels; expected at most 32",
            "块体中数组/对象嵌套超过 32 层；最多允许 32 层",
        ),
        (
            "[" * 32 + "\ud800" + "]" * 32,
            "the body is not valid JSON: Expecting value at line 1, column 33 of the body; "
            "expected one JSON object",
            "块体不是合法 JSON：块体第 1 行第 33 列，Expecting value；应为一个 JSON 对象",
        ),
    ],
    ids=["too-deep", "at-the-limit"],
)
def test_a_raw_surrogate_between_brackets_is_counted_past(body: str, en: str, zh: str) -> None:
    """The depth check's C-speed pass encodes the text with its brackets; a lone
    surrogate outside any string (where it is no JSON at all) must not stop it."""
    refused = loads_object(body)
    assert isinstance(refused, JsonRefusal)
    assert (refused.reason.render("en"), refused.reason.render("zh")) == (en, zh)


@pytest.mark.rule("VAL-1")
@pytest.mark.parametrize("body", ["X", "x", "XX \n", "{X}"])
def test_text_that_is_not_blank_is_a_syntax_error_not_an_empty_body(body: str) -> None:
    assert reason(body).startswith("the body is not valid JSON: ")


def _reference_depth_exceeds(text: str, limit: int) -> bool:
    """The exact scan, written out: a string runs to its closing quote or to the end of
    the text (one that ends in a lone backslash is no string: its quote is skipped), and
    stray closers clamp the depth at zero."""
    depth, i, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                if text[j] == "\\":
                    if j + 1 == n:
                        break  # a lone backslash at the end: no string here
                    j += 1
                j += 1
            if j < n and text[j] == "\\":
                i += 1
                continue
            i = j + 1
            continue
        if c in "[{":
            depth += 1
            if depth > limit:
                return True
        elif c in "]}":
            depth = max(depth - 1, 0)
        i += 1
    return False


@pytest.mark.rule("VAL-1")
@example('"[[[[[[[\\', 3)
@given(
    st.text(alphabet='[]{}"\\a é\ud800', max_size=120),
    st.integers(min_value=0, max_value=6),
)
def test_too_deep_agrees_with_the_exact_scan(text: str, limit: int) -> None:
    assert too_deep(text, limit) is _reference_depth_exceeds(text, limit)


@pytest.mark.rule("VAL-1")
@given(st.integers(min_value=0, max_value=40), st.integers(min_value=1, max_value=5))
def test_too_deep_on_balanced_nests(depth: int, copies: int) -> None:
    text = ("[" * depth + '"]["' + "]" * depth) * copies
    assert too_deep(text) is (depth > MAX_DEPTH)
