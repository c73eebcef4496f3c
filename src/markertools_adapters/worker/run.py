# Owns: `TaskRun`, one claimed task on its own `codex app-server` (WRK-2..5, WRK-7,
# WRK-8): its directory, its process (the dots supervisor's `CodexWorker`: own process
# group, every approval and input request refused), its thread (started, or resumed for
# a continuation or a goal checkpoint), its turns - the first turn's input with the
# first-turn injections, each completed turn delivered with Codex's turn id, the next
# turn's input taken from the task's follow-up queue - and the end of the task:
# completed with the final agent message, failed, interrupted with the reason, or
# requeued when its host stops.
#
# Invariants:
#   Rule 1: only a completed turn is delivered, once, with its Codex turn id (TRN-9);
#           a turn cut by a request, a cancel or a stop is never delivered.
#   Rule 2: an approval or input request is declined (CodexWorker never approves), the
#           turn interrupted and the task ended `interrupted` with the request named.
#   Rule 3: a cancel ends the process group at once (interrupt, then SIGKILL to the
#           group); the task keeps the status the cancel gave it.
#   Rule 4: every turn's tokens become a cost row, priced from the host's table or kept
#           unpriced; priced dollars are charged to the creator's quota.
#   Rule 5: `closing` is set before this run changes its task's status itself, so the
#           host's cancel watch never mistakes the run's own ending for a cancel.
from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import threading
import time
from collections.abc import Callable
from typing import Any, Final, Protocol

from markertools import (
    Claim,
    Ports,
    StartKind,
    Task,
    TaskChange,
    TurnCost,
    TurnIdReused,
    deliver_turn,
    is_goal_task,
    mint_task_token,
    msg,
)
from markertools_adapters.codex import MESSAGE_SEPARATOR
from markertools_adapters.dots._worker import CodexWorker
from markertools_adapters.first_turn import first_turn_prompt
from markertools_adapters.worker.dirs import local_repo, prepare_task_dir
from markertools_adapters.worker.events import HostEvent
from markertools_adapters.worker.leases import Leases
from markertools_adapters.worker.settings import TokenUsage, WorkerSettings

SANDBOX: Final[str] = "workspace-write"
TOKEN_ENV: Final[str] = "MARKERTOOLS_TASK_TOKEN"
TOOLS_SERVER: Final[str] = "markertools"
# passed on to the tools server when the host has them (a virtualenv or a source tree)
FORWARDED_ENV: Final[tuple[str, ...]] = ("PYTHONPATH", "VIRTUAL_ENV", "MARKERTOOLS_DEBUG")
GOAL_PREFIX: Final[str] = "/goal "
_INTERRUPT_WAIT: Final[float] = 0.5  # seconds a cancelled turn gets before SIGKILL
_STOP_WAIT: Final[float] = 5.0


class RunOwner(Protocol):
    """What a run needs of its host (`WorkerHost`)."""

    settings: WorkerSettings
    store: Any
    ports: Ports
    leases: Leases
    stopping: bool

    def emit(self, event: HostEvent) -> None: ...

    def run_ended(self, run: TaskRun) -> None: ...


class _Ended(Exception):
    """The run is over (its task's end already written)."""


