"""One declaration per dots_* tool (issue 25): each tool's argument model gives both the
input schema `tools/list` shows and the check `tools/call` runs. The schemas are the
ones the tools had before (the hand-written schemas, kept as a fixture), with only
`default` values and bounds added (issue 26: `maxLength` on every string, `maximum` on
every integer, `maxProperties` on the free-form proposal, a `pattern` on cursors), so
every client sees the same contract, or a stricter one."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.paths import REPO

from markertools_adapters.dots._mcp_args import MODELS, SCHEMAS, check_arguments, parse_arguments
from markertools_adapters.dots._ports import DotsError

BEFORE = json.loads((REPO / "tests" / "fixtures" / "dots" / "tool_schemas_before_issue25.json").read_text())


BOUNDS = frozenset({"maxLength", "maximum", "maxProperties", "pattern"})


def _without_additions(schema: Any, before: Any) -> Any:
    """`schema` without its defaults and without the bounds `before` did not have."""
    if isinstance(schema, dict):
        was = before if isinstance(before, dict) else {}
        return {
            k: _without_additions(v, was.get(k))
            for k, v in schema.items()
            if k != "default" and not (k in BOUNDS and k not in was)
        }
    if isinstance(schema, list):
        was = before if isinstance(before, list) and len(before) == len(schema) else [None] * len(schema)
        return [_without_additions(v, b) for v, b in zip(schema, was, strict=True)]
    return schema


def _leaves(schema: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found = [(path, schema)]
    for name, sub in schema.get("properties", {}).items():
        found += _leaves(sub, f"{path}.{name}" if path else name)
    return found


@pytest.mark.rule("DOT-13")
@pytest.mark.parametrize("tool", sorted(BEFORE))
def test_the_declared_schema_is_the_documented_one(tool: str) -> None:
    assert _without_additions(SCHEMAS[tool], BEFORE[tool]) == BEFORE[tool]
    assert set(MODELS) == set(BEFORE)


@pytest.mark.rule("DOT-13")
@pytest.mark.parametrize("tool", sorted(BEFORE))
def test_every_argument_is_bounded_in_its_declaration(tool: str) -> None:
    unbounded = []
    for path, schema in _leaves(SCHEMAS[tool]):
        kind = schema.get("type")
        if kind == "string" and "enum" not in schema and "maxLength" not in schema:
            unbounded.append(path)
        if kind == "integer" and "maximum" not in schema:
            unbounded.append(path)
        if kind == "object" and "properties" not in schema and "maxProperties" not in schema:
            unbounded.append(path)
    assert unbounded == []


@pytest.mark.rule("DOT-13", "DOT-14")
@pytest.mark.parametrize("tool", sorted(BEFORE))
def test_the_check_refuses_what_the_schema_does_not_declare(tool: str) -> None:
    with pytest.raises(DotsError) as refused:
        check_arguments(tool, {"confirmed": True})
    assert refused.value.field in ("confirmed", *BEFORE[tool].get("required", []))


@pytest.mark.rule("DOT-13")
def test_a_call_gets_its_typed_arguments_and_null_is_leaving_out() -> None:
    args = parse_arguments(
        "dots_threads", {"options": {"limit": 7, "cwd": None, "archived": False}}
    )
    assert args.options is not None  # type: ignore[attr-defined]
    assert (args.options.limit, args.options.cwd, args.options.archived) == (7, None, False)  # type: ignore[attr-defined]
    tune = parse_arguments(
        "dots_tune", {"runId": "r", "worker": "w", "changes": {"sandbox": "read-only", "model": None}}
    )
    assert tune.changes.model_dump(exclude_none=True) == {"sandbox": "read-only"}  # type: ignore[attr-defined]


@pytest.mark.rule("DOT-13")
def test_the_first_problem_is_named_in_the_order_the_caller_wrote_it() -> None:
    with pytest.raises(DotsError) as refused:
        check_arguments("dots_dispatch", {"worker": "", "instruction": "", "runId": "r", "decisionId": "d"})
    assert (refused.value.message, refused.value.field) == ("worker must be a non-empty string", "worker")
    with pytest.raises(DotsError) as missing:
        check_arguments("dots_dispatch", {"worker": "", "runId": "r"})
    assert missing.value.message == "instruction is required"  # a missing argument first
