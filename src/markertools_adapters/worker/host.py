# Owns: `WorkerHost`, one asyncio worker host (WRK-1, WRK-5, WRK-6): ONE `Background`
# (a TaskGroup) owns all its background work - the claim loop (due automations, expired
# leases, claims up to `max_concurrent`), one `TaskRun` per claimed task, lease renewal
# and the cancel watch - and `stop()` (SIGTERM / SIGINT): claim nothing more, let
# running turns end within the grace period, then interrupt and requeue the rest.
#
# Store calls block, so each runs in a worker thread (`asyncio.to_thread`): a delivery
# that waits (wait-threads, task-poll) never stops the other tasks of the host.
#
# Invariants:
#   Rule 1: at most `max_concurrent` runs at once; nothing is claimed once stopping.
#   Rule 2: a run's task that is no longer `running` (cancelled elsewhere) while the run
#           has not ended it itself is cancelled within one watch period (a short poll on
#           SQLite, LISTEN/NOTIFY wake-ups on PostgreSQL).
#   Rule 3: `run()` returns only after every run has ended and every child finished.
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, Final

from markertools import Claim, Ports, fire_due_automations, is_goal_task
from markertools_adapters._background import Background
from markertools_adapters.worker.events import EventSink, HostEvent
from markertools_adapters.worker.leases import Leases
from markertools_adapters.worker.run import TaskRun
from markertools_adapters.worker.settings import WorkerSettings

_log = logging.getLogger("markertools.worker")
_WATCH_SQLITE: Final[float] = 0.2  # seconds between cancel polls without a waiter
_WATCH_WAIT: Final[float] = 1.0  # longest LISTEN wait of the cancel watch
_IDLE_SCAN: Final[int] = 1000  # queued tasks looked at to decide a host is idle


