# Owns: `TaskRun`, one claimed task on its coding agent (WRK-2..5, WRK-7, WRK-8,
# FLT-1..5, ENG-2): its directory, its engine (`engine.py`'s port: Codex or Claude Code,
# each in its own process group), its session (started, or resumed for a continuation or
# a goal checkpoint), its turns - the turns an earlier attempt left half-delivered first,
# then the first turn's input, each completed turn delivered with its turn id
# (`_delivery.py`), the next turn's input taken from the task's follow-up queue - the
# agent's approval requests (declined today: WRK-3), and the end of the task
# (`_ends.py`).
#
# Invariants:
#   Rule 1: only a completed turn is delivered, once, with its turn id (TRN-9); a turn
#           cut by a request, a cancel or a stop is never delivered.
#   Rule 2: an approval or input request is declined, the turn interrupted and the task
#           ended `interrupted` with the request named.
#   Rule 3: a cancel ends the process group at once; the task keeps the status the
#           cancel gave it.
#   Rule 4: `closing` is set before this run changes its task's status itself, so the
#           host's cancel watch never mistakes the run's own ending for a cancel.
#   Rule 5 (FLT-1): every write carries the run's claim (`RunStore`); LeaseLost, or the
#           host telling it the lease is gone (`lose`), stands the run down at once: the
#           turn is interrupted, the process group ended, nothing more written, a
#           `lease_lost` event emitted.
from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from typing import Any, Final

from markertools import (
    Claim,
    InvalidArgument,
    LeaseLost,
    StartKind,
    TaskChange,
    is_goal_task,
    mint_task_token,
    msg,
)
from markertools_adapters._outage import OutageTooLong
from markertools_adapters.worker._approvals import RunApprovals
from markertools_adapters.worker._base import RunOwner
from markertools_adapters.worker._delivery import RunDelivery
from markertools_adapters.worker._ends import RESULT_FILE, RESULT_TEXT_CHARS, RunEnds
from markertools_adapters.worker._runstore import RunStore
from markertools_adapters.worker._tools import call_tool, tool_description, tool_names, tool_schema
from markertools_adapters.worker.claude_engine import ClaudeEngine
from markertools_adapters.worker.codex_engine import CodexEngine
from markertools_adapters.worker.dirs import local_repo, prepare_task_dir
from markertools_adapters.worker.engine import Engine, TaskTools, TurnEnd

_STOP_WAIT: Final[float] = 5.0
# ENG-1: the engine adapters by name (engine.ENGINES), each built with the same arguments
ENGINE_CLASSES: Final[dict[str, type[CodexEngine] | type[ClaudeEngine]]] = {
    "codex": CodexEngine,
    "claude-code": ClaudeEngine,
}

_log = logging.getLogger("markertools.worker")


class _Ended(Exception):
    """The run is over (its task's end already written, or nothing more to write)."""


