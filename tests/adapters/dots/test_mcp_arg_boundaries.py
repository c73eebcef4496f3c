"""Boundaries of the DOT-13 argument ranges of the dots_* MCP tools (issue 20):
dots_threads `options.limit` 1-100, dots_thread_read `options.limit` 1-10 and
dots_status `waitMs` 0-240000, each at min-1, min, min+1, max-1, max and max+1, on the
pure argument check (`check_arguments`, the one `tools/call` runs) and read from the
schemas it applies (the ones `tools/list` shows). A refusal names the field, in its
text and as `field`, word for word."""

from __future__ import annotations

from typing import Any

import pytest

from markertools_adapters.dots._mcp_args import SCHEMAS, check_arguments
from markertools_adapters.dots._ports import DotsError

# (tool, the argument's path, its range in DOT-13, arguments the tool needs besides it)
RANGES: list[tuple[str, str, tuple[int, int], dict[str, Any]]] = [
    ("dots_threads", "options.limit", (1, 100), {}),
    ("dots_thread_read", "options.limit", (1, 10), {"threadId": "thr_1"}),
    ("dots_status", "waitMs", (0, 240_000), {}),
]


def _schema_range(tool: str, path: str) -> tuple[int, int]:
    schema = SCHEMAS[tool]
    for part in path.split("."):
        schema = schema["properties"][part]
    assert schema["type"] == "integer"
    return schema["minimum"], schema["maximum"]


def _arguments(path: str, value: object, base: dict[str, Any]) -> dict[str, Any]:
    args = dict(base)
    if path.startswith("options."):
        args["options"] = {path.removeprefix("options."): value}
    else:
        args[path] = value
    return args


def _cases() -> list[Any]:
    cases = []
    for tool, path, (low, high), base in RANGES:
        for value in (low - 1, low, low + 1, high - 1, high, high + 1):
            cases.append(pytest.param(tool, path, (low, high), base, value, id=f"{tool}-{value}"))
    return cases


@pytest.mark.rule("DOT-13")
@pytest.mark.parametrize(("tool", "path", "rule_range", "base", "value"), _cases())
def test_argument_range_at_its_boundary(
    tool: str, path: str, rule_range: tuple[int, int], base: dict[str, Any], value: int
) -> None:
    low, high = _schema_range(tool, path)
    assert (low, high) == rule_range  # the rule's numbers
    args = _arguments(path, value, base)
    if low <= value <= high:
        assert check_arguments(tool, args) == args
    else:
        with pytest.raises(DotsError) as refused:
            check_arguments(tool, args)
        assert (
            refused.value.message == f"{path} must be an integer from {low} to {high}, got {value}"
        )
        assert str(refused.value) == refused.value.message
        assert refused.value.field == path


@pytest.mark.rule("DOT-13")
@pytest.mark.parametrize(("tool", "path", "rule_range", "base"), RANGES)
@pytest.mark.parametrize("value", [True, "5", [5]])
def test_a_non_integer_at_a_range_is_refused_by_name(
    tool: str, path: str, rule_range: tuple[int, int], base: dict[str, Any], value: object
) -> None:
    assert _schema_range(tool, path) == rule_range
    with pytest.raises(DotsError) as refused:
        check_arguments(tool, _arguments(path, value, base))
    assert refused.value.message == f"{path} must be an integer"
    assert refused.value.field == path
