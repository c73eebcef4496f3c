# Owns: a run's markertools tools as its engine reaches them (WRK-9, TOL-10, ENG-2):
# `call_tool`, one same-turn tool call answered in the host's own process - delivered by
# `markertools.deliver_call` for the run's task with the run's claim (FLT-1), in a worker
# thread, bounded by the host's wait limit and ended by the run's halt - and the MCP
# result it becomes (`content`, `structuredContent`, `isError`, as `tools serve`
# answers); `tool_names`, `tool_schema`, `tool_description`, the declarations an engine
# that serves tools in-process (Claude Code's SDK MCP server) needs.
#
# Must never: act for another task than the run's; raise for anything the model sends
# (a tool error instead); put a secret in a result.
from __future__ import annotations

import asyncio
import threading
from typing import Any, Final

from markertools import (
    CallIdReused,
    Claim,
    LeaseLost,
    Ports,
    call_result_json,
    deliver_call,
    msg,
    summarize_error,
)
from markertools_adapters.tools._declare import TOOL_NAMES, description, input_schema

DEFAULT_MAX_WAIT_SECONDS: Final[float] = 100.0  # as `tools serve --max-wait-ms`'s default


def tool_names() -> tuple[str, ...]:
    return tuple(TOOL_NAMES)


def tool_schema(name: str) -> dict[str, Any]:
    return input_schema(name)


def tool_description(name: str, locale: str = "en") -> str:
    return description(name, locale)


async def call_tool(
    name: str,
    arguments: Any,
    call_id: str | None,
    *,
    task_id: str,
    claim: Claim,
    ports: Ports,
    locale: str,
    halt: threading.Event,
    max_wait: float = DEFAULT_MAX_WAIT_SECONDS,
) -> dict[str, Any]:
    """One tool call of the run's task, answered in-process (see the module header)."""
    try:
        result = await asyncio.to_thread(
            deliver_call,
            name,
            arguments if isinstance(arguments, dict) else {},
            sender=task_id,
            ports=ports,
            locale=locale,
            call_id=call_id,
            deadline=max_wait,
            cancel=halt,
            claim=claim,
        )
    except (CallIdReused, LeaseLost) as exc:  # a reused call id, a lost claim: a tool error
        return _error(name, str(exc))
    except Exception as exc:  # a bug or a port beyond deliver_call's own handling
        text = msg("toolserver.internal", error=summarize_error(exc)).render(locale)
        return _error(name, text)
    body = call_result_json(result, locale)
    return {
        "content": [{"type": "text", "text": result.text}],
        "structuredContent": body,
        "isError": result.is_error,
    }


def _error(name: str, text: str) -> dict[str, Any]:
    body = {
        "kind": name.replace("_", "-"),
        "outcome": "rejected",
        "target": None,
        "reason": text,
        "replayed": False,
        "text": text,
    }
    return {"content": [{"type": "text", "text": text}], "structuredContent": body, "isError": True}


__all__ = ["call_tool", "tool_description", "tool_names", "tool_schema"]