class TaskRun:
    """Run one claimed task to its end; `cancel()` and `stop()` may come at any time."""

    def __init__(self, host: RunOwner, claim: Claim) -> None:
        self.host = host
        self.claim = claim
        self.task: Task = claim.task
        self.task_id = claim.task.id
        self.turn = claim.task.turn
        self.started_at = time.time()
        self.closing = False
        self.cancelled = False
        self.stopping = False
        self.thread_id: str | None = None
        self.pgid: int | None = None
        self._signals: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._halt = threading.Event()  # stops a delivery's waits (cancel, stop)
        self._texts: dict[str, list[str]] = {}  # turn id -> its agent messages
        self._usage: dict[str, TokenUsage] = {}
        self._errors: dict[str, str] = {}  # turn id -> Codex's error message
        self._tools_state = asyncio.Event()  # the markertools MCP server is up (or failed)
        self.tools_status: str | None = None
        self._model: str | None = claim.task.model
        self.worker: CodexWorker | None = None

    # ---- control from the host ------------------------------------------------------

    def cancel(self) -> None:
        """The task was cancelled elsewhere (WRK-5)."""
        if not self.cancelled and not self.closing:
            self.cancelled = True
            self._halt.set()
            self._signals.put_nowait(("cancel", None))

    def stop(self) -> None:
        """The host's grace period is over: interrupt and requeue (WRK-1)."""
        if not self.stopping:
            self.stopping = True
            self._halt.set()
            self._signals.put_nowait(("stop", None))

    # ---- the run ----------------------------------------------------------------------

    async def run(self) -> None:
        try:
            await self._run()
        except _Ended:
            pass
        finally:
            if self.worker is not None:
                if self.cancelled:
                    await self._kill()  # WRK-5: never a graceful wait for a cancelled task
                await self.worker.close(grace=1.0)
            self.host.run_ended(self)

    def _emit(self, kind: str, **details: Any) -> None:
        self.host.emit(HostEvent(kind, self.task_id, details=details))

    async def _call(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kw)

    async def _run(self) -> None:
        host, settings, task = self.host, self.host.settings, self.task
        project = await self._call(host.store.get_project, task.project_id)
        repo = local_repo(getattr(project, "repo_url", None) or task.repo_url)
        try:
            directory = await self._call(
                prepare_task_dir, settings.worktrees, settings.host, task.id, repo
            )
        except (OSError, ValueError) as exc:
            await self._fail(None, msg("worker.app_server_failed", detail=str(exc)), None)
            return
        if task.worktree != str(directory):
            changed = await self._call(
                host.store.transition_task,
                task.id,
                "running",
                TaskChange(worktree=str(directory)),
            )
            if changed is not None:
                self.task = task = changed
        extra_env, config = await self._tools()
        self.worker = CodexWorker(
            settings.codex_bin,
            env=settings.child_env(extra_env),
            cwd=str(directory),
            on_raw=self._on_raw,
            on_turn_end=lambda tid, status, reply: self._signals.put_nowait(
                ("end", (tid, status, reply))
            ),
            on_request=lambda kind, summary: self._signals.put_nowait(("request", (kind, summary))),
            on_exit=lambda detail: self._signals.put_nowait(("exit", detail)),
            on_rate_limits=lambda snapshot: None,
            request_timeout=settings.request_timeout,
        )
        text, resume = await self._first_input()
        try:
            client = await self.worker.ensure()
            self.pgid = client.pid
            if self.pgid is not None:
                await self._call(host.leases.record_group, task.id, self.pgid, time.time())
            if self.claim.start is StartKind.RESUME and task.thread_id:
                await self._deliver_left_over(client, task.thread_id)
            try:
                thread = await self.worker.open_thread(
                    cwd=str(directory),
                    sandbox=SANDBOX,
                    model=task.model,
                    resume=resume,
                    config=config,
                )
            except Exception:
                if resume is None:
                    raise
                thread = await self.worker.open_thread(  # the old thread is gone: a new one
                    cwd=str(directory),
                    sandbox=SANDBOX,
                    model=task.model,
                    resume=None,
                    config=config,
                )
                text = (await self._fresh_input(StartKind.RESUME)) + "\n\n" + text
        except Exception as exc:
            if self.cancelled:
                self._emit("cancelled")
                return
            await self._fail(None, msg("worker.app_server_failed", detail=str(exc)), None)
            return
        self.thread_id = thread
        if config is not None:
            await self._tools_ready()
        if thread != task.thread_id:
            await self._call(host.store.set_thread_id, task.id, thread)
        goal_rounds = 0
        while True:
            if self.cancelled:
                self._emit("cancelled")
                return
            turn_id = await self._start_turn(text)
            if turn_id is None:
                return
            ended = await self._await_turn(turn_id)
            reason, status, reply = ended
            cost = self._cost(turn_id)
            self._emit("turn_ended", turn=self.turn, turn_id=turn_id, status=status)
            if reason == "cancel":
                await self._finish_cut(turn_id, "cancelled", None, cost)
                self._emit("cancelled")
                return
            if reason == "stop":
                await self._requeue(turn_id, cost)
                return
            if reason == "request":
                await self._finish_cut(turn_id, "interrupted", status, cost)
                return
            if reason == "exit" or status == "failed":
                detail = self._errors.get(turn_id, status) if reason != "exit" else reply
                await self._fail(
                    turn_id,
                    msg("worker.turn_failed", detail=detail or "failed")
                    if reason != "exit"
                    else msg("worker.app_server_exited", detail=detail or ""),
                    cost,
                )
                return
            if status != "completed":
                await self._finish_cut(
                    turn_id, "interrupted", msg("worker.turn_interrupted", detail=status), cost
                )
                return
            full = MESSAGE_SEPARATOR.join(self._texts.pop(turn_id, [])) or (reply or "")
            current = await self._call(host.store.get_task, task.id)
            goal = current is not None and is_goal_task(current)
            report = await self._call(
                deliver_turn,
                full,
                sender=task.id,
                outcome="completed",
                ports=host.ports,
                locale=settings.locale,
                turn_id=turn_id,
                cancel=self._halt,
            )
            self._emit("delivered", turn=self.turn, turn_id=turn_id, blocks=len(report.entries))
            if goal:
                goal_rounds += 1
                phrase = msg("worker.goal_phrase").render(settings.locale)
                await self._checkpoint(goal_rounds, turn_id)
                if phrase in (reply or ""):
                    await self._complete(turn_id, reply, cost)
                    return
                if goal_rounds >= settings.max_goal_rounds:
                    await self._finish_cut(
                        turn_id,
                        "interrupted",
                        msg("worker.goal_round_limit", rounds=goal_rounds),
                        cost,
                    )
                    return
            if (self.stopping or host.stopping) and goal:
                await self._requeue(turn_id, cost)  # resumes from this checkpoint (WRK-7)
                return
            if (self.stopping or host.stopping) and report.queued_followups:
                self.closing = True
                await self._call(
                    host.store.finish_turn,
                    task.id,
                    turn_id,
                    outcome="completed",
                    cost=cost,
                    requeue=True,  # its follow-ups stay queued for the next claim
                )
                self._emit("requeued", reason="host stopping")
                return
            current = await self._call(host.store.get_task, task.id)
            if current is None or current.status != "running":
                await self._record_cost(turn_id, cost)
                self._emit("cancelled")
                return
            followups = await self._call(host.store.take_followups, task.id)
            if followups:
                self.turn += 1  # taking them advanced the task's turn (TOL-4)
                await self._record_cost(turn_id, cost)
                text = await self._next_input(followups)
                continue
            if goal:
                await self._record_cost(turn_id, cost)
                await self._advance_turn()
                phrase = msg("worker.goal_phrase").render(settings.locale)
                text = msg("worker.goal_continue", phrase=phrase).render(settings.locale)
                continue
            await self._complete(turn_id, reply, cost)
            return

    # ---- inputs -----------------------------------------------------------------------

    async def _first_input(self) -> tuple[str, str | None]:
        """The first turn's input and the thread to resume (None: a new thread)."""
        claim, task = self.claim, self.task
        if claim.start is StartKind.CONTINUATION:
            return await self._next_input(claim.followups), task.thread_id
        if claim.start is StartKind.CHECKPOINT and task.thread_id:
            phrase = msg("worker.goal_phrase").render(self.host.settings.locale)
            text = msg("worker.goal_continue", phrase=phrase).render(self.host.settings.locale)
            return text, task.thread_id
        return await self._fresh_input(claim.start), None

    async def _fresh_input(self, start: StartKind) -> str:
        prompt = await self._call(
            first_turn_prompt,
            self.task,
            start,
            self.host.ports,
            locale=self.host.settings.locale,
        )
        return str(prompt.prompt)

    async def _next_input(self, followups: tuple[str, ...]) -> str:
        """Follow-ups in order; a `/goal TEXT` one makes the task a goal task (WRK-7)."""
        for text in followups:
            if text.startswith(GOAL_PREFIX):
                goal = text[len(GOAL_PREFIX) :].strip()
                await self._call(
                    self.host.store.transition_task,
                    self.task_id,
                    "running",
                    TaskChange(goal_mode=True, goal=goal or None),
                )
        return "\n\n".join(followups)

    async def _tools(self) -> tuple[dict[str, str], dict[str, Any] | None]:
        """WRK-9: the task's token (in the app-server's environment, forwarded to the
        MCP server by name) and the thread's configuration of the markertools server,
        whose tool calls that configuration approves (their gates decide)."""
        command = self.host.settings.tools_command
        if not command:
            return {}, None
        env = self.host.settings.child_env()
        minted = await self._call(
            mint_task_token,
            self.host.store,
            self.task_id,
            now=time.time(),
            token_hex=self.host.ports.random.token_hex,
        )
        server = {
            "command": command[0],
            "args": list(command[1:]),
            "env_vars": [TOKEN_ENV] + [n for n in FORWARDED_ENV if n in env],
            "default_tools_approval_mode": "approve",
        }
        return {TOKEN_ENV: minted.token}, {f"mcp_servers.{TOOLS_SERVER}": server}

    async def _tools_ready(self) -> None:
        """Codex offers an MCP server's tools only once it is ready: wait for that (or
        its failure, or the bound) before the first turn."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.host.settings.tools_ready_seconds):
                await self._tools_state.wait()

    async def _deliver_left_over(self, client: Any, thread_id: str) -> None:
        """WRK-6: the last turn of the task's previous thread, when it completed, is
        delivered with its own turn id - once: a turn delivered before replays and
        changes nothing (TRN-9); a turn cut by the crash never completed and is skipped."""
        try:
            answer = await client.thread_read(thread_id, include_turns=True)
        except Exception:
            return  # the thread is not on this machine: nothing to recover here
        thread = answer.get("thread") if isinstance(answer, dict) else None
        turns = thread.get("turns") if isinstance(thread, dict) else None
        if not isinstance(turns, list) or not turns or not isinstance(turns[-1], dict):
            return
        last = turns[-1]
        turn_id = last.get("id")
        if last.get("status") != "completed" or not isinstance(turn_id, str):
            return
        texts = [
            str(item.get("text"))
            for item in last.get("items") or []
            if isinstance(item, dict)
            and item.get("type") == "agentMessage"
            and isinstance(item.get("text"), str)
        ]
        with contextlib.suppress(TurnIdReused):
            report = await self._call(
                deliver_turn,
                MESSAGE_SEPARATOR.join(texts),
                sender=self.task_id,
                outcome="completed",
                ports=self.host.ports,
                locale=self.host.settings.locale,
                turn_id=turn_id,
                cancel=self._halt,
            )
            self._emit(
                "delivered",
                turn_id=turn_id,
                blocks=len(report.entries),
                replayed=bool(report.replayed),
                recovered=True,
            )

    # ---- turns ------------------------------------------------------------------------

    async def _advance_turn(self) -> None:
        """A goal round without follow-ups is a new turn too (TOL-4)."""
        self.turn += 1
        await self._call(
            self.host.store.transition_task,
            self.task_id,
            "running",
            TaskChange(turn=self.turn),
        )

    async def _start_turn(self, text: str) -> str | None:
        assert self.worker is not None
        task = self.task
        try:
            turn_id = await self.worker.start_turn(text, model=task.model, effort=task.effort)
        except Exception as exc:
            if self.cancelled:
                self._emit("cancelled")
                return None
            await self._fail(None, msg("worker.app_server_failed", detail=str(exc)), None)
            return None
        self._emit("turn_started", turn=self.turn, turn_id=turn_id, pgid=self.pgid)
        self.worker.flush_early_end()
        return turn_id

    async def _await_turn(self, turn_id: str) -> tuple[str, Any, str | None]:
        """(why it ended: end / request / cancel / stop / exit, status or reason, reply)."""
        assert self.worker is not None
        request: Any = None
        while True:
            kind, value = await self._signals.get()
            if kind == "end":
                tid, status, reply = value
                if tid != turn_id:
                    continue
                if request is not None:
                    return "request", request, reply
                if self.stopping and status != "completed":
                    return "stop", status, reply
                return "end", status, reply
            if kind == "request" and request is None:
                request = msg("worker.request_declined", request=value[0], summary=value[1])
                await self._interrupt()
            elif kind == "cancel":
                await self._kill()
                return "cancel", None, None
            elif kind == "stop":
                await self._interrupt()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(_STOP_WAIT):
                        await self.worker.turn_over(_STOP_WAIT)
                # the turn/completed signal (if any) is still queued: read it next
            elif kind == "exit":
                if self.cancelled:
                    return "cancel", None, None
                if request is not None:
                    return "request", request, None
                if self.stopping:
                    return "stop", None, None
                return "exit", None, str(value)

    async def _interrupt(self) -> None:
        assert self.worker is not None
        with contextlib.suppress(Exception):
            async with asyncio.timeout(_INTERRUPT_WAIT * 4):
                await self.worker.interrupt()

    async def _kill(self) -> None:
        """WRK-5: interrupt briefly, then end the whole process group."""
        worker = self.worker
        if worker is None:
            return
        with contextlib.suppress(Exception):
            async with asyncio.timeout(_INTERRUPT_WAIT):
                await worker.interrupt()
        client = worker.client
        if client is not None:
            client.signal(signal.SIGKILL)
        await worker.close(grace=1.0)

    # ---- notifications ----------------------------------------------------------------

    def _on_raw(self, raw: str) -> None:
        if '"item/completed"' in raw and '"agentMessage"' in raw:
            params = _params(raw)
            item = params.get("item")
            turn = params.get("turnId")
            if isinstance(item, dict) and isinstance(turn, str):
                text = item.get("text")
                if isinstance(text, str):
                    self._texts.setdefault(turn, []).append(text)
        elif '"thread/tokenUsage/updated"' in raw:
            params = _params(raw)
            turn = params.get("turnId")
            usage = params.get("tokenUsage")
            last = usage.get("last") if isinstance(usage, dict) else None
            if isinstance(turn, str) and isinstance(last, dict):
                self._usage[turn] = TokenUsage(
                    input=_count(last.get("inputTokens")),
                    cached_input=_count(last.get("cachedInputTokens")),
                    output=_count(last.get("outputTokens")),
                    total=_count(last.get("totalTokens")),
                )
        elif '"turn/completed"' in raw and '"error"' in raw:
            turn = _params(raw).get("turn")
            error = turn.get("error") if isinstance(turn, dict) else None
            text = error.get("message") if isinstance(error, dict) else None
            if isinstance(turn, dict) and isinstance(text, str) and text.strip():
                self._errors[str(turn.get("id"))] = " ".join(text.split())[:500]
        elif '"mcpServer/startupStatus/updated"' in raw:
            params = _params(raw)
            if params.get("name") == TOOLS_SERVER and params.get("status") in (
                "ready",
                "failed",
                "cancelled",
            ):
                self.tools_status = str(params.get("status"))
                self._tools_state.set()
        elif '"thread/started"' in raw:
            thread = _params(raw).get("thread")
            model = thread.get("model") if isinstance(thread, dict) else None
            if isinstance(model, str) and self._model is None:
                self._model = model

    # ---- ends -------------------------------------------------------------------------

    def _cost(self, turn_id: str) -> TurnCost:
        usage = self._usage.pop(turn_id, TokenUsage())
        return self.host.settings.prices.cost(self._model or self.task.model, usage)

    async def _record_cost(self, turn_id: str, cost: TurnCost) -> None:
        """A turn that is not the task's last: its cost row and quota charge (WRK-8)."""
        store = self.host.store
        rows = await self._call(store.task_costs, self.task_id)
        number = max((r.round for r in rows), default=0) + 1
        await self._call(store.record_cost, cost.row(self.task_id, number))
        if cost.priced and cost.usd is not None and self.task.created_by:
            await self._call(store.charge_quota, self.task.created_by, cost.usd)

    async def _finish(self, turn_id: str | None, **kw: Any) -> None:
        self.closing = True
        await self._call(
            self.host.store.finish_turn,
            self.task_id,
            turn_id or f"markertools-host-{self.host.settings.host}-{self.turn}",
            **kw,
        )

    async def _complete(self, turn_id: str, reply: str | None, cost: TurnCost) -> None:
        await self._finish(turn_id, outcome="completed", result_text=reply or "", cost=cost)
        self._emit("finished", status="completed", turn=self.turn)

    async def _fail(self, turn_id: str | None, reason: Any, cost: TurnCost | None) -> None:
        text = reason.render(self.host.settings.locale)
        await self._finish(turn_id, outcome="failed", error_text=text, cost=cost)
        self._emit("finished", status="failed", reason=text)

    async def _finish_cut(self, turn_id: str, outcome: str, reason: Any, cost: TurnCost) -> None:
        text = None if reason is None else reason.render(self.host.settings.locale)
        await self._finish(turn_id, outcome=outcome, error_text=text, cost=cost)
        if text is not None:
            await self._call(
                self.host.store.transition_task,
                self.task_id,
                "interrupted",
                TaskChange(interrupted_reason=text),
            )
        if outcome != "cancelled":
            self._emit("finished", status="interrupted", reason=text)

    async def _checkpoint(self, round_no: int, turn_id: str) -> None:
        record = getattr(self.host.store, "record_checkpoint", None)
        if callable(record):
            await self._call(
                record,
                self.task_id,
                round_no,
                thread_id=self.thread_id,
                turn_id=turn_id,
                now=time.time(),
            )

    async def _requeue(self, turn_id: str, cost: TurnCost) -> None:
        """WRK-1: the host stops - the cut turn is not delivered; the task is requeued
        as a platform interruption (ATT-2) with its cost kept."""
        self.closing = True
        await self._record_cost(turn_id, cost)
        current = await self._call(self.host.store.get_task, self.task_id)
        kind = (
            "goal_breakpoint" if current is not None and is_goal_task(current) else "platform_fresh"
        )
        rounds = await self._call(self.host.store.task_costs, self.task_id)
        result = await self._call(
            self.host.store.requeue_platform,
            self.task_id,
            "running",
            kind,
            len(rounds),
            time.time(),
        )
        self._emit("requeued", reason="host stopping", ok=bool(result.ok))


def _params(raw: str) -> dict[str, Any]:
    try:
        message = json.loads(raw)
    except ValueError:
        return {}
    params = message.get("params") if isinstance(message, dict) else None
    return params if isinstance(params, dict) else {}


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


__all__ = ["TaskRun"]
