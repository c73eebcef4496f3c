"""The parse layer's shortcuts agree with its full paths, proved on generated input:
the happy-path validator (`_validate_fast`) never answers differently from the full
validator, and strict JSON's direct use of the C scanner refuses exactly what the plain
decoder-with-hooks algorithm refuses, with the same reason."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.strategies.parse import from_body_schema

from markertools.parse.jsonstrict import (
    _DECODER,
    MAX_BODY_CHARS,
    MAX_DEPTH,
    JsonRefusal,
    _first_surrogate,
    _Refuse,
    _type_name,
    loads_object,
    too_deep,
)
from markertools.parse.kinds import KINDS, KindSpec
from markertools.parse.kindspec import FieldSpec
from markertools.parse.schema import body_schema
from markertools.parse.validate import Validated, _Skip, _validate_object, validate_body
from markertools.parse.validate_fast import fast_params
from markertools.text.msg import Msg, msg

# ---- the happy-path validator ---------------------------------------------------------


def _edge_values(field: FieldSpec) -> list[Any]:
    """Values on both sides of every condition the happy path tests for this field."""
    common: list[Any] = [None, True, 0, 5.0, "x", [], {}]
    k = field.kind
    if k == "text":
        lo, hi = max(field.min_len, 1), field.max_len or 50
        return [*common, "", " ", "\u3000", "a" * lo, "a" * (lo - 1), "b" * hi, "b" * (hi + 1)]
    if k == "ref":
        return [*common, "t-1", "@name", "", "  ", "\t"]
    if k == "ref_list":
        ids = [f"t-{i}" for i in range(10)]
        return [*common, ["t-1"], ["t-1", "t-1"], ids[:8], ids[:9], ["", "t"], [" "], [1], "t-1"]
    if k == "enum":
        return [*common, *field.choices, "bogus", ""]
    if k == "int":
        low, high = field.clamp or field.bounds or (-5, 5)
        return [*common, low - 1, low, high, high + 1, 3, float(low), 2**63, -(2**63) - 1]
    if k == "epoch":
        return [*common, 0, -1, 1.5, 0.0, 99_999_999_999, 1e11, 1e12, 1798333200]
    if k == "time":
        return [*common, "2026-10-30", "2026-10-30T09:00:00Z", 1798333200]
    if k == "bool":
        return [*common, False, 1]
    return common


@st.composite
def near_happy_bodies(draw: Any, kind: KindSpec) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for field in kind.fields:
        if draw(st.integers(0, 3)) == 0 and not field.required:
            continue
        spelling = field.name
        if field.aliases and draw(st.integers(0, 4)) == 0:
            spelling = draw(st.sampled_from(field.aliases))
        body[spelling] = draw(st.sampled_from(_edge_values(field)))
    if draw(st.integers(0, 5)) == 0:
        body[draw(st.sampled_from(["extra", "Prompt", "task-id"]))] = 1
    return body


def _full(kind: KindSpec, body: dict[str, Any]) -> Validated | Msg:
    try:
        return _validate_object(kind, body)
    except _Skip as skip:
        return skip.reason


def _check_fast_agrees(kind: KindSpec, body: dict[str, Any]) -> bool:
    fast = fast_params(kind, body)
    if fast is None:
        return False
    full = _full(kind, body)
    assert isinstance(full, Validated), (kind.name, body, full)
    assert full.notes == (), (kind.name, body, full.notes)
    assert full.params == fast
    return True


KIND_NAMES = [k.name for k in KINDS]
_BY_NAME = {k.name: k for k in KINDS}


@pytest.mark.rule("VAL-2", "VAL-3", "VAL-4", "VAL-5", "VAL-6", "VAL-7")
@settings(max_examples=300)
@given(st.sampled_from(KIND_NAMES), st.data())
def test_happy_path_equals_full_validation_near_every_boundary(
    name: str, data: st.DataObject
) -> None:
    kind = _BY_NAME[name]
    _check_fast_agrees(kind, data.draw(near_happy_bodies(kind)))


@pytest.mark.rule("VAL-2", "VAL-6")
@settings(max_examples=200)
@given(st.sampled_from(KIND_NAMES), st.data())
def test_happy_path_equals_full_validation_on_schema_bodies(name: str, data: st.DataObject) -> None:
    kind = _BY_NAME[name]
    _check_fast_agrees(kind, data.draw(from_body_schema(body_schema(name))))


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_typical_bodies_take_the_happy_path(kind: KindSpec) -> None:
    """Each kind's guide example takes the shortcut unless it holds a time string or the
    kind ignores every field (those always take the full path)."""
    body = json.loads(kind.example)
    expect = not kind.ignore_all_fields and not any(f.kind == "time" for f in kind.fields)
    assert _check_fast_agrees(kind, body) is expect
    assert validate_body(kind, kind.example) == _full(kind, body)


# ---- strict JSON: the direct scanner against the plain algorithm ------------------------


def _reference_loads(body: str) -> dict[str, Any] | JsonRefusal:
    """The straightforward algorithm: checks in order, then `JSONDecoder.decode` with the
    refusing hooks."""
    if len(body) > MAX_BODY_CHARS:
        return JsonRefusal(msg("parse.json.too_long", length=len(body), max=MAX_BODY_CHARS))
    if not body.strip(" \t\r\n"):
        return JsonRefusal(msg("parse.json.empty"))
    if too_deep(body):
        return JsonRefusal(msg("parse.json.too_deep", max=MAX_DEPTH))
    try:
        value = _DECODER.decode(body)
    except _Refuse as refused:
        return JsonRefusal(refused.reason)
    except json.JSONDecodeError as exc:
        return JsonRefusal(
            msg("parse.json.syntax", detail=exc.msg, line=exc.lineno, column=exc.colno)
        )
    except (ValueError, RecursionError, MemoryError) as exc:
        return JsonRefusal(msg("parse.json.syntax", detail=type(exc).__name__, line=1, column=1))
    if not isinstance(value, dict):
        return JsonRefusal(msg("parse.json.not_object", got=_type_name(value)))
    bad = _first_surrogate(value)
    if bad is not None:
        return JsonRefusal(msg("parse.json.surrogate", code=f"{ord(bad):04X}"))
    return value


JSON_PIECES = [
    "{", "}", "[", "]", ",", ":", '"a"', '"b"', '"a"', "1", "-0", "1e400", "-1E+999", "1.5",
    "1" * 31, "9" * 30, "NaN", "-Infinity", "Infinity", "true", "null", '"\\ud800"',
    '"\\u003a"', '"x:y"', " ", "\n", "\t", "\r", "\x0c", "//", "'", "\ud800", "{}", "[]",
]  # fmt: skip


@pytest.mark.rule("VAL-1")
@settings(max_examples=400)
@given(st.lists(st.sampled_from(JSON_PIECES), max_size=16).map("".join))
@example('{"a": 1} ')
@example('{"a": 1} x')
@example(' \n{"a": 1, "a": 2} {')
@example("  ")
@example('{"a": 1}\x0c')
def test_strict_json_equals_the_plain_algorithm(body: str) -> None:
    assert loads_object(body) == _reference_loads(body)


@pytest.mark.rule("VAL-1")
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
        ),
        max_leaves=12,
    ),
    st.sampled_from(["", " ", "\n", "\t\r\n "]),
)
def test_strict_json_equals_the_plain_algorithm_on_json_texts(value: Any, pad: str) -> None:
    body = pad + json.dumps({"v": value}) + pad
    assert loads_object(body) == _reference_loads(body)
