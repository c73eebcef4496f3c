# Owns: what a `tools serve` call answers (TOL-2, TOL-6, docs/cli.md "tools serve
# results"): a delivered call's CallToolResult (`content` = the agent-readable text,
# `structuredContent` = `markertools.call_result_json`, `isError` for rejected and
# skipped), a refusal of the server's own (a token, a bound, an outage: outcome
# "rejected", target null) and, for a task_poll / wait_threads cut short by the
# server's limit, the one piece of advice the agent reads: call again while the turn's
# cap of that tool allows it, else check on the tasks next turn (issue 35 item 4).
#
# Must never: advise a call the turn's cap would ignore; put a token in a result.
from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Final

from mcp_types import CallToolResult, TextContent

import markertools
from markertools import CallResult, call_result_json, msg
from markertools_adapters.tools._declare import kind_of

STILL_RUNNING: Final[frozenset[str]] = frozenset({"queued", "running"})  # not terminal


def tool_result(body: dict[str, Any], text: str, *, error: bool) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=body,
        is_error=error,
    )


def refusal(tool: str, text: str) -> CallToolResult:
    """A call the server refuses itself (nothing delivered, nothing counted)."""
    body: dict[str, Any] = {
        "kind": kind_of(tool),
        "outcome": "rejected",
        "target": None,
        "reason": text,
        "replayed": False,
        "text": text,
    }
    return tool_result(body, text, error=True)


def still_running(body: Mapping[str, Any]) -> list[str]:
    """The ids of the snapshots in a poll's or wait's fields that are not finished."""
    snaps: list[Any] = []
    if isinstance(body.get("task"), Mapping):
        snaps.append(body["task"])
    if isinstance(body.get("tasks"), list):
        snaps.extend(body["tasks"])
    return [
        str(s["id"])
        for s in snaps
        if isinstance(s, Mapping) and s.get("status") in STILL_RUNNING and "id" in s
    ]


@functools.cache
def cap_of(tool: str) -> int:
    """The kind's per-turn cap (the `x-markertools` of its body schema)."""
    return int(markertools.body_schema(kind_of(tool))["x-markertools"]["cap"])


def delivered(
    tool: str, result: CallResult, locale: str, *, cut_short_ms: int | None
) -> CallToolResult:
    """A delivered call's result; `cut_short_ms`: the server's limit cut a wait short
    (the advice and `cut_short`, `still_running`, `calls_left` are added when targets
    are still running)."""
    body = call_result_json(result, locale)
    text = result.text
    if cut_short_ms is not None and result.entry.outcome == "done":
        still = still_running(body)
        if still:
            left = result.calls_left
            if left is None:  # not counted (a replay): the cap is not known here
                key = "toolserver.cut_short_cap"
            else:
                key = "toolserver.cut_short" if left > 0 else "toolserver.cut_short_last"
            advice = msg(
                key, ms=cut_short_ms, ids=", ".join(still), tool=tool, left=left, cap=cap_of(tool)
            )
            text = f"{text}\n{advice.render(locale)}"
            body["text"] = text
            body["cut_short"] = True
            body["still_running"] = still
            if left is not None:
                body["calls_left"] = left
    return tool_result(body, text, error=result.is_error)
