# Owns: how a task run ends its task and pays for its turns (WRK-1, WRK-4, WRK-7, WRK-8,
# FLT-1, FLT-2): completed with the final message (bounded in the store, the whole text
# in the task's directory), failed, interrupted with the reason, cancelled, requeued when
# the host stops (the cause in the ledger row); every turn's cost row and quota charge
# once per turn id (`charge_turn`, or `finish_turn` for the last); goal checkpoints.
#
# Must never: write without the run's claim - except the cost of a turn of a task
# cancelled under this claim (it left `running`, so no claim holds it), and only while
# no other claim has taken it.
from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any, Final

from markertools import LeaseLost, TaskChange, TurnCost, is_goal_task
from markertools_adapters.worker._base import RunBase

RESULT_TEXT_CHARS: Final[int] = 200_000  # what the store keeps of a final message
RESULT_FILE: Final[str] = ".markertools-result.txt"  # the whole of a longer one

_log = logging.getLogger("markertools.worker")


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


class RunEnds(RunBase):
    """The ends of a run (see the module header)."""

    async def _charge(self, turn_id: str, cost: TurnCost) -> None:
        """A turn that is not the task's last: its cost row and quota charge, once per
        turn id in one transaction (WRK-8, FLT-2)."""
        store = self.host.store
        charge = getattr(store, "charge_turn", None)
        if callable(charge):
            await self.db.claimed(charge, self.task_id, turn_id, cost)
            return
        rows = await self.db.read(store.task_costs, self.task_id)
        number = max((r.round for r in rows), default=0) + 1
        await self.db.read(store.record_cost, cost.row(self.task_id, number))
        if cost.priced and cost.usd is not None and self.task.created_by:
            await self.db.read(store.charge_quota, self.task.created_by, cost.usd)

    async def _charge_cancelled(self, turn_id: str, cost: TurnCost) -> None:
        """A turn of a task cancelled between turns under this claim: its cost only."""
        current = await self.db.read(self.host.store.get_task, self.task_id)
        if current is not None and current.epoch == self.claim.epoch:
            await self.db.read(self.host.store.charge_turn, self.task_id, turn_id, cost)

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
        if not cancelled:
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


__all__ = ["RESULT_FILE", "RESULT_TEXT_CHARS", "RunEnds", "bounded_result"]
