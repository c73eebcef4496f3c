"""Every field of every kind, given a fixed corpus of right and wrong values (every JSON
type, blank and over-long strings, each end of every clamp and bound, the time limits,
millisecond epochs, aliases that agree and disagree down to nested values, duplicate
and surplus ids, unknown fields), validated and compared with its golden outcome in
tests/fixtures/golden/validate.json: the skip reason in en and zh, or the params and
every note in en and zh (VAL-1..8, POL-1, TDU-1, WAI-2, AUT-1/2, TDC-1, QUO-1).

This is the test that notices a wrong *answer* (issue 20): a swapped argument, a lost
"expected ..." part, an off-by-one at a limit or a clamp note naming the wrong value all
change a golden line. After an intended change, regenerate and review the diff:
`MARKERTOOLS_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/parse/test_validate_golden.py`.

Each body is also validated against a fresh copy of its kind, so the per-kind plan is
built (not taken from the cache) in the process that runs the test."""

from __future__ import annotations

import json
import os
from typing import Any

import attrs
import pytest
from support.paths import TESTS

from markertools.parse.kinds import KINDS
from markertools.parse.kindspec import FieldSpec, KindSpec
from markertools.parse.validate import validate_body
from markertools.text.msg import Msg

GOLDEN = TESTS / "fixtures" / "golden" / "validate.json"
UPDATE = os.environ.get("MARKERTOOLS_UPDATE_GOLDEN") == "1"

# values every field meets: each JSON type, and the numbers and strings at the limits
# that are not per-field (time range, millisecond threshold, 64-bit ints)
COMMON: tuple[tuple[str, Any], ...] = (
    ("null", None),
    ("true", True),
    ("false", False),
    ("zero", 0),
    ("minus-one", -1),
    ("one", 1),
    ("fraction", 1.5),
    ("integral-float", 2.0),
    ("minus-zero-float", -0.0),
    ("ms-threshold-1", 99_999_999_999),
    ("ms-threshold", 100_000_000_000),
    ("ms-float", 1_767_312_000_500.0),
    ("epoch-max", 253_402_300_799),
    ("epoch-max+1", 253_402_300_800),
    ("epoch-min", -62_135_596_800),
    ("epoch-min-1", -62_135_596_801),
    ("ms-over-max", 253_402_300_800_000),
    ("int64-max", 2**63 - 1),
    ("int64-max+1", 2**63),
    ("int64-min-1", -(2**63) - 1),
    ("big-float", 1.5e300),
    ("integral-float-39-digits", 1e39),
    ("integral-float-40-digits", 2e39),
    ("integral-float-41-digits", 1e40),
    ("ms-epoch-max", 253_402_300_799_000),
    ("empty", ""),
    ("blank", " \t "),
    ("short", "x"),
    ("accented", "ééé"),
    ("long-37", "a" * 37),
    ("long-38", "b" * 38),
    ("newline", "a\nb"),
    ("iso-z", "2026-01-02T03:04:05Z"),
    ("iso-naive", "2026-01-02 03:04"),
    ("iso-offset", "2026-01-02T03:04:05.25+05:30"),
    ("iso-max", "9999-12-31T23:59:59Z"),
    ("iso-min", "0001-01-01T00:00:00Z"),
    ("iso-bad", "2026-13-01T00:00:00Z"),
    ("not-a-time", "tomorrow"),
    ("list-empty", []),
    ("list-one", ["a"]),
    ("list-dup", ["a", "b", "a", "c", "b"]),
    ("list-int", ["a", 1]),
    ("list-null", ["a", None]),
    ("list-blank", ["a", " "]),
    ("list-nested", [["x"]]),
    ("object-empty", {}),
    ("object", {"a": 1}),
)


