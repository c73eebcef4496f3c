# Owns: how a task run delivers and what its agent reads (WRK-4, WRK-6, FLT-1, FLT-2,
# FLT-5): every completed turn delivered with its turn id and the run's claim (again,
# same turn id, when the store could not finish it); waiting outside the run slots while
# a delivery waits, with the idle agent process parked and its session resumed after;
# the turns an earlier attempt left half-delivered completed first, and a killed host's
# completed-but-undelivered last turn; the first input (prompt and injections, with the
# recovered reports in the preamble) and the next inputs (the follow-ups).
#
# Must never: deliver without the claim; hold a run slot while a delivery waits (unless
# `max_waiting` is reached); let the agent read a recovered report twice.
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Final, TypeVar

import attrs

from markertools import (
    DeliveryReport,
    Ports,
    StartKind,
    TaskChange,
    TurnIdReused,
    deliver_turn,
    msg,
    recover_pending_turns,
)
from markertools_adapters.errors import OperationFailed
from markertools_adapters.first_turn import first_turn_prompt
from markertools_adapters.worker._base import RunBase
from markertools_adapters.worker._waiting import DeliveryWaiter

GOAL_PREFIX: Final[str] = "/goal "
_DELIVERY_TRIES: Final[int] = 3  # a delivery the store answers but cannot finish
T = TypeVar("T")

_log = logging.getLogger("markertools.worker")


class RunDelivery(RunBase):
    """Delivery, waiting and inputs of a run (see the module header)."""

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
        report: DeliveryReport = await self._delivering(
            deliver_turn,
            text,
            sender=self.task_id,
            outcome="completed",
            locale=self.host.settings.locale,
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
        more, stop the idle agent process (resumed before the next turn). Cancelled when
        the delivery ends."""
        await self._wait_began.wait()
        if not self.host.may_wait():  # max_waiting reached: keep the slot
            return
        self.waiting = True
        self.host.waiting_changed(self)
        self._emit("waiting", turn=self.turn)
        park = self.host.settings.park_seconds
        if park is None or self.engine is None:
            return
        await asyncio.sleep(park)
        engine = self.engine
        if engine is None or not engine.alive:
            return
        self.parked = True
        self._emit("parked", turn=self.turn)
        try:
            await asyncio.shield(engine.close(2.0))
        except Exception as exc:  # a failed stop leaves it running: no harm
            _log.warning("stopping the idle agent of %s failed: %s", self.task_id, exc)

    async def _wait_over(self) -> None:
        """The delivery stopped waiting: take a run slot again (FLT-5), forget what it
        waited for, and bring a parked agent back with its session."""
        clear = getattr(self.host.store, "clear_awaited", None)
        if callable(clear):
            try:
                await asyncio.to_thread(clear, self.task_id)
            except Exception as exc:  # a stale mark only costs claim order
                _log.debug("clearing what %s waited for failed: %s", self.task_id, exc)
        if self.waiting:
            await self.host.resume_slot(self)
            self.waiting = False
            self.host.waiting_changed(self)
        if self.parked and self.lost is None and not self.cancelled and self.engine is not None:
            self.parked = False
            await self.engine.start()
            await self._record_group()
            if await self._open(self.thread_id) is None:
                raise OperationFailed(f"session {self.thread_id} could not be resumed after waiting")

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

    async def _deliver_left_over(self, session: str) -> tuple[str, ...]:
        """WRK-6: the last turn of the task's previous session, when it completed before
        its delivery began, is delivered with its own turn id - once: a turn delivered
        before replays and changes nothing (TRN-9); a turn cut by the crash never
        completed and is skipped. Its report message, if any, for the first input."""
        assert self.engine is not None
        last = await self.engine.last_turn(session)
        if last is None:
            return ()
        turn_id, text = last
        try:
            report = await self._deliver_once(text, turn_id)
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
        """The first turn's input and the session to resume (None: a new one). Reports
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


__all__ = ["GOAL_PREFIX", "RunDelivery"]
