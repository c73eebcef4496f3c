# Owns: `ToolsMcp`, the fifteen marker tools as an MCP server (TOL-1..8, docs/tools.md)
# on the official MCP Python SDK (`mcp.server.mcpserver.MCPServer`): one declaration per
# tool (`_declare`: name, the kind's body schema, the guide's description), each call
# delivered by `markertools.deliver_call` for the task its token binds, in a worker
# thread, answered with `content` = the agent-readable text, `structuredContent` =
# `markertools.call_result_json` (it holds the text too: Codex shows the model only the
# structured content) and `isError` for rejected and skipped calls.
#
# Binding (TOL-3): the token of each call comes from `token_of(ctx)` - on stdio the
# environment variable MARKERTOOLS_TASK_TOKEN, read at every call; over Streamable HTTP
# the request's `Authorization: Bearer` header - and is authorised at every call, so a
# task that stopped running, or a revoked or expired token, is refused from then on.
# Waiting (TOL-6): every call runs with the deadline `max_wait_ms`; task_poll and
# wait_threads wake early on a change (`_wait.CallWaiter`), report progress while they
# wait when the client sent a progress token, stop at once when the request is
# cancelled, and say which targets are still running when the limit cut them short.
#
# Must never: raise out of a call for anything a client sends (a tool error instead),
# put the token (or any part of it) in a result, a log record or an error, or act for
# a task other than the one the call's token binds.
from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import anyio
import anyio.to_thread
import attrs
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict

import markertools
from markertools import (
    CallResult,
    Ports,
    TaskTokenStore,
    authorize_task_token,
    call_result_json,
    deliver_call,
    msg,
    summarize_error,
)
from markertools_adapters.tools._declare import (
    CHANGING,
    TOOL_NAMES,
    WAITING,
    description,
    input_schema,
    kind_of,
)
from markertools_adapters.tools._wait import CallWaiter, StopClock

log = logging.getLogger("markertools.tools.serve")

SERVER_NAME: Final[str] = "markertools"
TOKEN_ENV: Final[str] = "MARKERTOOLS_TASK_TOKEN"
CALL_ID_META_KEY: Final[str] = "markertools/callId"
DEFAULT_MAX_WAIT_MS: Final[int] = 100_000
PROGRESS_SECONDS: Final[float] = 5.0  # a progress notification this often while waiting
STILL_RUNNING: Final[frozenset[str]] = frozenset({"queued", "running"})  # not terminal
INSTRUCTIONS: Final[str] = (
    "The marker tools of one markertools task: create and watch subtasks, todos, "
    "automations. Each call is a marker block answered at once; the caps per turn are "
    "shared with the blocks of your answer. Data of other tasks is framed and inert."
)
_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_CHANGES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

TokenSource = Callable[[Context[Any, Any]], str | None]


class RawArguments(ArgModelBase):
    """What the SDK checks before calling a tool: nothing. `deliver_call` checks the
    call's arguments itself (the block's validator), so a refusal names the field as a
    block's would and is a tool result, never a protocol error."""

    model_config = ConfigDict(extra="ignore")


def env_token(_: Context[Any, Any]) -> str | None:
    """stdio: the token in MARKERTOOLS_TASK_TOKEN, read at every call."""
    return os.environ.get(TOKEN_ENV)


def bearer_token(ctx: Context[Any, Any]) -> str | None:
    """Streamable HTTP: the request's `Authorization: Bearer TOKEN` header."""
    headers = ctx.headers
    if headers is None:
        return None
    value = headers.get("authorization")
    if not isinstance(value, str):
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def _result(body: dict[str, Any], text: str, *, error: bool) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=body,
        is_error=error,
    )


def _refusal(tool: str, text: str) -> CallToolResult:
    body: dict[str, Any] = {
        "kind": kind_of(tool),
        "outcome": "rejected",
        "target": None,
        "reason": text,
        "replayed": False,
        "text": text,
    }
    return _result(body, text, error=True)


def _still_running(body: Mapping[str, Any]) -> list[str]:
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