def _field_values(field: FieldSpec) -> list[tuple[str, Any]]:
    """The values at this field's own limits."""
    out: list[tuple[str, Any]] = []
    if field.max_len is not None:
        for d in (-1, 0, 1):
            out.append((f"len-max{d:+d}", "y" * (field.max_len + d)))
    if field.min_len > 1:
        for d in (-1, 0):
            out.append((f"len-min{d:+d}", "y" * (field.min_len + d)))
    for choice in field.choices:
        out.append((f"choice-{choice}", choice))
        out.append((f"choice-upper-{choice}", choice.upper()))
    for edge in (field.clamp, field.bounds):
        if edge is not None:
            low, high = edge
            out += [("low-1", low - 1), ("low", low), ("high", high), ("high+1", high + 1)]
            out += [("low-float", float(low)), ("high-float+1", float(high + 1))]
    if field.max_items is not None:
        n = field.max_items
        out.append(("items-max", [f"t{i}" for i in range(n)]))
        out.append(("items-max+1", [f"t{i}" for i in range(n + 1)]))
        out.append(("items-max+5-dup", [f"t{i}" for i in range(n + 5)] + ["t0", "t1"]))
    return out


def _base(kind: KindSpec) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(kind.example)
    if kind.name == "task-poll":
        body.pop("wait_seconds", None)  # POL-1 has its own cases below
    return body


def _cases() -> list[tuple[str, KindSpec, dict[str, Any]]]:
    cases: list[tuple[str, KindSpec, dict[str, Any]]] = []
    for kind in KINDS:
        base = _base(kind)
        cases.append((f"{kind.name} example", kind, dict(json.loads(kind.example))))
        cases.append((f"{kind.name} empty", kind, {}))
        cases.append((f"{kind.name} unknown", kind, {**base, "zz": 1, "Prompt": "x"}))
        for field in kind.fields:
            without = {k: v for k, v in base.items() if k not in field.spellings}
            if field.required:
                cases.append((f"{kind.name} missing {field.name}", kind, without))
                cases.append(
                    (f"{kind.name} missing {field.name} +unknown", kind, {**without, "nme": 1})
                )
            for spelling in field.spellings:
                for label, value in (*COMMON, *_field_values(field)):
                    cases.append(
                        (f"{kind.name} {spelling}={label}", kind, {**without, spelling: value})
                    )
            if field.aliases:
                first, second = field.spellings[0], field.spellings[1]
                same = "t1" if field.kind == "ref" else ["t1", "t2"]
                other = "t2" if field.kind == "ref" else ["t1", "t3"]
                pairs = {
                    "agree": (same, same),
                    "disagree": (same, other),
                    "second-null": (same, None),
                    "first-null": (None, other),
                    "type-differs": (same, 1),
                    "nested-agree": ([["a"], {"k": [1]}], [["a"], {"k": [1]}]),
                    "nested-disagree": ([["a"], {"k": [1]}], [["a"], {"k": [2]}]),
                    "nested-keys-differ": ([{"k": 1}], [{"j": 1}]),
                    "length-differs": (["a"], ["a", "a"]),
                    "int-vs-float": (1, 1.0),
                }
                for label, (a, b) in pairs.items():
                    body = {**without, first: a, second: b}
                    cases.append((f"{kind.name} {first}+{second} {label}", kind, body))
                third = field.spellings[-1]
                if third != second:
                    body = {**without, first: same, second: same, third: other}
                    cases.append((f"{kind.name} three spellings, last disagrees", kind, body))
    poll = next(k for k in KINDS if k.name == "task-poll")
    for label, extra in {
        "wait only": {"wait_seconds": 30},
        "wait with interval": {"wait_seconds": 30, "interval_seconds": 5},
        "wait with both": {"wait_seconds": 30, "interval_seconds": 5, "timeout_seconds": 9},
        "wait clamps both": {"wait_seconds": 5000},
        "wait below": {"wait_seconds": 0, "interval_seconds": 99},
        "wait null": {"wait_seconds": None, "interval_seconds": 99},
        "wait over a clamped interval": {"wait_seconds": 30, "interval_seconds": 99},
        "wait over a clamped timeout": {"wait_seconds": 30, "timeout_seconds": 9999},
        "wait text": {"wait_seconds": "30"},
    }.items():
        cases.append((f"task-poll {label}", poll, {"task_id": "t1", **extra}))
    update = next(k for k in KINDS if k.name == "todo-update")
    for label, body in {
        "id only": {"id": "d1"},
        "id and nulls": {"id": "d1", "title": None, "status": None},
        "id and status": {"id": "d1", "status": "completed"},
        "id and empty description": {"id": "d1", "description": ""},
        "id and sort_order 0": {"id": "d1", "sort_order": 0},
    }.items():
        cases.append((f"todo-update {label}", update, body))
    return cases