class WorkerHost:
    """`await WorkerHost(settings, store).run()`; `stop()` from a signal handler."""

    def __init__(
        self,
        settings: WorkerSettings,
        store: Any,
        *,
        ports: Ports | None = None,
        sinks: Iterable[EventSink] = (),
    ) -> None:
        self.settings = settings
        self.store = store
        self.ports: Ports = ports if ports is not None else store.ports
        self.leases = Leases(store, settings.host, settings.machine, settings.lease_seconds)
        self.runs: dict[str, TaskRun] = {}
        self.stopping = False
        self.sinks: list[EventSink] = list(sinks)
        self._wake: asyncio.Event | None = None
        self._bg: Background | None = None
        self.claimed = 0

    # ---- events and control ---------------------------------------------------------

    def emit(self, event: HostEvent) -> None:
        for sink in self.sinks:
            try:
                sink(event)
            except Exception:  # a watcher's failure never stops the tasks
                _log.exception("worker event sink failed")

    def stop(self) -> None:
        """Claim nothing more; the claim loop then lets turns end (grace), then stops them."""
        self.stopping = True
        self._poke()

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def run_ended(self, run: TaskRun) -> None:
        self.runs.pop(run.task_id, None)
        self._poke()

    # ---- the host ---------------------------------------------------------------------

    async def run(self) -> int:
        """Run until idle (`until_idle`) or stopped; returns the exit code (0)."""
        self._wake = asyncio.Event()
        self._bg = Background(f"worker host {self.settings.host}", on_fault=self._fault)
        await self._bg.start()
        try:
            self._bg.spawn(self._renew_leases(), name="lease renewal")
            self._bg.spawn(self._watch_cancels(), name="cancel watch")
            loop = self._bg.spawn(self._claim_loop(), name="claim loop")
            if loop is not None:
                await loop
        finally:
            for run in list(self.runs.values()):
                run.stop()
            await self._wait_runs(self.settings.grace_seconds + 10)
            await self._bg.close()
        return 0

    def _fault(self, name: str, exc: BaseException) -> None:
        _log.error("worker host %s: %s failed: %s", self.settings.host, name, exc)
        if name == "claim loop":
            self.stopping = True

    async def _call(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kw)

    async def _claim_loop(self) -> None:
        settings = self.settings
        last_recover = -1e18
        while not self.stopping:
            now = time.time()
            try:
                await self._call(fire_due_automations, self.ports, now)
            except Exception:
                _log.exception("firing due automations failed")
            if self.leases.enabled and now - last_recover >= settings.lease_seconds / 2:
                last_recover = now
                await self._recover(now)
            while len(self.runs) < settings.max_concurrent and not self.stopping:
                claim = await self._call(self._claim)
                if claim is None:
                    break
                self._start(claim)
            if settings.until_idle and not self.runs and await self._call(self._idle):
                return
            await self._sleep(settings.poll_seconds)
        await self._wait_runs(settings.grace_seconds)
        for run in list(self.runs.values()):
            run.stop()
        await self._wait_runs(settings.grace_seconds + 10)

    async def _sleep(self, seconds: float) -> None:
        assert self._wake is not None
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._wake.wait()

    async def _wait_runs(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while self.runs and time.monotonic() < deadline:
            await self._sleep(min(0.5, deadline - time.monotonic()))

    def _claim(self) -> Claim | None:
        settings = self.settings
        if self.leases.enabled:
            claim: Claim | None = self.store.claim_task(
                settings.project,
                settings.host,
                now=time.time(),
                lease_seconds=settings.lease_seconds,
            )
        else:
            claim = self.store.claim_task(settings.project, settings.host)
        return claim

    def _start(self, claim: Claim) -> None:
        assert self._bg is not None
        run = TaskRun(self, claim)
        self.runs[run.task_id] = run
        self.claimed += 1
        self.emit(HostEvent("claimed", run.task_id, details={"start": str(claim.start)}))
        if self._bg.spawn(run.run(), name=f"task {run.task_id}") is None:
            self.runs.pop(run.task_id, None)

    def _idle(self) -> bool:
        """No queued or running task is left - a queued task whose creator is over quota
        waits for a person, not for this host (WRK-8), so it does not count."""
        listing = self.store.list_tasks(self.settings.project, status=None, q=None, limit=1)
        counts: dict[str, int] = dict(listing.counts)
        if counts.get("running", 0) or not counts.get("queued", 0):
            return not counts.get("running", 0)
        queued = self.store.list_tasks(
            self.settings.project, status="queued", q=None, limit=_IDLE_SCAN
        ).rows
        return len(queued) < _IDLE_SCAN and all(self._held(task.created_by) for task in queued)

    def _held(self, user: str | None) -> bool:
        quota = self.store.get_quota(user) if user else None
        return (
            quota is not None and quota.total_usd is not None and quota.used_usd >= quota.total_usd
        )

    # ---- cancels and leases -----------------------------------------------------------

    async def _watch_cancels(self) -> None:
        waiter = self.ports.waiter
        while True:
            ids = [i for i, r in self.runs.items() if not r.closing and not r.cancelled]
            if ids:
                for task_id in await self._call(self._gone, ids):
                    run = self.runs.get(task_id)
                    if run is not None and not run.closing:
                        run.cancel()
            if waiter is not None and ids:
                await self._call(waiter.wait_for_change, ids, _WATCH_WAIT)
            else:
                await asyncio.sleep(_WATCH_SQLITE)

    def _gone(self, ids: list[str]) -> list[str]:
        """Which of these tasks are no longer running (cancelled elsewhere)."""
        among = getattr(self.store, "cancelled_among", None)
        if callable(among):
            return list(among(ids))
        tasks = self.store.get_tasks(ids)
        return [i for i in ids if tasks.get(i) is None or tasks[i].status != "running"]

    async def _renew_leases(self) -> None:
        if not self.leases.enabled:
            return
        period = max(self.settings.lease_seconds / 3, 0.05)
        while True:
            ids = [i for i, r in self.runs.items() if not r.closing]
            if ids:
                try:
                    held = set(await self._call(self.leases.renew, ids, time.time()))
                except Exception:
                    _log.exception("renewing leases failed")
                    held = set(ids)
                for task_id in ids:  # requeued by another host meanwhile: stop at once
                    run = self.runs.get(task_id)
                    if task_id not in held and run is not None and not run.closing:
                        self.emit(HostEvent("lease_expired", task_id, details={"host": None}))
                        run.cancel()
            await asyncio.sleep(period)

    async def _recover(self, now: float) -> None:
        """WRK-6: requeue the tasks whose lease expired (their host is gone)."""
        try:
            expired = await self._call(self.leases.expired, self.settings.project, now)
        except Exception:
            _log.exception("reading expired leases failed")
            return
        for lease in expired:
            task_id = str(lease.task_id)
            if task_id in self.runs:
                continue
            self.emit(HostEvent("lease_expired", task_id, details={"host": lease.host}))
            task = await self._call(self.store.get_task, task_id)
            goal = task is not None and is_goal_task(task)
            checkpoint = 0
            last = getattr(self.store, "last_checkpoint", None)
            if goal and callable(last):
                point = await self._call(last, task_id)
                checkpoint = int(getattr(point, "round", 0) or 0) if point is not None else 0
            try:
                result = await self._call(
                    self.leases.recover,
                    lease,
                    now,
                    affinity_seconds=self.settings.affinity_seconds,
                    kind="goal_breakpoint" if goal else "platform_fresh",
                    checkpoint_round=checkpoint,
                )
            except Exception:
                _log.exception("requeueing %s failed", task_id)
                continue
            if getattr(result, "ok", bool(result)):
                self.emit(HostEvent("requeued", task_id, details={"reason": "lease expired"}))