class ToolsMcp:
    """The MCP server of the marker tools over one store (see the module header).

    `store` is what tokens are checked against (every bundled store is a
    TaskTokenStore), `ports` what calls are delivered through (`store.ports` of a store
    opened with `markertools_adapters.connect`); `token_of` finds a call's token
    (`env_token` for stdio, `bearer_token` for Streamable HTTP). `server` is the
    MCPServer to run or to hand to an in-process `mcp.Client`."""

    def __init__(
        self,
        store: TaskTokenStore,
        ports: Ports,
        *,
        locale: str = "en",
        max_wait_ms: int = DEFAULT_MAX_WAIT_MS,
        token_of: TokenSource = env_token,
        progress_seconds: float = PROGRESS_SECONDS,
    ) -> None:
        if locale not in ("en", "zh"):
            raise ValueError(f"locale must be en or zh; got {locale!r}")
        if isinstance(max_wait_ms, bool) or not isinstance(max_wait_ms, int) or max_wait_ms < 0:
            raise ValueError(f"max_wait_ms must be an integer >= 0; got {max_wait_ms!r}")
        self.store = store
        self.ports = ports
        self.locale = locale
        self.max_wait_ms = max_wait_ms
        self.token_of = token_of
        self.progress_seconds = progress_seconds
        self.calls_served = 0
        self._in_flight = 0  # delivery threads still running (a cancelled one ends soon)
        self._flight = threading.Condition()
        tools = [
            Tool(
                fn=self._entry(name),
                name=name,
                title=name.replace("_", " "),
                description=description(name, locale),
                parameters=input_schema(name),
                fn_metadata=FuncMetadata(arg_model=RawArguments),
                is_async=True,
                context_kwarg="ctx",
                annotations=_CHANGES if name in CHANGING else _READ_ONLY,
            )
            for name in TOOL_NAMES
        ]
        self.server: MCPServer[Any] = MCPServer(
            SERVER_NAME,
            instructions=INSTRUCTIONS,
            tools=tools,
            version=markertools.__version__,
            log_level="WARNING",  # the SDK's handler; our records are never more than that
        )

    def _entry(self, tool: str) -> Callable[..., Awaitable[CallToolResult]]:
        async def entry(ctx: Context[Any, Any]) -> CallToolResult:
            return await self.call(tool, ctx)

        entry.__name__ = tool
        return entry

    async def call(self, tool: str, ctx: Context[Any, Any]) -> CallToolResult:
        """One `tools/call` of `tool` (never raises for what the client sent)."""
        request = ctx.request_context
        params = request.params if isinstance(request.params, Mapping) else {}
        arguments = params.get("arguments")
        meta = request.meta if isinstance(request.meta, Mapping) else {}
        call_id = meta.get(CALL_ID_META_KEY)
        try:
            token = self.token_of(ctx)
        except Exception:
            token = None
        now = self.ports.clock.now()
        auth = await anyio.to_thread.run_sync(authorize_task_token, self.store, token, now)
        del token
        if not auth.ok or auth.task_id is None:
            assert auth.refusal is not None
            text = auth.refusal.render(self.locale)
            log.info("%s refused: %s", tool, text)
            return _refusal(tool, text)
        sender = auth.task_id
        stop = threading.Event()
        ports = attrs.evolve(
            self.ports,
            waiter=CallWaiter(self.ports.tasks, stop, self.ports.waiter),
            clock=StopClock(self.ports.clock, stop),
        )
        limit = self.max_wait_ms / 1000.0

        def work() -> CallResult:
            with self._flight:
                self._in_flight += 1
                self._flight.notify_all()
            try:
                return self._deliver(tool, arguments, sender, ports, call_id, limit, stop)
            finally:
                with self._flight:
                    self._in_flight -= 1
                    self._flight.notify_all()

        started = time.monotonic()
        try:
            async with anyio.create_task_group() as group:
                if tool in WAITING:
                    group.start_soon(self._progress, ctx, started)
                try:
                    result = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
                finally:
                    group.cancel_scope.cancel()
        except anyio.get_cancelled_exc_class():
            stop.set()  # notifications/cancelled: the waiting thread ends at once
            log.info("%s of task %s cancelled by the client", tool, sender)
            raise
        except Exception as exc:  # a bug or a port beyond deliver_call's own handling
            log.warning("%s of task %s failed: %s", tool, sender, summarize_error(exc))
            return _refusal(
                tool, msg("toolserver.internal", error=summarize_error(exc)).render(self.locale)
            )
        finally:
            stop.set()
        self.calls_served += 1
        body = call_result_json(result, self.locale)
        text = result.text
        if tool in WAITING and result.entry.outcome == "done":
            still = _still_running(body)
            if still and time.monotonic() - started >= limit:
                extra = msg("toolserver.cut_short", ms=self.max_wait_ms, ids=", ".join(still))
                text = f"{text}\n{extra.render(self.locale)}"
                body["text"] = text
                body["cut_short"] = True
                body["still_running"] = still
        log.info("%s of task %s: %s", tool, sender, result.entry.outcome)
        return _result(body, text, error=result.is_error)

    def _deliver(
        self,
        tool: str,
        arguments: object,
        sender: str,
        ports: Ports,
        call_id: object,
        limit: float,
        stop: threading.Event,
    ) -> CallResult:
        return deliver_call(
            tool,
            arguments if arguments is not None else {},  # type: ignore[arg-type]
            sender=sender,
            ports=ports,
            locale=self.locale,
            call_id=call_id,  # type: ignore[arg-type]  # deliver_call refuses a bad one
            deadline=limit,
            cancel=stop,
        )

    def wait_busy(self, timeout: float) -> bool:
        """True once a delivery thread runs, False after `timeout` seconds (tests, bench)."""
        with self._flight:
            return self._flight.wait_for(lambda: self._in_flight > 0, timeout)

    def wait_idle(self, timeout: float) -> bool:
        """True once no delivery thread runs (a cancelled call's ends at once), False
        after `timeout` seconds."""
        with self._flight:
            return self._flight.wait_for(lambda: self._in_flight == 0, timeout)

    async def _progress(self, ctx: Context[Any, Any], started: float) -> None:
        """TOL-6: `notifications/progress` every `progress_seconds` while a call waits
        (a no-op when the client sent no progress token)."""
        total = float(self.max_wait_ms)
        while True:
            await anyio.sleep(self.progress_seconds)
            waited = (time.monotonic() - started) * 1000.0
            try:
                await ctx.report_progress(min(waited, total), total, "waiting")
            except Exception as exc:  # a closed stream: the result will not arrive either
                log.info("progress not sent: %s", summarize_error(exc))
                return
