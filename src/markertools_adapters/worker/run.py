# Owns: `TaskRun`, one claimed task on its own `codex app-server` (WRK-2..5, WRK-7,
# WRK-8, FLT-1..5): its directory, its process (the dots supervisor's `CodexWorker`: own
# process group, every approval and input request refused), its thread (started, or
# resumed for a continuation or a goal checkpoint), its turns - first the turns an
# earlier attempt left half-delivered (FLT-2), then the first turn's input with the
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
#           unpriced; priced dollars are charged to the creator's quota - once per turn
#           id (`charge_turn` / `finish_turn`).
#   Rule 5: `closing` is set before this run changes its task's status itself, so the
#           host's cancel watch never mistakes the run's own ending for a cancel.
#   Rule 6 (FLT-1): every write carries the run's claim (`RunStore`); LeaseLost, or the
#           host telling it the lease is gone (`lose`), stands the run down at once: the
#           turn is interrupted, the process group ended, nothing more written, a
#           `lease_lost` event emitted.
#   Rule 7 (FLT-5): while a delivery waits, the run holds no run slot (the host counts
#           it as waiting); an app-server idle that long is stopped (`park_seconds`) and
#           the thread resumed in a new one before the next turn.
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any, Final, Protocol, TypeVar

import attrs

from markertools import (
    Claim,
    DeliveryReport,
    LeaseLost,
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
    recover_pending_turns,
    summarize_error,
)
from markertools_adapters._outage import Outage, OutageTooLong
from markertools_adapters.codex import MESSAGE_SEPARATOR
from markertools_adapters.dots._worker import CodexWorker
from markertools_adapters.first_turn import first_turn_prompt
from markertools_adapters.worker._runstore import RunStore
from markertools_adapters.worker._waiting import DeliveryWaiter
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
_DELIVERY_TRIES: Final[int] = 3  # a delivery the store answers but cannot finish
RESULT_TEXT_CHARS: Final[int] = 200_000  # what the store keeps of a final message
RESULT_FILE: Final[str] = ".markertools-result.txt"  # the whole of a longer one

_log = logging.getLogger("markertools.worker")
T = TypeVar("T")


class RunOwner(Protocol):
    """What a run needs of its host (`WorkerHost`)."""

    settings: WorkerSettings
    store: Any
    ports: Ports
    leases: Leases
    outage: Outage
    stopping: bool

    def emit(self, event: HostEvent) -> None: ...

    def run_ended(self, run: TaskRun) -> None: ...

    def waiting_changed(self, run: TaskRun) -> None: ...

    def may_wait(self) -> bool: ...

    async def resume_slot(self, run: TaskRun) -> None: ...

    def outage_too_long(self, exc: OutageTooLong) -> None: ...


class _Ended(Exception):
    """The run is over (its task's end already written, or nothing more to write)."""


