"""Issue 26 item 5 on the arguments of the dots_* tools: every string argument is bounded
in its declaration (ids 200, instructions and conclusions 1,048,576 - Codex's own limit
on a turn's input -, paths 4096, search terms 1024, cursors 128 / 12 digits), every
integer too (2**53 - 1), the free-form proposal by its entries, and the arguments of a
call as a whole (text, values, depth). At its bound a value passes, one past it is
refused by name; a refusal shows at most 60 characters of a bad value and its length,
wherever the message was written (the argument check, the supervisor's "run not found",
the run resource). A 10 MB runId is answered at once with a short error (the time is
printed, not asserted)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from support.codex import OfflineCodex
from test_mcp_support import LEGACY, MODERN, Answers, call, client, make_dots, refused

from markertools_adapters.dots._mcp_args import (
    MAX_ARGUMENT_CHARS,
    MAX_DEPTH,
    MAX_INT,
    MAX_TEXT_CHARS,
    MAX_VALUES,
    check_arguments,
    shown,
)
from markertools_adapters.dots._ports import DotsError

RUN = {"runId": "r"}
DISPATCH = {"runId": "r", "worker": "w", "instruction": "i", "decisionId": "d"}
FINISH = {"runId": "r", "conclusion": "c"}
TUNE = {"runId": "r", "worker": "w", "changes": {}}

# (tool, the argument's path, its bound, the other arguments it needs, one character)
STRINGS: list[tuple[str, str, int, dict[str, Any], str]] = [
    ("dots_threads", "options.cursor", 128, {}, "c"),
    ("dots_threads", "options.cwd", 4096, {}, "/"),
    ("dots_threads", "options.searchTerm", 1024, {}, "s"),
    ("dots_thread_read", "threadId", 200, {}, "t"),
    ("dots_thread_read", "options.cursor", 12, {"threadId": "t"}, "7"),
    ("dots_status", "runId", 200, {}, "r"),
    ("dots_dispatch", "runId", 200, DISPATCH, "r"),
    ("dots_dispatch", "worker", 200, DISPATCH, "w"),
    ("dots_dispatch", "decisionId", 200, DISPATCH, "d"),
    ("dots_dispatch", "instruction", MAX_TEXT_CHARS, DISPATCH, "i"),
    ("dots_tune", "changes.model", 200, TUNE, "m"),
    ("dots_tune", "changes.effort", 200, TUNE, "e"),
    ("dots_control", "runId", 200, {"action": "pause"}, "r"),
    ("dots_finish", "worker", 200, FINISH, "w"),
    ("dots_finish", "decisionId", 200, FINISH, "d"),
    ("dots_finish", "conclusion", MAX_TEXT_CHARS, FINISH, "c"),
]


def _with(base: dict[str, Any], path: str, value: object) -> dict[str, Any]:
    args = json.loads(json.dumps(base))
    head, _, leaf = path.rpartition(".")
    target = args.setdefault(head, {}) if head else args
    target[leaf] = value
    return args


def _head(value: str) -> str:
    return "'" + value[:60] + f"…' ({len(value)} characters)"


@pytest.mark.rule("DOT-13")
@pytest.mark.parametrize(("tool", "path", "bound", "base", "char"), STRINGS)
def test_a_string_argument_at_its_bound_passes_and_one_more_is_refused(
    tool: str, path: str, bound: int, base: dict[str, Any], char: str
) -> None:
    at = _with(base, path, char * bound)
    assert check_arguments(tool, at) == at
    over = char * (bound + 1)
    with pytest.raises(DotsError) as refused_:
        check_arguments(tool, _with(base, path, over))
    shown_value = repr(over) if len(over) <= 60 else _head(over)
    assert refused_.value.message == f"{path} must be at most {bound} characters, got {shown_value}"
    assert refused_.value.field == path


@pytest.mark.rule("DOT-13")
@pytest.mark.parametrize(
    ("tool", "path", "base"),
    [("dots_tune", "changes.timeoutMs", TUNE), ("dots_control", "budget", {"runId": "r", "action": "budget"})],
)
def test_an_integer_argument_is_bounded_too(tool: str, path: str, base: dict[str, Any]) -> None:
    assert check_arguments(tool, _with(base, path, MAX_INT))
    for value, said in ((MAX_INT + 1, str(MAX_INT + 1)), (10**5000, "an integer of more than 4999 digits")):
        with pytest.raises(DotsError) as refused_:
            check_arguments(tool, _with(base, path, value))
        assert refused_.value.message == f"{path} must be an integer from 1 to {MAX_INT}, got {said}"
    with pytest.raises(DotsError) as low:
        check_arguments(tool, _with(base, path, 0))
    assert low.value.message == f"{path} must be an integer at least 1, got 0"


@pytest.mark.rule("DOT-13")
@pytest.mark.parametrize(
    ("cursor", "tool", "base"),
    [
        ("two words", "dots_threads", {}),
        ("tab\there", "dots_threads", {}),
        ("-1", "dots_thread_read", {"threadId": "t"}),
        ("1e3", "dots_thread_read", {"threadId": "t"}),
    ],
)
def test_a_cursor_is_checked_by_its_shape(cursor: str, tool: str, base: dict[str, Any]) -> None:
    with pytest.raises(DotsError) as refused_:
        check_arguments(tool, _with(base, "options.cursor", cursor))
    assert refused_.value.message == (
        f"options.cursor must be the nextCursor of an earlier call, got {cursor!r}"
    )
    assert refused_.value.field == "options.cursor"


TOO_LARGE = (
    f"proposal is too large: the arguments of a call are at most {MAX_ARGUMENT_CHARS} "
    f"characters of text, {MAX_VALUES} values and {MAX_DEPTH} levels deep"
)


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.rule("DOT-13")
@pytest.mark.parametrize(
    "proposal",
    [
        pytest.param({"workers": [0] * MAX_VALUES}, id="values"),
        pytest.param({"goal": "g" * MAX_ARGUMENT_CHARS}, id="text"),
        pytest.param({"workers": _deep(MAX_DEPTH)}, id="depth"),
    ],
)
def test_the_arguments_of_a_call_are_bounded_as_a_whole(proposal: dict[str, Any]) -> None:
    with pytest.raises(DotsError) as refused_:
        check_arguments("dots_start", {"proposal": proposal})
    assert (refused_.value.message, refused_.value.field) == (TOO_LARGE, "proposal")


@pytest.mark.rule("DOT-13")
def test_the_whole_bound_leaves_room_for_what_each_argument_may_hold() -> None:
    at = {"workers": [0] * (MAX_VALUES - 3), "goal": "g" * (MAX_ARGUMENT_CHARS - 20)}
    assert check_arguments("dots_start", {"proposal": at})
    assert check_arguments("dots_start", {"proposal": {"workers": _deep(MAX_DEPTH - 2)}})
    with pytest.raises(DotsError) as refused_:  # refused by its own bound, not "too large"
        check_arguments("dots_status", {"runId": "r" * 10_000_000})
    assert refused_.value.message == (
        f"runId must be at most 200 characters, got {_head('r' * 10_000_000)}"
    )
    many = {str(n): n for n in range(65)}
    with pytest.raises(DotsError) as keys:
        check_arguments("dots_start", {"proposal": many})
    assert keys.value.message == "proposal must have at most 64 entries, got 65"


@pytest.mark.rule("DOT-13")
def test_a_long_unknown_argument_is_named_by_its_head() -> None:
    name = "k" * 1000
    with pytest.raises(DotsError) as refused_:
        check_arguments("dots_probe", {name: 1})
    assert refused_.value.message == f"unknown argument {_head(name)}"
    assert refused_.value.field == _head(name)


@pytest.mark.rule("DOT-13")
def test_a_bad_value_is_shown_by_its_head_and_its_length() -> None:
    assert shown("abc") == "'abc'"
    assert shown("a\nb") == "'a\\nb'"
    assert shown("x" * 60) == repr("x" * 60)
    assert shown("x" * 61) == "'" + "x" * 60 + "…' (61 characters)"
    assert shown("x" * 61, "zh") == "'" + "x" * 60 + "…'（61 个字符）"
    assert shown(10**59) == str(10**59)
    assert shown(10**5000) == "an integer of more than 4999 digits"
    assert shown(-(10**5000)) == "an integer of more than 4999 digits"
    assert shown([1, 2, 3, 4, 5, 6]) == "[1, 2, 3, 4, ...]"
    assert shown({"k": "v" * 100}) == "{'k': " + _head("v" * 100) + "}"
    assert shown(None) == "None" and shown(True) == "True"


# ---- through the MCP server ----------------------------------------------------------


@pytest.mark.rule("DOT-13", "DOT-15")
@pytest.mark.parametrize("mode", [LEGACY, MODERN])
def test_over_mcp_a_bad_value_is_echoed_only_by_its_head(
    offline_codex: OfflineCodex, tmp_path: Path, mode: str
) -> None:
    dots = make_dots(offline_codex, tmp_path / "state")
    huge, unknown = "r" * 10_000_000, "u" * 150
    took: dict[str, float] = {}

    async def scenario() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with client(dots, mode, Answers()) as c:
            started = time.monotonic()
            out["huge"] = await call(c, "dots_status", {"runId": huge})
            took["huge"] = time.monotonic() - started
            out["unknown"] = await call(c, "dots_control", {"runId": unknown, "action": "pause"})
            out["cursor"] = await call(c, "dots_threads", {"options": {"cursor": "c" * 10_000_000}})
            out["tool"] = (await c.call_tool("t" * 10_000_000, {})).content[0].text  # type: ignore[union-attr]
            for name, run_id in (("resource", unknown), ("resource_huge", huge)):
                try:
                    await c.read_resource(f"dots://runs/{run_id}")
                except MCPError as exc:
                    out[name] = exc.error.message
        return out

    out = asyncio.run(scenario())
    print(f"\n10 MB runId in process ({mode}): answered in {took['huge']:.3f} s")
    text, field = refused(out["huge"])
    expected = f"runId must be at most 200 characters, got {_head(huge)}"
    assert (text, field) == (f"dots_status: {expected}", "runId")
    assert out["huge"].structured_content["error"]["message"] == expected  # type: ignore[index]
    assert all(len(item.text) < 400 for item in out["huge"].content)  # type: ignore[union-attr]
    text, field = refused(out["unknown"])
    assert (text, field) == (f"dots_control: runId: run not found: {_head(unknown)}", "runId")
    text, field = refused(out["cursor"])
    assert text == (
        "dots_threads: options.cursor must be at most 128 characters, got "
        + _head("c" * 10_000_000)
    )
    assert out["resource"] == f"run not found: {_head(unknown)}"
    assert out["resource_huge"] == f"Unknown resource: {_head('dots://runs/' + huge)}"
    assert out["tool"] == f"Unknown tool: {_head('t' * 10_000_000)}"
