"""Strict JSON bodies (VAL-1): one RFC 8259 object or a precise reason, never a raise."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.strategies.parse import block

from markertools import parse_turn
from markertools.parse.jsonstrict import MAX_BODY_CHARS, JsonRefusal, loads_object


def refusal(body: str) -> str:
    result = loads_object(body)
    assert isinstance(result, JsonRefusal), result
    return result.reason.key


@pytest.mark.rule("VAL-1")
@pytest.mark.parametrize(
    ("body", "key"),
    [
        ("", "parse.json.empty"),
        ("  \n ", "parse.json.empty"),
        ("{", "parse.json.syntax"),
        ("{'a': 1}", "parse.json.syntax"),
        ('{"a": 1,}', "parse.json.syntax"),
        ('{"a": 1} {"b": 2}', "parse.json.syntax"),
        ("// c\n{}", "parse.json.syntax"),
        ("[1, 2]", "parse.json.not_object"),
        ('"x"', "parse.json.not_object"),
        ("3", "parse.json.not_object"),
        ("null", "parse.json.not_object"),
        ('{"a": NaN}', "parse.json.nonfinite"),
        ('{"a": -Infinity}', "parse.json.nonfinite"),
        ('{"a": 1e400}', "parse.json.overflow"),
        ('{"a": -1.5E+999}', "parse.json.overflow"),
        ('{"a": 1234567890123456789012345678901}', "parse.json.long_int"),
        ('{"a": -1234567890123456789012345678901}', "parse.json.long_int"),
        ('{"a": 1, "a": 1}', "parse.json.duplicate_key"),
        ('{"a": {"b": 1, "b": 2}}', "parse.json.duplicate_key"),
        ('{"a": [{"c": 1, "c": 1}]}', "parse.json.duplicate_key"),
        ('{"a": "\\ud800"}', "parse.json.surrogate"),
        ('{"\\udfff": 1}', "parse.json.surrogate"),
    ],
)
def test_refused_bodies_have_a_precise_reason(body: str, key: str) -> None:
    assert refusal(body) == key


@pytest.mark.rule("VAL-1")
def test_syntax_errors_name_line_and_column() -> None:
    result = loads_object('{\n  "a": 1\n  "b": 2\n}')
    assert isinstance(result, JsonRefusal)
    assert (result.reason.arg("line"), result.reason.arg("column")) == (3, 3)
    assert "line 3, column 3" in result.reason.render("en")


@pytest.mark.rule("VAL-1")
def test_thousands_of_digits_are_a_precise_skip_not_an_exception() -> None:
    body = '{"a": ' + "9" * 50_000 + "}"  # beyond Python's int-from-str digit limit
    result = loads_object(body)
    assert isinstance(result, JsonRefusal) and result.reason.key == "parse.json.long_int"
    assert result.reason.arg("digits") == 50_000
    assert len(result.reason.render("en")) < 300


@pytest.mark.rule("VAL-1")
def test_thirty_digits_and_huge_floats_are_accepted() -> None:
    assert loads_object('{"a": 123456789012345678901234567890}') == {
        "a": 123456789012345678901234567890
    }
    result = loads_object('{"a": 1e308, "b": 1' + "0" * 300 + ".5}")
    assert isinstance(result, dict) and result["a"] == 1e308 and result["b"] > 1e299


@pytest.mark.rule("VAL-1")
@pytest.mark.parametrize(("depth", "ok"), [(32, True), (33, False), (5000, False)])
def test_nesting_limit_is_32(depth: int, ok: bool) -> None:
    inner = "[" * (depth - 1) + "]" * (depth - 1)
    body = '{"a": ' + inner + "}"
    result = loads_object(body)
    assert (not isinstance(result, JsonRefusal)) is ok
    if not ok:
        assert isinstance(result, JsonRefusal) and result.reason.key == "parse.json.too_deep"


@pytest.mark.rule("VAL-1")
def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    body = json.dumps({"prompt": "[" * 100 + "{" * 100})
    assert loads_object(body) == {"prompt": "[" * 100 + "{" * 100}


@pytest.mark.rule("VAL-1")
def test_body_length_limit_is_inclusive() -> None:
    pad = MAX_BODY_CHARS - len('{"a": ""}')
    assert loads_object('{"a": "' + "x" * pad + '"}') == {"a": "x" * pad}
    assert refusal('{"a": "' + "x" * (pad + 1) + '"}') == "parse.json.too_long"


@pytest.mark.rule("VAL-1")
def test_skipped_block_reports_the_json_reason() -> None:
    (issue,) = parse_turn(block("task-list", '{"limit": NaN}')).issues
    assert issue.outcome == "skipped" and issue.reason.key == "parse.json.nonfinite"
    assert "NaN" in issue.reason.render("en") and "NaN" in issue.reason.render("zh")


@pytest.mark.rule("VAL-1")
@given(st.text(max_size=200))
def test_loads_object_never_raises(body: str) -> None:
    result = loads_object(body)
    assert isinstance(result, dict | JsonRefusal)


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@pytest.mark.rule("VAL-1")
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=6))
def test_every_ordinary_json_object_round_trips(obj: dict[str, object]) -> None:
    assert loads_object(json.dumps(obj)) == obj
