# Owns: `WorkerHost`, one asyncio worker host (WRK-1, WRK-5, WRK-6, FLT-1, FLT-3, FLT-5):
# ONE `Background` (a TaskGroup) owns all its background work - the claim loop (due
# automations, expired leases, claims while a run slot is free), one `TaskRun` per
# claimed task, lease renewal, the cancel watch and, with `tools`, the server of the
# tasks' markertools tools (`_tools_http.HostTools`, TOL-10) - and `stop()` (SIGTERM / SIGINT):
# claim nothing more, let running turns end within the grace period, then interrupt and
# requeue the rest.
#
# Store calls block, so each runs in a worker thread (`asyncio.to_thread`), through the
# host's `Outage` (FLT-3): retried with capped backoff while the store is unavailable;
# past `store_outage_seconds` the host stops and `run()` returns 75.
#
# Invariants:
#   Rule 1 (FLT-5): at most `max_concurrent` runs hold a run slot; a run whose delivery
#           waits holds none (at most `max_waiting` such), and takes a slot again before
#           its next turn - ahead of any new claim. Nothing is claimed once stopping or
#           while the store is out.
#   Rule 2: a run's task that is no longer `running` (cancelled elsewhere) while the run
#           has not ended it itself is cancelled within one watch period (a short poll on
#           SQLite, LISTEN/NOTIFY wake-ups on PostgreSQL); a task another claim holds now
#           (a newer epoch), or whose lease was not renewed, is lost (FLT-1): the run
#           stands down.
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
from markertools_adapters._outage import EX_TEMPFAIL, Outage, OutageTooLong, aretry_call
from markertools_adapters.worker._tools import DEFAULT_MAX_WAIT_SECONDS
from markertools_adapters.worker._tools_http import HostTools
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
        self.leases = Leases(
            store, settings.host, settings.machine, settings.lease_seconds, settings.engine
        )
        self.outage = Outage(
            "the store", settings.store_outage_seconds, on_change=self._outage_changed
        )
        self.runs: dict[str, TaskRun] = {}
        self.stopping = False
        self.exit_code = 0
        self.sinks: list[EventSink] = list(sinks)
        self._wake: asyncio.Event | None = None
        self._slot_free: asyncio.Event | None = None
        self._slot_waiters = 0
        self._bg: Background | None = None
        self._unleased: dict[str, float] = {}  # running, no lease: task id -> first seen
        self.claimed = 0
        self._tools: HostTools | None = None
        self.broker: Any = None  # APR-1: the approval broker (`--approvals broker`)
        self.tools_url: str | None = None  # TOL-10: where this host serves its tasks' tools

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
        if self._slot_free is not None:
            self._slot_free.set()

    def run_ended(self, run: TaskRun) -> None:
        self.runs.pop(run.task_id, None)
        self._poke()

    def _outage_changed(self, began: bool, cause: str) -> None:
        kind = "outage_began" if began else "outage_ended"
        self.emit(HostEvent(kind, "", details={"cause": cause}))

    def outage_too_long(self, exc: OutageTooLong) -> None:
        """FLT-3: the store stayed away past the budget: stop, exit 75."""
        if self.exit_code != EX_TEMPFAIL:
            _log.error("%s; stopping", exc)
        self.exit_code = EX_TEMPFAIL
        self.stop()

    # ---- run slots (FLT-5) ------------------------------------------------------------

    def slots_used(self) -> int:
        return sum(1 for r in self.runs.values() if not r.waiting)

    def waiting_count(self) -> int:
        return sum(1 for r in self.runs.values() if r.waiting)

    def waiting_changed(self, run: TaskRun) -> None:
        self._poke()

    def may_wait(self) -> bool:
        """FLT-5: may one more run wait outside the run slots (`max_waiting`)?"""
        return self.waiting_count() < self.settings.max_waiting

    async def resume_slot(self, run: TaskRun) -> None:
        """Rule 1: a waiting run takes a run slot again (ahead of new claims)."""
        assert self._slot_free is not None
        self._slot_waiters += 1
        try:
            while self.slots_used() >= self.settings.max_concurrent and not run.stopping:
                self._slot_free.clear()
                await self._slot_free.wait()
        finally:
            self._slot_waiters -= 1

    def _may_claim(self) -> bool:
        s = self.settings
        return (
            not self.stopping
            and not self.outage.active
            and self._slot_waiters == 0
            and self.slots_used() < s.max_concurrent
            and len(self.runs) < s.max_concurrent + s.max_waiting
        )

    # ---- the host ---------------------------------------------------------------------

    async def run(self) -> int:
        """Run until idle (`until_idle`) or stopped; returns the exit code: 0, or 75 when
        a store outage outlasted `store_outage_seconds` (FLT-3)."""
        self._wake = asyncio.Event()
        self._slot_free = asyncio.Event()
        self._bg = Background(f"worker host {self.settings.host}", on_fault=self._fault)
        await self._bg.start()
        try:
            if self.settings.approvals == "broker":
                from markertools_adapters.approvals import Broker

                self.broker = Broker(self.store, on_event=self._approval_event)
            if self.settings.tools:
                self._tools = HostTools(
                    self.store,
                    self.ports,
                    locale=self.settings.locale,
                    max_wait_ms=int(DEFAULT_MAX_WAIT_SECONDS * 1000),
                    claim_of=self.claim_of,
                    store_outage_seconds=self.settings.store_outage_seconds,
                )
                self.tools_url = await self._tools.start(self._bg)
            self._bg.spawn(self._renew_leases(), name="lease renewal")
            self._bg.spawn(self._watch_cancels(), name="cancel watch")
            loop = self._bg.spawn(self._claim_loop(), name="claim loop")
            if loop is not None:
                await loop
        finally:
            for run in list(self.runs.values()):
                run.stop()
            await self._wait_runs(self.settings.grace_seconds + 10)
            if self._tools is not None:
                await self._tools.stop()
            await self._bg.close()
            if self.broker is not None:
                self.broker.close()
        return self.exit_code

    def _approval_event(self, event: Any) -> None:
        """APR-4: a request stored or answered becomes a host event (live view,
        `--json-log`: approval_requested / approval_answered)."""
        body = event.json()
        body.pop("event", None)
        task_id = str(body.pop("task_id", ""))
        self.emit(HostEvent(event.name, task_id, details=body))

    def claim_of(self, task_id: str) -> Claim | None:
        """TOL-10, FLT-1: the claim of this host's live run of `task_id` (a tool call of
        its agent is delivered with it), None when the host runs no such task now."""
        run = self.runs.get(task_id)
        if run is None or run.lost is not None:
            return None
        return run.claim

    def _fault(self, name: str, exc: BaseException) -> None:
        if isinstance(exc, OutageTooLong):
            self.outage_too_long(exc)
            return
        _log.error("worker host %s: %s failed: %s", self.settings.host, name, exc)
        if name == "claim loop":
            self.stopping = True
            self.exit_code = self.exit_code or 1

    async def _call(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        return await aretry_call(self.outage, fn, *args, **kw)

    async def _claim_loop(self) -> None:
        try:
            await self._claims()
        except OutageTooLong as exc:  # FLT-3: one line, then the stop below
            self.outage_too_long(exc)
        settings = self.settings
        await self._wait_runs(settings.grace_seconds)
        for run in list(self.runs.values()):
            run.stop()
        await self._wait_runs(settings.grace_seconds + 10)

    async def _claims(self) -> None:
        settings = self.settings
        last_recover = -1e18
        while not self.stopping:
            now = time.time()
            try:
                await self._call(fire_due_automations, self.ports, now)
            except OutageTooLong:
                raise
            except Exception:
                _log.exception("firing due automations failed")
            if self.leases.enabled and now - last_recover >= settings.lease_seconds / 2:
                last_recover = now
                await self._recover(now)
            while self._may_claim():
                claim = await self._call(self._claim)
                if claim is None:
                    break
                self._start(claim)
            if settings.until_idle and not self.runs and await self._call(self._idle):
                return
            await self._sleep(settings.poll_seconds)

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
        self.emit(
            HostEvent(
                "claimed", run.task_id, details={"start": str(claim.start), "epoch": claim.epoch}
            )
        )
        if self._bg.spawn(run.run(), name=f"task {run.task_id}") is None:
            self.runs.pop(run.task_id, None)
            return
        wake = getattr(self.ports.waiter, "wake", None)
        if callable(wake):  # the cancel watch's wait must include the new task (WRK-5)
            wake()

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
            watched = {i: r for i, r in self.runs.items() if not r.closing and not r.cancelled}
            if watched:
                try:
                    rows = await asyncio.to_thread(self.store.get_tasks, list(watched))
                except Exception as exc:  # an outage: the renewal and the runs see it too
                    _log.debug("the cancel watch could not read: %s", exc)
                    rows = None
                for task_id, run in watched.items() if rows is not None else ():
                    task = rows.get(task_id)
                    if run.closing or run.lost is not None:
                        continue
                    if task is not None and task.epoch not in (0, run.claim.epoch):
                        run.lose(
                            f"task {task_id} is held by claim {task.epoch} now (this host's"
                            f" claim {run.claim.epoch} was taken over)"
                        )
                    elif task is None or task.status != "running":
                        run.cancel()
            if waiter is not None and watched:
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(waiter.wait_for_change, list(watched), _WATCH_WAIT)
            else:
                await asyncio.sleep(_WATCH_SQLITE)

    async def _renew_leases(self) -> None:
        if not self.leases.enabled:
            return
        period = max(self.settings.lease_seconds / 3, 0.05)
        while True:
            runs = [r for r in self.runs.values() if not r.closing and r.lost is None]
            if runs:
                try:
                    claims = [r.claim for r in runs]
                    held = set(await asyncio.to_thread(self.leases.renew, claims, time.time()))
                except Exception as exc:  # an outage: keep running, the fence decides
                    _log.debug("renewing leases failed: %s", exc)
                    held = {r.task_id for r in runs}
                for run in runs:  # requeued and maybe taken by another host meanwhile
                    if run.task_id not in held and not run.closing:
                        self.emit(HostEvent("lease_expired", run.task_id, details={"host": None}))
                        run.lose(
                            f"the lease of task {run.task_id} (claim {run.claim.epoch}) was not"
                            " renewed: it expired and the task was requeued or taken by"
                            " another host"
                        )
            await asyncio.sleep(period)

    async def _recover(self, now: float) -> None:
        """WRK-6: requeue the tasks whose lease expired (their host is gone), naming the
        cause in the ledger row (FLT-2)."""
        try:
            expired = await self._call(self.leases.expired, self.settings.project, now)
        except OutageTooLong:
            raise
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
            expired_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(lease.expires_at))
            reason = (
                f"host {lease.host} stopped renewing its lease (it was killed, paused or cut"
                f" off from the store); the lease expired at {expired_at} and host"
                f" {self.settings.host} requeued the task"
            )
            try:
                result = await self._call(
                    self.leases.recover,
                    lease,
                    now,
                    affinity_seconds=self.settings.affinity_seconds,
                    kind="goal_breakpoint" if goal else "platform_fresh",
                    checkpoint_round=checkpoint,
                    reason=reason,
                )
            except OutageTooLong:
                raise
            except Exception:
                _log.exception("requeueing %s failed", task_id)
                continue
            if getattr(result, "ok", bool(result)):
                self.emit(HostEvent("requeued", task_id, details={"reason": "lease expired"}))
        await self._recover_unleased(now)

    async def _recover_unleased(self, now: float) -> None:
        """WRK-6: a task `running` with no lease at all (loaded so from a world file, or
        claimed without a lease) is renewed by nobody: once this host has seen it so for
        a whole lease period, it requeues it like an expired lease, saying why."""
        unleased = getattr(self.store, "unleased_running", None)
        if not callable(unleased):
            return
        found = set(await self._call(unleased, self.settings.project)) - set(self.runs)
        for task_id in list(self._unleased):
            if task_id not in found:
                del self._unleased[task_id]
        for task_id in sorted(found):
            first = self._unleased.setdefault(task_id, now)
            wait = self.settings.lease_seconds
            if first == now:
                _log.warning(
                    "task %s is running but no host holds a lease on it (loaded as running,"
                    " or claimed without a lease); it is requeued in %g s unless a host"
                    " claims it",
                    task_id,
                    wait,
                )
                continue
            if now - first < wait:
                continue
            task = await self._call(self.store.get_task, task_id)
            goal = task is not None and is_goal_task(task)
            reason = (
                f"the task was running with no host holding a lease on it for {wait:g} s;"
                f" host {self.settings.host} requeued it"
            )
            result = await self._call(
                self.store.requeue_platform,
                task_id,
                "running",
                "goal_breakpoint" if goal else "platform_fresh",
                0,
                now,
                reason=reason,
            )
            self._unleased.pop(task_id, None)
            if getattr(result, "ok", False):
                self.emit(HostEvent("requeued", task_id, details={"reason": "no lease"}))
