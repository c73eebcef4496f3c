# Owns: `ToolsMcp`, the fifteen marker tools as an MCP server (TOL-1..8, TOL-11, FLT-3,
# docs/tools.md) on the official MCP Python SDK (`mcp.server.mcpserver.MCPServer`): one
# declaration per tool (`_declare`: name, the kind's body schema, the guide's
# description; declared through `_mcp_tools.declare_tool`), each call delivered by
# `markertools.deliver_call` for the task its token binds and answered as `_results`
# shapes it.
#
# Binding (TOL-3): the token of each call comes from `token_of(ctx)` (`_request`: on
# stdio the environment variable MARKERTOOLS_TASK_TOKEN, read at every call; over
# Streamable HTTP the request's `Authorization: Bearer` header) and is authorised at
# every call, so a task that stopped running, or a revoked or expired token, is refused
# from then on.
# Fairness (TOL-11): a token runs at most `max_calls_per_token` calls at once (one more
# is refused naming the bound); every store call runs in one bounded, fair pool
# (`_pool.FairPool`); a task_poll or wait_threads call first waits WITHOUT a thread -
# on the connection's `_watch.StatusWatch`, until its targets finish, its sender stops,
# its timeout or the server's limit - then is delivered with `waited=` that long, so
# its report is exact. A call whose HTTP exchange ended (the client disconnected; the
# gate of `_http` sets `GONE_KEY` of the request's scope) ends at once.
# Waiting (TOL-6): every call runs with the deadline `max_wait_ms`; a waiting call
# reports progress when the client sent a progress token, stops at once when the
# request is cancelled, and says which targets are still running when the limit cut it
# short. Outages (FLT-3): `_store.StoreAccess`.
# A worker host serving its own runs' tools (TOL-10) passes `claim_of`: a call is then
# delivered with the claim of the host's live run of its task (FLT-1: a write of a task
# another host holds now raises LeaseLost, answered as a refusal), and a task with no
# live run on this host is refused.
#
# Must never: raise out of a call for anything a client sends (a tool error instead),
# put the token (or any part of it) in a result, a log record or an error, act for a
# task other than the one the call's token binds, or hold a thread while a call waits.
from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
import attrs
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult

import markertools
from markertools import (
    Authorization,
    CallIdReused,
    CallResult,
    CallWait,
    Claim,
    InvalidArgument,
    LeaseLost,
    Ports,
    TaskTokenStore,
    authorize_task_token,
    deliver_call,
    msg,
    plan_call_wait,
    summarize_error,
)
from markertools_adapters._mcp_tools import declare_tool
from markertools_adapters._outage import DEFAULT_OUTAGE_SECONDS, Outage
from markertools_adapters.tools._declare import (
    CHANGING,
    TOOL_NAMES,
    WAITING,
    description,
    input_schema,
)
from markertools_adapters.tools._pool import DEFAULT_POOL_SIZE, FairPool
from markertools_adapters.tools._ratelog import RateLimitedLog
from markertools_adapters.tools._request import (
    GONE_KEY,
    TokenSource,
    env_token,
    report_progress,
    token_key,
)
from markertools_adapters.tools._results import delivered, refusal
from markertools_adapters.tools._store import (
    Probe,
    StoreAccess,
    StoreDown,
    observed,
    observed_ports,
)
from markertools_adapters.tools._wait import CallWaiter, StopClock
from markertools_adapters.tools._watch import StatusWatch

log = logging.getLogger("markertools.tools.serve")

SERVER_NAME: Final[str] = "markertools"
CALL_ID_META_KEY: Final[str] = "markertools/callId"
DEFAULT_MAX_WAIT_MS: Final[int] = 100_000
DEFAULT_MAX_CALLS_PER_TOKEN: Final[int] = 8
PROGRESS_SECONDS: Final[float] = 5.0  # a progress notification this often while waiting
INSTRUCTIONS: Final[str] = (
    "The marker tools of one markertools task: create and watch subtasks, todos, "
    "automations. Each call is a marker block answered at once; the caps per turn are "
    "shared with the blocks of your answer. Data of other tasks is framed and inert."
)


@attrs.frozen
class Live:
    """What a connection's lifespan gives its calls: the status watch it runs."""

    watch: StatusWatch