def _compact(value: object) -> object:
    """JSON-able, with long strings shortened (the golden file stays readable)."""
    if isinstance(value, str):
        return value if len(value) <= 60 else f"<{len(value)} chars: {value[:20]}…{value[-5:]}>"
    if isinstance(value, tuple | list):
        return [_compact(v) for v in value]
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items()}
    if isinstance(value, float):
        return repr(value)  # 2.0 stays apart from 2
    return value


def _texts(m: Msg) -> dict[str, str]:
    return {"en": m.render("en"), "zh": m.render("zh")}


def _outcome(kind: KindSpec, body: dict[str, Any]) -> dict[str, object]:
    result = validate_body(kind, json.dumps(body))
    if isinstance(result, Msg):
        return {"skip": _texts(result)}
    params = attrs.asdict(result.params, recurse=False)
    return {
        "params": {type(result.params).__name__: _compact(params)},
        "notes": [_texts(n) for n in result.notes],
    }


def _all() -> dict[str, object]:
    out: dict[str, object] = {}
    for name, kind, body in _cases():
        assert name not in out, f"duplicate case name {name}"
        out[name] = {"body": _compact(body), **_outcome(kind, body)}
    return out


@pytest.mark.rule("VAL-1", "VAL-2", "VAL-3", "VAL-4", "VAL-5", "VAL-6", "VAL-7", "VAL-8")
def test_every_field_outcome_equals_its_golden_outcome() -> None:
    now = _all()
    if UPDATE:
        lines = [
            f"{json.dumps(k, ensure_ascii=False)}: {json.dumps(v, ensure_ascii=False)}"
            for k, v in now.items()
        ]
        GOLDEN.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")  # a line per case
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert sorted(golden) == sorted(now), "cases changed: regenerate and review"
    changed = {k: (golden[k], now[k]) for k in now if golden[k] != now[k]}
    assert not changed, f"{len(changed)} outcomes changed, first: {next(iter(changed.items()))}"


@pytest.mark.rule("VAL-1", "VAL-4", "VAL-7")
def test_a_fresh_copy_of_a_kind_validates_as_the_golden_file_says() -> None:
    # the per-kind plan is cached by identity, so in a process where the table's kinds
    # were validated before, their plans are old; a copy builds its own plan here
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    for name, kind, body in _cases():
        copy = attrs.evolve(kind)
        assert copy is not kind
        expected = {k: v for k, v in golden[name].items() if k != "body"}
        assert _outcome(copy, body) == expected, name


@pytest.mark.rule("VAL-6")
def test_an_unknown_field_changes_nothing_but_adds_its_note() -> None:
    # also sends every case through the full validator (an unknown field leaves the
    # fast path), so both paths answer each value of the corpus
    for name, kind, body in _cases():
        # (a missing required field names the unknown ones: the golden "+unknown" cases)
        if kind.ignore_all_fields or "unknown" in name or " missing " in name or not body:
            continue
        plain, extra = _outcome(kind, body), _outcome(kind, {**body, "zz": 0})
        if "skip" in plain:
            skip, extra_skip = plain["skip"], extra["skip"]
            if "is required but missing" in skip["en"]:  # type: ignore[index]
                # (a null required field is missing, and the reason names unknown fields)
                assert "; this body has unknown field(s) zz)" in extra_skip["en"], name  # type: ignore[index]
                continue
            assert extra == plain, name
            continue
        assert extra["params"] == plain["params"], name
        note = {
            "en": f"unknown field(s) ignored by {kind.name}: zz",
            "zh": f"{kind.name} 忽略了未知字段：zz",
        }
        assert extra["notes"] == [*plain["notes"], note], name  # type: ignore[misc]


@pytest.mark.rule("VAL-1")
def test_the_corpus_reaches_every_outcome_shape() -> None:
    # the golden file is not a pile of identical refusals: it holds accepted params with
    # and without notes, and skips, for every kind with fields
    now = _all()
    for kind in KINDS:
        mine = [v for k, v in now.items() if k.startswith(kind.name + " ")]
        assert any("params" in v for v in mine), kind.name  # type: ignore[operator]
        if kind.fields:
            assert any("skip" in v for v in mine), kind.name  # type: ignore[operator]
            assert any(v.get("notes") for v in mine if "params" in v), kind.name  # type: ignore[union-attr, operator]
