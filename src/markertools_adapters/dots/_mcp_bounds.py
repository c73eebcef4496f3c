# Owns: Rule 4 of `dots serve` (mcp.py): a refusal shows a caller's long value only as
# its head and length, whichever layer wrote the message - the server middleware that
# shortens what the SDK itself echoes (an unknown tool name, an unknown resource URI),
# the supervisor's names of arguments as the tools' paths to them (`options.cursor`),
# the long strings of a call's arguments and their replacement in a message, and a PLN
# issue path as a tool argument path.
#
# Must never: echo more of a caller's value than `_mcp_args.shown` shows; walk more of a
# call's arguments than its budget.
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Final

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from markertools_adapters.dots._mcp_args import MAX_ID_CHARS, SHOWN_CHARS, shown
from markertools_adapters.dots._mcp_notify import run_uri

MAX_URI_CHARS: Final[int] = len(run_uri("")) + MAX_ID_CHARS
_ECHOED: Final[dict[str, tuple[str, int]]] = {  # what the SDK itself echoes when unknown
    "tools/call": ("name", SHOWN_CHARS),
    "resources/read": ("uri", MAX_URI_CHARS),
}


async def short_names(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Rule 4 where the SDK writes the message: a tool name or resource URI too long to
    be one of ours goes on as its head and length, so "Unknown tool: ..." and "Unknown
    resource: ..." (and the error's `data.uri`) stay short."""
    params = ctx.params
    echoed = _ECHOED.get(ctx.method)
    if echoed is not None and isinstance(params, Mapping):
        key, limit = echoed
        value = params.get(key)
        if isinstance(value, str) and len(value) > limit:
            ctx = dataclasses.replace(ctx, params={**params, key: shown(value)})
    return await call_next(ctx)


_OPTIONS: Final[dict[str, frozenset[str]]] = {
    "dots_threads": frozenset({"limit", "cursor", "cwd", "searchTerm", "archived"}),
    "dots_thread_read": frozenset({"limit", "cursor"}),
}


def argument_path(tool: str, field: str | None) -> str | None:
    """The supervisor's name of an argument (`cursor`) as the tool's path to it
    (`options.cursor`, as a refused argument check names it too)."""
    if field is not None and field in _OPTIONS.get(tool, ()):
        return f"options.{field}"
    return field


def long_strings(arguments: Mapping[str, Any], budget: int = 1000) -> list[str]:
    """The caller's strings longer than SHOWN_CHARS (keys too), longest first, among the
    first `budget` values of the arguments."""
    found: set[str] = set()
    stack: list[Any] = [arguments]
    while stack and budget > 0:
        value = stack.pop()
        budget -= 1
        if isinstance(value, str):
            if len(value) > SHOWN_CHARS:
                found.add(value)
        elif isinstance(value, Mapping):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return sorted(found, key=len, reverse=True)


def bounded(text: str, long: Sequence[str], locale: str) -> str:
    """Rule 4: each long caller value in `text` (as written or as its repr) replaced by
    its head and length."""
    for value in long:
        if value in text or repr(value) in text:
            short = shown(value, locale)
            text = text.replace(repr(value), short).replace(value, short)
    return text


def proposal_path(path: str | None) -> str | None:
    """A PLN issue path (`$.workers[0].cwd`, `workers[0]`) as a tool argument path."""
    if path is None:
        return None
    if path.startswith("proposal"):
        return path
    rest = path[1:] if path.startswith("$") else path
    if rest and not rest.startswith((".", "[")):
        rest = "." + rest
    return "proposal" + rest
