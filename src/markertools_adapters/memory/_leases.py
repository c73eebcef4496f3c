# Owns: the in-memory reference of the LeaseStore port (WRK-6 leases and affinity, WRK-7
# checkpoints, WRK-8 quota hold, WRK-10 fleet snapshot with the pending approval requests
# of APR-4), as a mixin of MemoryStore.
# Operates on `self._state` under its lock; the claim itself is WorkerMixin.claim_task.
#
# Invariants:
#   Rule 1 (WRK-6): a lease exists only while its task is running: every change that
#           takes a task out of running drops it under the same hold of the lock
#           (`revoke_left_running`).
#   Rule 2 (WRK-6): requeue_expired checks host, status and expiry and does the ATT-2
#           requeue, the lease drop and the affinity under one hold of the lock, so of
#           two callers exactly one succeeds.
#   Rule 3: renew_leases / record_process_group / release_lease only touch a lease the
#           named host holds on a running task.
from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING

import attrs

from markertools import (
    FINISHED_POSITION,
    PENDING_POSITION,
    Affinity,
    Checkpoint,
    Claim,
    FleetSnapshot,
    HostLeases,
    Lease,
    PendingTurn,
    QuotaHold,
    RequeueResult,
    RunningTask,
    UnleasedRun,
    host_engine,
    pending_turn_of,
    quota_exhausted,
    quota_hold_reason,
)
from markertools_adapters.memory._journal import JournalMixin
from markertools_adapters.memory._state import MemoryState, check_claim


