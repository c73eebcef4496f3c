# Owns: how a run answers its agent's approval requests (APR-1, WRK-3): `RunApprovals`,
# the run's `EngineEvents.approve`. With `--approvals broker` (the default) a command,
# file-change or permission request becomes a stored request (`approvals.Broker`: rules
# first, then the first answer of a person or an ancestor agent, else declined at
# `--approval-timeout`); while it waits the run holds no run slot (FLT-5) and takes one
# again before the turn goes on; a decline tells the agent why. With `decline`, or for a
# request no broker can carry out (user input, an engine's grant it cannot make), the
# request is declined at once and the turn interrupted (WRK-3).
#
# Must never: approve what the broker did not approve; leave a request pending when the
# run halts (cancel, stop, a lost claim: the wait is cancelled and the broker expires the
# request as withdrawn); hold a run slot while a person decides.
from __future__ import annotations

import asyncio
import contextlib
import shlex
from typing import Any

from markertools import msg
from markertools_adapters.worker._base import RunBase
from markertools_adapters.worker.engine import EngineRequest, Verdict

BROKERED_KINDS = frozenset({"command", "file_change", "permission"})


def _argv(command: str) -> tuple[str, ...]:
    """A command string as the argv it runs (`/bin/bash -lc "..."` as Codex gives it),
    or ("bash", "-lc", STRING) when it does not split (APR-2: rules read either)."""
    try:
        words = tuple(shlex.split(command))
    except ValueError:
        words = ()
    return words or ("bash", "-lc", command)


class RunApprovals(RunBase):
    """The approval side of a run (see the module header)."""

    async def approve(self, request: EngineRequest) -> Verdict:
        host = self.host
        broker = getattr(host, "broker", None)
        if (
            host.settings.approvals != "broker"
            or broker is None
            or not request.brokered
            or request.kind not in BROKERED_KINDS
        ):
            return self._decline_and_interrupt(request)
        ask = self._ask(request)
        await self._release_slot()
        try:
            decision = await self._until_halted(
                broker.decide(ask, timeout=host.settings.approval_timeout)
            )
        finally:
            await self._retake_slot()
        if decision is None:  # the run halted: the broker withdrew the request
            return Verdict(False, msg("worker.approval_withdrawn").render(host.settings.locale))
        return Verdict(decision.approved, None if decision.approved else decision.text(
            host.settings.locale
        ))

    def _decline_and_interrupt(self, request: EngineRequest) -> Verdict:
        """WRK-3: declined, the turn interrupted, the task ended naming the request - and
        why: `--approvals decline`, or a request no broker can carry out."""
        key = (
            "worker.request_declined"
            if self.host.settings.approvals != "broker"
            else "worker.request_not_brokered"
        )
        reason = msg(key, request=request.name, summary=request.summary)
        self._signals.put_nowait(("request", reason))
        return Verdict(False, interrupt=True)

    def _ask(self, request: EngineRequest) -> Any:
        from markertools_adapters.approvals import ApprovalAsk

        command: tuple[str, ...] | None = None
        if request.kind == "command":
            if request.argv:
                command = tuple(request.argv)
            elif request.command:  # the argv the engine runs, else as a shell reads it
                command = _argv(request.command)
        return ApprovalAsk(
            task_id=self.task_id,
            kind=request.kind,
            command=command,
            cwd=request.cwd or self._directory or None,
            paths=tuple(request.paths),
            diff_summary=request.diff,
            reason=request.reason,
        )

    async def _until_halted(self, decide: Any) -> Any:
        """The broker's decision, or None once the run halts first (the decision is
        cancelled: the broker expires the request as withdrawn)."""
        async with asyncio.TaskGroup() as group:
            deciding = group.create_task(decide)
            halted = group.create_task(self._halted_event.wait())
            await asyncio.wait({deciding, halted}, return_when=asyncio.FIRST_COMPLETED)
            if deciding.done():
                halted.cancel()
                return deciding.result()
            deciding.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await deciding
        return None

    async def _release_slot(self) -> None:
        """FLT-5: a person may take long; the run gives its slot back meanwhile."""
        if not self.waiting and self.host.may_wait():
            self.waiting = True
            self.host.waiting_changed(self)

    async def _retake_slot(self) -> None:
        if self.waiting:
            await self.host.resume_slot(self)
            self.waiting = False
            self.host.waiting_changed(self)