class TaskRun:
    """Run one claimed task to its end; `cancel()`, `stop()` and `lose()` may come at any
    time."""

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
        self.lost: str | None = None  # FLT-1: why this run lost its claim
        self.waiting = False  # FLT-5: a delivery of this run waits (no run slot held)
        self.parked = False  # FLT-5: its app-server was stopped while it waited
        self.thread_id: str | None = None
        self.pgid: int | None = None
        self.db = RunStore(host.store, claim, host.outage)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._signals: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._halt = threading.Event()  # stops a delivery's waits (cancel, stop, lost)
        self._wait_began = asyncio.Event()
        self._texts: dict[str, list[str]] = {}  # turn id -> its agent messages
        self._usage: dict[str, TokenUsage] = {}
        self._errors: dict[str, str] = {}  # turn id -> Codex's error message
        self._tools_state = asyncio.Event()  # the markertools MCP server is up (or failed)
        self.tools_status: str | None = None
        self._tools_config: dict[str, Any] | None = None
        self._directory: str = ""
        self._model: str | None = claim.task.model
        self.worker: CodexWorker | None = None

    # ---- control from the host ------------------------------------------------------

    def cancel(self) -> None:
        """The task was cancelled elsewhere (WRK-5)."""
        if not self.cancelled and not self.closing and self.lost is None:
            self.cancelled = True
            self._halt.set()
            self._signals.put_nowait(("cancel", None))

    def stop(self) -> None:
        """The host's grace period is over: interrupt and requeue (WRK-1)."""
        if not self.stopping:
            self.stopping = True
            self._halt.set()
            self._signals.put_nowait(("stop", None))

    def lose(self, why: str) -> None:
        """FLT-1: the claim no longer holds the task (the lease was not renewed, or
        another claim holds it): stand down at once, write nothing more."""
        if self.lost is None:
            self.lost = why
            self._halt.set()
            self._signals.put_nowait(("lost", why))

    def waiting_on(self, targets: tuple[str, ...]) -> None:
        """FLT-5, from the delivery's thread: the delivery began to wait."""
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(self._wait_began.set)

    # ---- the run ----------------------------------------------------------------------

    async def run(self) -> None:
        self._loop = asyncio.get_running_loop()
        try:
            await self._run()
        except _Ended:
            pass
        except LeaseLost as exc:
            self.lose(str(exc))
        except OutageTooLong as exc:
            self.host.outage_too_long(exc)
            self.closing = True
        finally:
            if self.lost is not None:
                await self._stand_down()
            if self.worker is not None:
                if self.cancelled:
                    await self._kill()  # WRK-5: never a graceful wait for a cancelled task
                await self.worker.close(grace=1.0)
            self.host.run_ended(self)

    def _emit(self, kind: str, **details: Any) -> None:
        self.host.emit(HostEvent(kind, self.task_id, details=details))

    async def _stand_down(self) -> None:
        """Rule 6: interrupt, end the process group, log; no store write."""
        self.closing = True
        await self._kill()
        _log.warning("task %s: %s", self.task_id, self.lost)
        self._emit("lease_lost", epoch=self.claim.epoch, reason=self.lost)

    async def _run(self) -> None:
        host, settings = self.host, self.host.settings
        recovered = await self._recover_pending()
        project = await self.db.read(host.store.get_project, self.task.project_id)
        repo = local_repo(getattr(project, "repo_url", None) or self.task.repo_url)
        try:
            directory = await asyncio.to_thread(
                prepare_task_dir, settings.worktrees, settings.host, self.task_id, repo
            )
        except (OSError, ValueError) as exc:
            await self._fail(None, msg("worker.dir_refused", detail=str(exc)), None)
            return
        self._directory = str(directory)
        if self.task.worktree != self._directory:
            changed = await self.db.fenced(
                host.store.transition_task,
                self.task_id,
                "running",
                TaskChange(worktree=self._directory),
            )
            if changed is not None:
                self.task = changed
        extra_env, self._tools_config = await self._tools()
        self.worker = CodexWorker(
            settings.codex_bin,
            env=settings.child_env(extra_env),
            cwd=self._directory,
            on_raw=self._on_raw,
            on_turn_end=lambda tid, status, reply: self._signals.put_nowait(
                ("end", (tid, status, reply))
            ),
            on_request=lambda kind, summary: self._signals.put_nowait(("request", (kind, summary))),
            on_exit=lambda detail: self._signals.put_nowait(("exit", detail)),
            on_rate_limits=lambda snapshot: None,
            request_timeout=settings.request_timeout,
        )
        try:
            client = await self.worker.ensure()
            await self._record_group(client)
            if self.claim.start is StartKind.RESUME and self.task.thread_id:
                left = await self._deliver_left_over(client, self.task.thread_id)
                recovered = (*recovered, *left)
            text, resume = await self._first_input(recovered)
            thread = await self._open(resume)
            if thread is None:  # the old thread is gone: a new one, told what happened
                text = (await self._fresh_input(StartKind.RESUME, recovered)) + "\n\n" + text
                thread = await self._open(None)
        except (LeaseLost, OutageTooLong, _Ended):
            raise
        except Exception as exc:
            if self.cancelled or self.lost is not None:
                self._emit("cancelled")
                return
            await self._fail(None, msg("worker.app_server_failed", detail=str(exc)), None)
            return
        assert thread is not None
        self.thread_id = thread
        if thread != self.task.thread_id:
            await self.db.fenced(host.store.set_thread_id, self.task_id, thread)
        await self._turns(text)

    async def _turns(self, text: str) -> None:
        host, settings = self.host, self.host.settings
        goal_rounds = 0
        while True:
            if self.cancelled:
                self._emit("cancelled")
                return
            turn_id = await self._start_turn(text)
            if turn_id is None:
                return
            reason, status, reply = await self._await_turn(turn_id)
            cost = self._cost(turn_id)
            self._emit("turn_ended", turn=self.turn, turn_id=turn_id, status=status)
            if reason == "lost":
                raise _Ended
            if reason == "cancel":
                await self._finish_cut(turn_id, "cancelled", None, cost)
                self._emit("cancelled")
                return
            if reason == "stop":
                await self._requeue(turn_id, cost, "the host stopped during the turn")
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
            current = await self.db.read(host.store.get_task, self.task_id)
            goal = current is not None and is_goal_task(current)
            report = await self._deliver(full, turn_id)
            if report is None:
                return
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
                await self._requeue(turn_id, cost, "the host stopped (goal checkpoint)")
                return
            if (self.stopping or host.stopping) and report.queued_followups:
                self.closing = True
                await self.db.claimed(
                    host.store.finish_turn,
                    self.task_id,
                    turn_id,
                    outcome="completed",
                    cost=cost,
                    requeue=True,  # its follow-ups stay queued for the next claim
                )
                self._emit("requeued", reason="host stopping")
                return
            current = await self.db.read(host.store.get_task, self.task_id)
            if current is None or current.status != "running":  # cancelled between turns
                self.closing = True
                if current is not None and current.epoch == self.claim.epoch:
                    await self.db.read(host.store.charge_turn, self.task_id, turn_id, cost)
                self._emit("cancelled")
                return
            followups = await self.db.claimed(host.store.take_followups, self.task_id)
            if followups:
                self.turn += 1  # taking them advanced the task's turn (TOL-4)
                await self._charge(turn_id, cost)
                text = await self._next_input(followups)
                continue
            if goal:
                await self._charge(turn_id, cost)
                await self._advance_turn()
                phrase = msg("worker.goal_phrase").render(settings.locale)
                text = msg("worker.goal_continue", phrase=phrase).render(settings.locale)
                continue
            await self._complete(turn_id, reply, cost)
            return

    # ---- delivering -------------------------------------------------------------------

    def _delivery_ports(self) -> tuple[Ports, DeliveryWaiter]:
        ports = self.host.ports
        mark = getattr(self.host.store, "mark_awaited", None)
        waiter = DeliveryWaiter(
            self.task_id,
            tasks=ports.tasks,
            clock=ports.clock,
            inner=ports.waiter,
            halt=self._halt,
            waiting_on=self.waiting_on,
            mark_awaited=mark if callable(mark) else None,
        )
        return attrs.evolve(ports, waiter=waiter, clock=waiter), waiter

    async def _deliver(self, text: str, turn_id: str) -> DeliveryReport | None:
        """Deliver the completed turn (FLT-1 fenced, FLT-5 waiting outside the run slot);
        a delivery the store could not finish is delivered again (same turn id: nothing
        twice) once the store answers - None when it never could (the task failed)."""
        for attempt in range(1, _DELIVERY_TRIES + 1):
            report = await self._deliver_once(text, turn_id)
            if report.report_queued and (report.delivered or report.not_delivered is None):
                return report
            if (
                not report.delivered
                and report.not_delivered is not None
                and report.not_delivered.code not in ("sender-unreadable", "journal-unreadable")
            ):
                return report  # discarded for good (TRN-10): nothing to deliver again
            why = report.report_error or (
                report.not_delivered.reason.render() if report.not_delivered else "?"
            )
            _log.warning("task %s: delivering turn %s failed: %s", self.task_id, turn_id, why)
            # an outage is ridden out here (OutageTooLong past the budget)
            await self.db.read(self.host.store.get_task, self.task_id)
            if attempt == _DELIVERY_TRIES:
                await self._fail(turn_id, msg("worker.delivery_failed", detail=why), None)
                return None
        return None

    async def _deliver_once(self, text: str, turn_id: str) -> DeliveryReport:
        settings = self.host.settings
        report: DeliveryReport = await self._delivering(
            deliver_turn,
            text,
            sender=self.task_id,
            outcome="completed",
            locale=settings.locale,
            turn_id=turn_id,
            cancel=self._halt,
            claim=self.claim,
        )
        return report

    async def _delivering(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        """`fn(*args, ports=..., **kw)` - a delivery - in a worker thread, with the
        delivery's waiter (FLT-5): while it waits the run holds no slot."""
        ports, waiter = self._delivery_ports()
        self._wait_began.clear()
        try:
            async with asyncio.TaskGroup() as group:  # the watcher never raises
                watcher = group.create_task(self._while_waiting())
                try:
                    result = await asyncio.to_thread(fn, *args, ports=ports, **kw)
                finally:
                    watcher.cancel()
        finally:
            if self.waiting or waiter.waited:
                await self._wait_over()
        return result

    async def _while_waiting(self) -> None:
        """FLT-5: once the delivery waits, give the run slot back; after `park_seconds`
        more, stop the idle app-server (resumed before the next turn). Cancelled when
        the delivery ends."""
        await self._wait_began.wait()
        if not self.host.may_wait():  # max_waiting reached: keep the slot
            return
        self.waiting = True
        self.host.waiting_changed(self)
        self._emit("waiting", turn=self.turn)
        park = self.host.settings.park_seconds
        if park is None or self.worker is None:
            return
        await asyncio.sleep(park)
        if self.worker is None or not self.worker.alive:
            return
        self.parked = True
        self._emit("parked", turn=self.turn)
        try:
            await asyncio.shield(self.worker.close(grace=2.0))
        except Exception as exc:  # a failed stop leaves it running: no harm
            _log.warning("stopping the idle app-server of %s failed: %s", self.task_id, exc)

    async def _wait_over(self) -> None:
        """The delivery stopped waiting: take a run slot again (FLT-5), forget what it
        waited for, and bring a parked app-server back with the thread."""
        clear = getattr(self.host.store, "clear_awaited", None)
        if callable(clear):
            with contextlib.suppress(Exception):
                await asyncio.to_thread(clear, self.task_id)
        if self.waiting:
            await self.host.resume_slot(self)
            self.waiting = False
            self.host.waiting_changed(self)
        if self.parked and self.lost is None and not self.cancelled:
            self.parked = False
            assert self.worker is not None
            client = await self.worker.ensure()
            await self._record_group(client)
            thread = await self._open(self.thread_id)
            if thread is None:
                raise RuntimeError(f"thread {self.thread_id} could not be resumed after waiting")

    async def _recover_pending(self) -> tuple[str, ...]:
        """FLT-2: complete the turns an earlier attempt left half-delivered, first; their
        report messages go into this attempt's first input."""
        if not callable(getattr(self.host.store, "pending_turns", None)):
            return ()
        if not await self.db.read(self.host.store.pending_turns, self.task_id):
            return ()
        done = await self._delivering(recover_pending_turns, self.claim, cancel=self._halt)
        texts: list[str] = []
        for turn in done:
            report = turn.report
            self._emit(
                "delivered",
                turn_id=turn.pending.turn_id,
                blocks=0 if report is None else len(report.entries),
                recovered=True,
            )
            if report is not None and report.message:
                texts.append(report.message)
        return tuple(texts)

    async def _deliver_left_over(self, client: Any, thread_id: str) -> tuple[str, ...]:
        """WRK-6: the last turn of the task's previous thread, when it completed before
        its delivery began, is delivered with its own turn id - once: a turn delivered
        before replays and changes nothing (TRN-9); a turn cut by the crash never
        completed and is skipped. Its report message, if any, for the first input."""
        try:
            answer = await client.thread_read(thread_id, include_turns=True)
        except Exception:
            return ()  # the thread is not on this machine: nothing to recover here
        thread = answer.get("thread") if isinstance(answer, dict) else None
        turns = thread.get("turns") if isinstance(thread, dict) else None
        if not isinstance(turns, list) or not turns or not isinstance(turns[-1], dict):
            return ()
        last = turns[-1]
        turn_id = last.get("id")
        if last.get("status") != "completed" or not isinstance(turn_id, str):
            return ()
        texts = [
            str(item.get("text"))
            for item in last.get("items") or []
            if isinstance(item, dict)
            and item.get("type") == "agentMessage"
            and isinstance(item.get("text"), str)
        ]
        try:
            report = await self._deliver_once(MESSAGE_SEPARATOR.join(texts), turn_id)
        except TurnIdReused:
            return ()
        self._emit(
            "delivered",
            turn_id=turn_id,
            blocks=len(report.entries),
            replayed=bool(report.replayed),
            recovered=True,
        )
        if report.replayed or not report.message:
            return ()
        return (report.message,)

    # ---- inputs -----------------------------------------------------------------------

    async def _first_input(self, recovered: tuple[str, ...]) -> tuple[str, str | None]:
        """The first turn's input and the thread to resume (None: a new thread). Reports
        of recovered turns (FLT-2) are queued follow-ups now: they are taken here, shown
        in the preamble of a fresh start, or as the input of a continuation."""
        claim, task = self.claim, self.task
        later: tuple[str, ...] = ()
        if recovered:
            later = await self.db.claimed(self.host.store.take_followups, self.task_id)
            if later:
                self.turn += 1
        if claim.start is StartKind.CONTINUATION:
            return await self._next_input((*claim.followups, *later)), task.thread_id
        rest = tuple(t for t in later if t not in recovered)
        if claim.start is StartKind.CHECKPOINT and task.thread_id:
            phrase = msg("worker.goal_phrase").render(self.host.settings.locale)
            text = msg("worker.goal_continue", phrase=phrase).render(self.host.settings.locale)
            return "\n\n".join((text, *rest)) if rest else text, task.thread_id
        fresh = await self._fresh_input(claim.start, recovered)
        if rest:
            return "\n\n".join((fresh, await self._next_input(rest))), None
        return fresh, None

    async def _fresh_input(self, start: StartKind, recovered: tuple[str, ...] = ()) -> str:
        prompt = await asyncio.to_thread(
            first_turn_prompt,
            self.task,
            start,
            self.host.ports,
            locale=self.host.settings.locale,
            recovered=recovered,
        )
        return str(prompt.prompt)

    async def _next_input(self, followups: tuple[str, ...]) -> str:
        """Follow-ups in order; a `/goal TEXT` one makes the task a goal task (WRK-7)."""
        for text in followups:
            if text.startswith(GOAL_PREFIX):
                goal = text[len(GOAL_PREFIX) :].strip()
                await self.db.fenced(
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
        minted = await self.db.read(
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

    async def _open(self, resume: str | None) -> str | None:
        """The task's thread in the current app-server: resumed (None when that thread
        cannot be resumed) or started; the tools server waited for."""
        assert self.worker is not None
        self._tools_state.clear()
        try:
            thread = await self.worker.open_thread(
                cwd=self._directory,
                sandbox=SANDBOX,
                model=self.task.model,
                resume=resume,
                config=self._tools_config,
            )
        except Exception:
            if resume is None:
                raise
            return None
        if self._tools_config is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.host.settings.tools_ready_seconds):
                    await self._tools_state.wait()
        return thread

    async def _record_group(self, client: Any) -> None:
        self.pgid = client.pid
        if self.pgid is not None:
            await self.db.read(self.host.leases.record_group, self.task_id, self.pgid, time.time())

    # ---- turns ------------------------------------------------------------------------

    async def _advance_turn(self) -> None:
        """A goal round without follow-ups is a new turn too (TOL-4)."""
        self.turn += 1
        await self.db.fenced(
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
            if self.cancelled or self.lost is not None:
                self._emit("cancelled")
                return None
            await self._fail(None, msg("worker.app_server_failed", detail=str(exc)), None)
            return None
        self._emit("turn_started", turn=self.turn, turn_id=turn_id, pgid=self.pgid)
        self.worker.flush_early_end()
        return turn_id

    async def _await_turn(self, turn_id: str) -> tuple[str, Any, str | None]:
        """(why it ended: end / request / cancel / stop / exit / lost, status, reply)."""
        assert self.worker is not None
        request: Any = None
        while True:
            kind, value = await self._signals.get()
            if kind == "lost":
                await self._kill()
                return "lost", None, None
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
                if self.lost is not None:
                    return "lost", None, None
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

    async def _charge(self, turn_id: str, cost: TurnCost) -> None:
        """A turn that is not the task's last: its cost row and quota charge, once per
        turn id in one transaction (WRK-8, FLT-2)."""
        charge = getattr(self.host.store, "charge_turn", None)
        if callable(charge):
            await self.db.claimed(charge, self.task_id, turn_id, cost)
            return
        rows = await self.db.read(self.host.store.task_costs, self.task_id)
        number = max((r.round for r in rows), default=0) + 1
        await self.db.read(self.host.store.record_cost, cost.row(self.task_id, number))
        if cost.priced and cost.usd is not None and self.task.created_by:
            await self.db.read(self.host.store.charge_quota, self.task.created_by, cost.usd)

    async def _finish(self, turn_id: str | None, *, fenced: bool = True, **kw: Any) -> None:
        """End the task with this turn (`finish_turn`), fenced by the claim - except for
        a task cancelled under this claim (`fenced=False`): it left `running`, so only
        its cost is recorded (the status stays the cancel's) while no other claim has
        taken it."""
        self.closing = True
        finish = self.host.store.finish_turn
        key = (
            turn_id or f"markertools-host-{self.host.settings.host}-{self.claim.epoch}-{self.turn}"
        )
        if fenced:
            await self.db.claimed(finish, self.task_id, key, **kw)
            return
        current = await self.db.read(self.host.store.get_task, self.task_id)
        if current is None or current.epoch != self.claim.epoch:
            raise LeaseLost(
                self.task_id,
                self.claim.epoch,
                getattr(current, "epoch", None),
                getattr(current, "status", None),
            )
        await self.db.read(finish, self.task_id, key, **kw)

    async def _complete(self, turn_id: str, reply: str | None, cost: TurnCost) -> None:
        result = await asyncio.to_thread(bounded_result, reply or "", self._directory)
        await self._finish(turn_id, outcome="completed", result_text=result, cost=cost)
        self._emit("finished", status="completed", turn=self.turn)

    async def _fail(self, turn_id: str | None, reason: Any, cost: TurnCost | None) -> None:
        text = reason.render(self.host.settings.locale)
        await self._finish(turn_id, outcome="failed", error_text=text, cost=cost)
        self._emit("finished", status="failed", reason=text)

    async def _finish_cut(self, turn_id: str, outcome: str, reason: Any, cost: TurnCost) -> None:
        text = None if reason is None else reason.render(self.host.settings.locale)
        cancelled = outcome == "cancelled"
        await self._finish(
            turn_id, fenced=not cancelled, outcome=outcome, error_text=text, cost=cost
        )
        if text is not None:
            await self.db.read(
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
            await self.db.claimed(
                record,
                self.task_id,
                round_no,
                thread_id=self.thread_id,
                turn_id=turn_id,
                now=time.time(),
            )

    async def _requeue(self, turn_id: str, cost: TurnCost, why: str) -> None:
        """WRK-1: the host stops - the cut turn is not delivered; the task is requeued
        as a platform interruption (ATT-2) with its cost kept and the cause in the
        ledger row (FLT-2)."""
        self.closing = True
        await self._charge(turn_id, cost)
        current = await self.db.read(self.host.store.get_task, self.task_id)
        kind = (
            "goal_breakpoint" if current is not None and is_goal_task(current) else "platform_fresh"
        )
        rounds = await self.db.read(self.host.store.task_costs, self.task_id)
        reason = f"host {self.host.settings.host} shut down: {why}"
        result = await self.db.fenced(
            self.host.store.requeue_platform,
            self.task_id,
            "running",
            kind,
            len(rounds),
            time.time(),
            reason=reason,
        )
        self._emit("requeued", reason="host stopping", ok=bool(result.ok))
        if not result.ok:
            _log.warning("task %s was not requeued: %s", self.task_id, result.error)


def bounded_result(text: str, directory: str) -> str:
    """What the store keeps of a task's final message (issue 37): at most
    RESULT_TEXT_CHARS code points - the end of a longer one, after a line saying where
    the whole text is (`RESULT_FILE` in the task's directory, written first)."""
    if len(text) <= RESULT_TEXT_CHARS:
        return text
    where = f"{directory}/{RESULT_FILE}" if directory else "(no task directory)"
    if directory:
        fd = os.open(where, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as out:
            out.write(text)
    note = (
        f"[markertools: the final message has {len(text):,} characters; the store keeps"
        f" its last {RESULT_TEXT_CHARS:,} - the whole text is in {where}]\n"
    )
    return note + text[-RESULT_TEXT_CHARS:]


def _params(raw: str) -> dict[str, Any]:
    try:
        message = json.loads(raw)
    except ValueError:
        return {}
    params = message.get("params") if isinstance(message, dict) else None
    return params if isinstance(params, dict) else {}


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


__all__ = ["TaskRun", "summarize_error"]