class ToolsMcp:
    """The MCP server of the marker tools over one store (see the module header).

    `store` is what tokens are checked against (every bundled store is a
    TaskTokenStore), `ports` what calls are delivered through (`store.ports` of a store
    opened with `markertools_adapters.connect`); `token_of` finds a call's token
    (`env_token` for stdio, `bearer_token` for Streamable HTTP). `server` is the
    MCPServer to run or to hand to an in-process `mcp.Client`; `running()` is what a
    process serving it runs around it (the outage watchdog)."""

    def __init__(
        self,
        store: TaskTokenStore,
        ports: Ports,
        *,
        locale: str = "en",
        max_wait_ms: int = DEFAULT_MAX_WAIT_MS,
        token_of: TokenSource = env_token,
        progress_seconds: float = PROGRESS_SECONDS,
        max_calls_per_token: int = DEFAULT_MAX_CALLS_PER_TOKEN,
        store_threads: int = DEFAULT_POOL_SIZE,
        store_outage_seconds: float = DEFAULT_OUTAGE_SECONDS,
        claim_of: Callable[[str], Claim | None] | None = None,
    ) -> None:
        if locale not in ("en", "zh"):
            raise InvalidArgument(f"locale must be en or zh; got {locale!r}")
        if isinstance(max_wait_ms, bool) or not isinstance(max_wait_ms, int) or max_wait_ms < 0:
            raise InvalidArgument(f"max_wait_ms must be an integer >= 0; got {max_wait_ms!r}")
        if (
            isinstance(max_calls_per_token, bool)
            or not isinstance(max_calls_per_token, int)
            or max_calls_per_token < 1
        ):
            raise InvalidArgument(
                f"max_calls_per_token must be an integer >= 1; got {max_calls_per_token!r}"
            )
        self.store = store
        self.ports = ports
        self.locale = locale
        self.max_wait_ms = max_wait_ms
        self.token_of = token_of
        self.progress_seconds = progress_seconds
        self.max_calls_per_token = max_calls_per_token
        self.claim_of = claim_of
        self.pool = FairPool(store_threads)
        self.access = StoreAccess(self.pool, Outage("the store", store_outage_seconds, log=log))
        self.refusals = RateLimitedLog(log)
        self.calls_served = 0
        self._running: dict[str, int] = {}  # token key -> calls running now
        self._busy = 0  # calls waiting or delivering (tests, bench: wait_busy / wait_idle)
        self._flight = threading.Condition()
        self._watches: list[StatusWatch] = []
        # the SDK checks no argument: `deliver_call` checks them (the block's validator),
        # so a refusal names the field as a block's would and is a tool result
        tools = [
            declare_tool(
                self._entry(name),
                name=name,
                description=description(name, locale),
                schema=input_schema(name),
                changes=name in CHANGING,
            )
            for name in TOOL_NAMES
        ]
        self.server: MCPServer[Any] = MCPServer(
            SERVER_NAME,
            instructions=INSTRUCTIONS,
            tools=tools,
            version=markertools.__version__,
            log_level="WARNING",  # the SDK's handler; our records are never more than that
            lifespan=self._lifespan,
        )

    # ---- lifecycles ------------------------------------------------------------------

    @asynccontextmanager
    async def _lifespan(self, _: MCPServer[Any]) -> AsyncIterator[Live]:
        """One connection (stdio: the process; HTTP: the session manager; an in-process
        client): its status watch, run by this task group."""
        watch = StatusWatch(
            self.ports.tasks,
            self.ports.waiter,
            self.pool,
            on_failure=self.access.failed,
            on_success=self.access.ok,
            store_back=self.access.back,
        )
        self._watches.append(watch)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(watch.run)
                try:
                    yield Live(watch)
                finally:
                    group.cancel_scope.cancel()
        finally:
            self._watches.remove(watch)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[anyio.Event]:
        """What a serving process runs around the server: the outage watchdog (FLT-3).
        Yields the event set once an outage outlasted `store_outage_seconds` (then
        `fatal` says why and the process should stop, exit 75)."""
        async with anyio.create_task_group() as group:
            group.start_soon(self.access.watchdog, self._probe)
            try:
                yield self.access.stopping()
            finally:
                group.cancel_scope.cancel()

    @property
    def fatal(self) -> BaseException | None:
        return self.access.fatal

    @property
    def waiting(self) -> int:
        """Calls waiting on a status watch now (tests, bench)."""
        return sum(w.waiting for w in self._watches)

    # ---- one call --------------------------------------------------------------------

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
        live = request.lifespan_context if isinstance(request.lifespan_context, Live) else None
        scope = getattr(request.request, "scope", None)
        gone = scope.get(GONE_KEY) if isinstance(scope, Mapping) else None
        try:
            token = self.token_of(ctx)
        except Exception:
            token = None
        key = token_key(token)
        if self._running.get(key, 0) >= self.max_calls_per_token:  # TOL-11
            text = msg("toolserver.too_many_calls", max=self.max_calls_per_token)
            return self._refused(tool, text.render(self.locale))
        self._running[key] = self._running.get(key, 0) + 1
        started = time.monotonic()
        answer: CallToolResult | None = None
        try:
            async with anyio.create_task_group() as group:  # the call's helpers
                if isinstance(gone, anyio.Event):
                    group.start_soon(_cancel_when_set, gone, group.cancel_scope)
                if tool in WAITING:
                    every, total = self.progress_seconds, float(self.max_wait_ms)
                    group.start_soon(report_progress, ctx, started, every, total)
                try:
                    answer = await self._answer(tool, arguments, call_id, token, key, started, live)
                except (LeaseLost, CallIdReused) as exc:  # FLT-1 / FLT-6: said as it is
                    answer = self._refused(tool, str(exc))
                except Exception as exc:  # a bug or a port beyond deliver_call's handling
                    log.warning("%s failed: %s", tool, summarize_error(exc))
                    error = summarize_error(exc)
                    answer = refusal(
                        tool, msg("toolserver.internal", error=error).render(self.locale)
                    )
                group.cancel_scope.cancel()
        except anyio.get_cancelled_exc_class():
            log.info("%s cancelled by the client", tool)
            raise
        finally:
            left = self._running.get(key, 1) - 1
            if left > 0:
                self._running[key] = left
            else:
                self._running.pop(key, None)
        if answer is None:  # the HTTP exchange ended first: no one reads the answer
            log.info("%s ended: the client disconnected", tool)
            return refusal(tool, msg("toolserver.client_gone").render(self.locale))
        return answer

    async def _answer(
        self,
        tool: str,
        arguments: object,
        call_id: object,
        token: str | None,
        key: str,
        started: float,
        live: Live | None,
    ) -> CallToolResult:
        limit = self.max_wait_ms / 1000.0
        until = started + limit  # FLT-3: how long the call may wait for the store
        if tool not in WAITING and token and not self.access.outage.active:
            fast = await self._in_one_job(tool, arguments, call_id, token, key, limit)
            if fast is not None:  # else the token check met the store away: ride it out
                return fast
        try:
            auth = await self.authorize(token, key=key, until=until)
        except StoreDown as down:
            return self._down(tool, down)
        del token
        if not auth.ok or auth.task_id is None:
            assert auth.refusal is not None
            return self._refused(tool, auth.refusal.render(self.locale))
        sender = auth.task_id
        claim: Claim | None = None
        if self.claim_of is not None:  # a worker host's own runs (TOL-10, FLT-1)
            claim = self.claim_of(sender)
            if claim is None:
                why = msg("toolserver.not_on_this_host", task_id=sender)
                text = msg("tools.not_authorised", why=why).render(self.locale)
                return self._refused(tool, text)
        with self._in_flight():
            if tool in WAITING and live is not None:
                await self._wait_first(tool, arguments, call_id, sender, key, started, limit, live)
            try:
                await self.access.ready(key, until, self._probe)
            except StoreDown as down:
                return self._down(tool, down)
            result = await self._deliver(
                tool, arguments, call_id, sender, key, started, limit, claim
            )
        self.calls_served += 1
        log.info("%s of task %s: %s", tool, sender, result.entry.outcome)
        cut = tool in WAITING and time.monotonic() - started >= limit
        return delivered(tool, result, self.locale, cut_short_ms=self.max_wait_ms if cut else None)

    async def _in_one_job(
        self,
        tool: str,
        arguments: object,
        call_id: object,
        token: str,
        key: str,
        limit: float,
    ) -> CallToolResult | None:
        """A call that does not wait (issue 40): its token checked and the call delivered
        in ONE job of the pool - one thread hop, not two. None when the token check met
        the store unavailable: the caller then rides the outage out (FLT-3)."""
        stop = threading.Event()
        probe = Probe()
        ports = self._call_ports(probe, stop)

        def work() -> Authorization | tuple[str, CallResult] | str | None:
            auth = authorize_task_token(observed(self.store, probe), token, self.ports.clock.now())
            if probe.failure is not None:
                return None
            if not auth.ok or auth.task_id is None:
                return auth
            claim: Claim | None = None
            if self.claim_of is not None:  # a worker host's own runs (TOL-10, FLT-1)
                claim = self.claim_of(auth.task_id)
                if claim is None:
                    return auth.task_id
            result = deliver_call(
                tool,
                arguments if arguments is not None else {},  # type: ignore[arg-type]
                sender=auth.task_id,
                ports=ports,
                locale=self.locale,
                call_id=call_id,  # type: ignore[arg-type]  # deliver_call refuses a bad one
                deadline=limit,
                cancel=stop,
                claim=claim,
            )
            return auth.task_id, result

        with self._in_flight():
            try:
                out = await self.pool.run(key, work)  # short: a cancel is delivered after it
            finally:
                self.access.settle(probe)  # a failure met starts the outage the caller rides
        if out is None:
            return None
        if isinstance(out, Authorization):
            assert out.refusal is not None
            return self._refused(tool, out.refusal.render(self.locale))
        if isinstance(out, str):
            why = msg("toolserver.not_on_this_host", task_id=out)
            return self._refused(tool, msg("tools.not_authorised", why=why).render(self.locale))
        sender, result = out
        self.calls_served += 1
        log.info("%s of task %s: %s", tool, sender, result.entry.outcome)
        return delivered(tool, result, self.locale, cut_short_ms=None)

    async def authorize(
        self, token: str | None, *, key: str | None = None, until: float | None = None
    ) -> Authorization:
        """TOL-3: the token's authorisation, read in the pool (retried through an outage
        until `until`, default the server's wait limit from now; StoreDown after)."""
        if not token:  # nothing to read
            return authorize_task_token(self.store, None, 0.0)
        deadline = until if until is not None else time.monotonic() + self.max_wait_ms / 1000.0

        def check(probe: Probe) -> Authorization:
            store = observed(self.store, probe)
            return authorize_task_token(store, token, self.ports.clock.now())

        return await self.access.read(key if key is not None else token_key(token), deadline, check)

    async def _wait_first(
        self,
        tool: str,
        arguments: object,
        call_id: object,
        sender: str,
        key: str,
        started: float,
        limit: float,
        live: Live,
    ) -> None:
        """TOL-11: what the call would wait for, waited for on the status watch."""

        def plan(probe: Probe) -> CallWait | None:
            return plan_call_wait(
                tool,
                arguments if isinstance(arguments, Mapping) else None,
                sender=sender,
                ports=observed_ports(self.ports, probe),
                call_id=call_id if isinstance(call_id, str) else None,
            )

        if not (arguments is None or isinstance(arguments, Mapping)):
            return  # refused at once by the delivery
        if call_id is not None and not isinstance(call_id, str):
            return
        try:
            wait = await self.access.read(key, started + limit, plan)
        except StoreDown:
            return  # the delivery refuses (ready() spends no more of the budget)
        except Exception as exc:  # the delivery meets it again and says so
            log.info("%s: the wait was not planned: %s", tool, summarize_error(exc))
            return
        if wait is None:
            return
        span = min(wait.timeout, limit) - (time.monotonic() - started)
        if span > 0:
            await live.watch.wait(wait, span)

    async def _deliver(
        self,
        tool: str,
        arguments: object,
        call_id: object,
        sender: str,
        key: str,
        started: float,
        limit: float,
        claim: Claim | None = None,
    ) -> CallResult:
        stop = threading.Event()
        probe = Probe()
        ports = self._call_ports(probe, stop)

        def work() -> CallResult:
            waited = time.monotonic() - started if tool in WAITING else 0.0
            return deliver_call(
                tool,
                arguments if arguments is not None else {},  # type: ignore[arg-type]
                sender=sender,
                ports=ports,
                locale=self.locale,
                call_id=call_id,  # type: ignore[arg-type]  # deliver_call refuses a bad one
                deadline=limit,
                cancel=stop,
                waited=waited,
                claim=claim,
            )

        try:
            return await self.pool.run_stoppable(key, work, stop)
        finally:
            self.access.settle(probe)

    def _call_ports(self, probe: Probe, stop: threading.Event) -> Ports:
        """The ports one call is delivered with: its store failures noted in `probe`, its
        waits and clock ended by `stop` (a cancelled or disconnected call)."""
        return attrs.evolve(
            observed_ports(self.ports, probe),
            waiter=CallWaiter(self.ports.tasks, stop, self.ports.waiter),
            clock=StopClock(self.ports.clock, stop),
        )

    @contextlib.contextmanager
    def _in_flight(self) -> Iterator[None]:
        """A call waiting or being delivered, for `wait_busy` / `wait_idle`."""
        with self._flight:
            self._busy += 1
            self._flight.notify_all()
        try:
            yield
        finally:
            with self._flight:
                self._busy -= 1
                self._flight.notify_all()

    def _probe(self, probe: Probe) -> object:
        """One cheap store read (the outage watchdog's, and a call's before delivery)."""
        return observed(self.ports.tasks, probe).get_task("")

    def _refused(self, tool: str, text: str) -> CallToolResult:
        self.refusals.note(f"{tool} refused: {text}")
        return refusal(tool, text)

    def _down(self, tool: str, down: StoreDown) -> CallToolResult:
        text = msg("toolserver.store_outage", seconds=round(down.seconds, 1), error=down.cause)
        return self._refused(tool, text.render(self.locale))

    def wait_busy(self, timeout: float) -> bool:
        """True once a call waits or is being delivered, False after `timeout` seconds
        (tests, bench)."""
        with self._flight:
            return self._flight.wait_for(lambda: self._busy > 0, timeout)

    def wait_idle(self, timeout: float) -> bool:
        """True once no call waits or is being delivered (a cancelled one ends at once),
        False after `timeout` seconds."""
        with self._flight:
            return self._flight.wait_for(lambda: self._busy == 0, timeout)


async def _cancel_when_set(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()