class LeaseMixin(JournalMixin):  # fenced() runs in its atomic()
    _state: MemoryState

    if TYPE_CHECKING:  # AttemptMixin's, next in the MemoryStore's bases

        def requeue_platform(
            self,
            task_id: str,
            expected_status: str,
            kind: str,
            checkpoint_round: int,
            now: float,
            *,
            reason: str | None = None,
        ) -> RequeueResult: ...

    def _held(self, task_id: str, host: str) -> Lease | None:
        lease = self._state.leases.get(task_id)
        task = self._state.tasks.get(task_id)
        if lease is None or lease.host != host or task is None or task.status != "running":
            return None
        return lease

    def renew_leases(
        self,
        host: str,
        task_ids: Collection[str | Claim],
        *,
        lease_seconds: float,
        now: float,
    ) -> tuple[str, ...]:
        held: list[str] = []
        with self._state.lock:
            for item in task_ids:
                task_id = item.task.id if isinstance(item, Claim) else item
                lease = self._held(task_id, host)
                if lease is None:
                    continue
                task = self._state.tasks[task_id]
                if isinstance(item, Claim) and task.epoch != item.epoch:  # FLT-1
                    continue
                self._state.leases[task_id] = attrs.evolve(lease, expires_at=now + lease_seconds)
                held.append(task_id)
        return tuple(held)

    def record_process_group(
        self,
        task_id: str,
        host: str,
        pgid: int,
        *,
        machine_id: str | None,
        now: float,
        engine: str | None = None,
    ) -> None:
        with self._state.lock:
            lease = self._held(task_id, host)
            if lease is not None:
                self._state.leases[task_id] = attrs.evolve(
                    lease, pgid=pgid, machine_id=machine_id, engine=engine
                )

    def get_lease(self, task_id: str) -> Lease | None:
        with self._state.lock:
            return self._state.leases.get(task_id)

    def expired_leases(self, now: float, project_id: str | None = None) -> tuple[Lease, ...]:
        with self._state.lock:
            found = []
            for task_id, lease in self._state.leases.items():
                task = self._state.tasks.get(task_id)
                if task is None or task.status != "running" or lease.expires_at > now:
                    continue
                if project_id is None or task.project_id == project_id:
                    found.append(lease)
        return tuple(sorted(found, key=lambda x: x.task_id))

    def requeue_expired(
        self,
        task_id: str,
        expected_host: str,
        now: float,
        *,
        affinity_seconds: float,
        kind: str = "platform_fresh",
        checkpoint_round: int = -1,
        reason: str | None = None,
    ) -> RequeueResult:
        with self._state.lock:  # Rule 2
            task = self._state.tasks.get(task_id)
            lease = self._state.leases.get(task_id)
            if task is None or task.status != "running":
                return RequeueResult(ok=False, error=f"task {task_id!r} is not running")
            if lease is None or lease.host != expected_host or lease.expires_at > now:
                return RequeueResult(
                    ok=False,
                    error=f"task {task_id!r} has no expired lease of host {expected_host!r}",
                )
            result = self.requeue_platform(
                task_id, "running", kind, checkpoint_round, now, reason=reason
            )
            if result.ok:
                self._state.leases.pop(task_id, None)
                self._state.affinities[task_id] = Affinity(
                    task_id, expected_host, now + affinity_seconds
                )
            return result

    def unleased_running(self, project_id: str | None = None) -> tuple[str, ...]:
        with self._state.lock:
            return tuple(
                sorted(
                    t.id
                    for t in self._state.tasks.values()
                    if t.status == "running"
                    and t.id not in self._state.leases
                    and (project_id is None or t.project_id == project_id)
                )
            )

    def get_affinity(self, task_id: str) -> Affinity | None:
        with self._state.lock:
            return self._state.affinities.get(task_id)

    def release_lease(self, task_id: str, host: str) -> None:
        with self._state.lock:
            lease = self._state.leases.get(task_id)
            if lease is not None and lease.host == host:
                del self._state.leases[task_id]

    def cancelled_among(self, task_ids: Collection[str]) -> tuple[str, ...]:
        with self._state.lock:
            tasks = self._state.tasks
            return tuple(
                i for i in task_ids if (t := tasks.get(i)) is None or t.status != "running"
            )

    def record_checkpoint(
        self,
        task_id: str,
        round: int,
        *,
        thread_id: str | None,
        turn_id: str | None,
        now: float,
        claim: Claim | None = None,
    ) -> None:
        with self._state.lock:
            if claim is not None:  # FLT-1
                check_claim(self._state, claim)
            self._state.checkpoints[task_id] = Checkpoint(task_id, round, thread_id, turn_id, now)

    # ---- FLT-1 / FLT-2: fencing and pending turns -----------------------------------------

    @contextlib.contextmanager
    def fenced(self, claim: Claim) -> Iterator[None]:
        with self._state.lock, self.atomic():
            check_claim(self._state, claim)
            yield

    def pending_turns(self, task_id: str) -> tuple[PendingTurn, ...]:
        with self._state.lock:
            blocks = self._state.delivery_blocks
            rows = [
                (turn_id, entry)
                for (sender, turn_id, position), entry in blocks.items()
                if sender == task_id
                and position == PENDING_POSITION
                and (sender, turn_id, FINISHED_POSITION) not in blocks
            ]
        found = [p for turn_id, entry in rows if (p := pending_turn_of(task_id, turn_id, entry))]
        return tuple(sorted(found, key=lambda p: (p.recorded_at, p.turn_id)))

    # ---- FLT-5: who waits for whom ---------------------------------------------------------

    def mark_awaited(self, waiter_id: str, target_ids: Collection[str]) -> None:
        with self._state.lock:
            targets = frozenset(target_ids)
            if targets:
                self._state.waits[waiter_id] = targets
            else:
                self._state.waits.pop(waiter_id, None)

    def clear_awaited(self, waiter_id: str) -> None:
        with self._state.lock:
            self._state.waits.pop(waiter_id, None)

    def last_checkpoint(self, task_id: str) -> Checkpoint | None:
        with self._state.lock:
            return self._state.checkpoints.get(task_id)

    def fleet_snapshot(self, project_id: str | None, now: float) -> FleetSnapshot:
        with self._state.lock:
            tasks = [
                t
                for t in self._state.tasks.values()
                if project_id is None or t.project_id == project_id
            ]
            counts = Counter(t.status for t in tasks)
            by_host: dict[str, list[tuple[Lease, int]]] = {}
            held: list[QuotaHold] = []
            unleased: list[UnleasedRun] = []
            for t in tasks:
                lease = self._state.leases.get(t.id)
                if t.status == "running" and lease is not None and lease.expires_at > now:
                    by_host.setdefault(lease.host, []).append((lease, t.turn))
                elif t.status == "running" and lease is not None:  # expired: a dead host's
                    unleased.append(
                        UnleasedRun(t.id, lease.host, t.turn, lease.started_at, lease.expires_at)
                    )
                elif t.status == "running":  # claimed without a lease, or written running
                    unleased.append(UnleasedRun(t.id, t.host, t.turn))
                if t.status == "queued" and t.created_by is not None:
                    quota = self._state.quotas.get(t.created_by)
                    if quota is not None and quota_exhausted(quota):
                        reason = quota_hold_reason(t.created_by, quota)
                        held.append(
                            QuotaHold(t.id, t.created_by, reason, quota.used_usd, quota.total_usd)
                        )
            running = {t.id for t in tasks if t.status == "running"}
            asking = sorted(  # APR-4
                (
                    a
                    for a in self._state.approvals.values()
                    if a.status == "pending" and a.task_id in running
                ),
                key=lambda a: (a.asked_at, a.id),
            )
        hosts = tuple(
            HostLeases(
                host,
                max(lease.expires_at for lease, _ in rows),
                tuple(
                    RunningTask(lease.task_id, turn, lease.started_at)
                    for lease, turn in sorted(rows, key=lambda r: r[0].task_id)
                ),
                host_engine(lease.engine for lease, _ in rows),
            )
            for host, rows in sorted(by_host.items())
        )
        return FleetSnapshot(
            dict(sorted(counts.items())),
            hosts,
            tuple(sorted(held, key=lambda q: q.task_id)),
            now,
            tuple(sorted(unleased, key=lambda u: u.task_id)),
            tuple(asking),
        )