class TaskRun(RunDelivery, RunEnds, RunApprovals):
    """Run one claimed task to its end; `cancel()`, `stop()` and `lose()` may come at any
    time. It is its engine's `EngineEvents`."""

    def __init__(self, host: RunOwner, claim: Claim) -> None:
        self.host = host
        self.claim = claim
        self.task = claim.task
        self.task_id = claim.task.id
        self.turn = claim.task.turn
        self.started_at = time.time()
        self.closing = False
        self.cancelled = False
        self.stopping = False
        self.lost = None  # FLT-1: why this run lost its claim
        self.waiting = False  # FLT-5: a delivery of this run waits (no run slot held)
        self.parked = False  # FLT-5: its agent process was stopped while it waited
        self.thread_id = None
        self.pgid: int | None = None
        self.db = RunStore(host.store, claim, host.outage)
        self.engine = None
        self.tools_status: str | None = None
        self._directory = ""
        self._loop = None
        self._signals: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._halt = threading.Event()  # stops a delivery's waits (cancel, stop, lost)
        self._halted_event = asyncio.Event()  # the same, for the run's own awaits (approvals)
        self._wait_began = asyncio.Event()

    # ---- control from the host ------------------------------------------------------

    def cancel(self) -> None:
        """The task was cancelled elsewhere (WRK-5)."""
        if not self.cancelled and not self.closing and self.lost is None:
            self.cancelled = True
            self._halt.set()
            self._halted_event.set()
            self._signals.put_nowait(("cancel", None))

    def stop(self) -> None:
        """The host's grace period is over: interrupt and requeue (WRK-1)."""
        if not self.stopping:
            self.stopping = True
            self._halt.set()
            self._halted_event.set()
            self._signals.put_nowait(("stop", None))

    def lose(self, why: str) -> None:
        """FLT-1: the claim no longer holds the task (the lease was not renewed, or
        another claim holds it): stand down at once, write nothing more."""
        if self.lost is None:
            self.lost = why
            self._halt.set()
            self._halted_event.set()
            self._signals.put_nowait(("lost", why))

    # ---- EngineEvents -----------------------------------------------------------------

    def turn_ended(self, end: TurnEnd) -> None:
        self._signals.put_nowait(("end", end))

    def exited(self, detail: str) -> None:
        self._signals.put_nowait(("exit", detail))

    def tools_ready(self, status: str) -> None:
        self.tools_status = status

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
            if self.engine is not None:
                if self.cancelled:
                    await self._kill()  # WRK-5: never a graceful wait for a cancelled task
                await self.engine.close(1.0)
            self.host.run_ended(self)

    async def _stand_down(self) -> None:
        """Rule 5: interrupt, end the process group, log; no store write."""
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
        self.engine = self._make_engine(await self._tools())
        try:
            await self.engine.start()
            await self._record_group()
            if self.claim.start is StartKind.RESUME and self.task.thread_id:
                recovered = (*recovered, *await self._deliver_left_over(self.task.thread_id))
            text, resume = await self._first_input(recovered)
            thread = await self._open(resume)
            if thread is None:  # the old session is gone: a new one, told what happened
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

    def _engine_name(self) -> str:
        """ENG-1: the task's own `engine` when it names one, else the host's."""
        return getattr(self.task, "engine", None) or self.host.settings.engine

    def _make_engine(self, tools: TaskTools | None) -> Engine:
        """ENG-1: the engine adapter of `_engine_name()`."""
        name = self._engine_name()
        engine = ENGINE_CLASSES.get(name)
        if engine is None:
            raise InvalidArgument(f"engine {name!r} is not one of {', '.join(ENGINE_CLASSES)}")
        return engine(
            self.host.settings,
            directory=self._directory,
            env={},
            task_model=self.task.model,
            effort=self.task.effort,
            tools=tools,
            events=self,
        )

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
            reason, end, detail = await self._await_turn(turn_id)
            assert self.engine is not None
            cost = end.cost if end is not None else self.engine.cost_so_far(turn_id)
            status = end.status if end is not None else None
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
                await self._finish_cut(turn_id, "interrupted", detail, cost)
                return
            if reason == "exit" or status == "failed":
                if reason == "exit":
                    why = msg("worker.app_server_exited", detail=str(detail or ""))
                else:
                    assert end is not None
                    why = msg("worker.turn_failed", detail=end.error or "failed")
                await self._fail(turn_id, why, cost)
                return
            assert end is not None
            if status != "completed":
                await self._finish_cut(
                    turn_id, "interrupted", msg("worker.turn_interrupted", detail=status), cost
                )
                return
            current = await self.db.read(host.store.get_task, self.task_id)
            goal = current is not None and is_goal_task(current)
            report = await self._deliver(end.text, turn_id)
            if report is None:
                return
            self._emit("delivered", turn=self.turn, turn_id=turn_id, blocks=len(report.entries))
            if goal:
                goal_rounds += 1
                phrase = msg("worker.goal_phrase").render(settings.locale)
                await self._checkpoint(goal_rounds, turn_id)
                if phrase in (end.reply or ""):
                    await self._complete(turn_id, end.reply, cost)
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
                await self._charge_cancelled(turn_id, cost)
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
            await self._complete(turn_id, end.reply, cost)
            return

    # ---- the engine -------------------------------------------------------------------

    async def _tools(self) -> TaskTools | None:
        """WRK-9, TOL-10: the task's tools for its sessions, served by the host - answered
        in the host's own process (`call`, for an engine that serves tools in-process),
        and for Codex the host's loopback HTTP server (`url`) with a token bound to this
        task as the bearer, which only the thread's configuration carries."""
        settings = self.host.settings
        if not settings.tools:
            return None
        tools = TaskTools(
            names=tool_names(),
            call=self._call_tool,
            schema=tool_schema,
            description=lambda name: tool_description(name, settings.locale),
        )
        url = self.host.tools_url
        if url is not None and self._engine_name() == "codex":
            minted = await self.db.read(
                mint_task_token,
                self.host.store,
                self.task_id,
                now=time.time(),
                token_hex=self.host.ports.random.token_hex,
            )
            tools.url, tools.bearer = url, minted.token
        return tools

    async def _call_tool(self, name: str, arguments: Any, call_id: str | None) -> Any:
        """One same-turn tool call of this task, answered in-process with the claim."""
        return await call_tool(
            name,
            arguments,
            call_id,
            task_id=self.task_id,
            claim=self.claim,
            ports=self.host.ports,
            locale=self.host.settings.locale,
            halt=self._halt,
        )

    async def _open(self, resume: str | None) -> str | None:
        assert self.engine is not None
        return await self.engine.open(resume=resume)

    async def _record_group(self) -> None:
        assert self.engine is not None
        self.pgid = self.engine.pgid
        if self.pgid is not None:
            await self.db.read(self.host.leases.record_group, self.task_id, self.pgid, time.time())

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
        assert self.engine is not None
        try:
            turn_id = await self.engine.start_turn(text)
        except Exception as exc:
            if self.cancelled or self.lost is not None:
                self._emit("cancelled")
                return None
            await self._fail(None, msg("worker.app_server_failed", detail=str(exc)), None)
            return None
        self._emit("turn_started", turn=self.turn, turn_id=turn_id, pgid=self.pgid)
        return turn_id

    async def _await_turn(self, turn_id: str) -> tuple[str, TurnEnd | None, Any]:
        """(why it ended: end / request / cancel / stop / exit / lost, the turn's end when
        it arrived, the request's reason or the exit's detail)."""
        assert self.engine is not None
        request: Any = None
        ended: TurnEnd | None = None
        while True:
            kind, value = await self._signals.get()
            if kind == "lost":
                await self._kill()
                return "lost", ended, None
            if kind == "end":
                if value.turn_id != turn_id:
                    continue
                if request is not None:
                    return "request", value, request
                if self.stopping and value.status != "completed":
                    return "stop", value, None
                return "end", value, None
            if kind == "request" and request is None:
                request = value
                await self.engine.interrupt()
            elif kind == "cancel":
                await self._kill()
                return "cancel", ended, None
            elif kind == "stop":
                await self.engine.interrupt()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(_STOP_WAIT):
                        await self.engine.turn_over(_STOP_WAIT)
                # the turn's end (if any) is still queued: read it next
            elif kind == "exit":
                if self.lost is not None:
                    return "lost", ended, None
                if self.cancelled:
                    return "cancel", ended, None
                if request is not None:
                    return "request", ended, request
                if self.stopping:
                    return "stop", ended, None
                return "exit", ended, value

    async def _kill(self) -> None:
        """WRK-5: end the whole process group at once - a cancelled or lost task gets no
        graceful turn end (waiting for the interrupt's answer cost up to 0.5 s)."""
        engine = self.engine
        if engine is None:
            return
        engine.kill()
        await engine.close(1.0)


__all__ = ["RESULT_FILE", "RESULT_TEXT_CHARS", "TaskRun"]
