# Owns: the in-memory reference of the worker-loop ports (TaskClaimer, FollowupTaker), of
# automation management (AutomationAdmin, SCH-7) and of the incremental record writers
# (RecordWriter), as a mixin of MemoryStore. Operates on `self._state` under its lock.
#
# Invariants:
#   Rule 1: claim_next_task picks the queued task of the project `pick_claim` names
#           (affinity, quota hold, then oldest: created_at, id) and sets it running under
#           the state lock: each task is claimed once; with lease_seconds the lease is
#           written under the same hold (WRK-6).
#   Rule 2: take_followups returns and marks consumed under the state lock, in queue order.
#   Rule 5 (INJ-1): claim_task is claim_next_task + take_followups + latest_attempt under
#           one hold of the state lock; the start comes from the pure `claim_of`.
#   Rule 3 (AUT-3): an automation becomes active only when no other active automation of
#           its project has its name (AutomationNameTaken, nothing changed).
#   Rule 4: list_automations never lists a deleted automation.
#   Rule 5 (TRN-9): finish_turn runs under the state lock inside `atomic()` (a failure puts
#           every table back): status, cost row, quota charge and the finished-turn record
#           together, once per (task, turn id).
#   Rule 6 (CST-2): money is added as Decimals of whole micro-dollars (exact); a cost row
#           for a task the store lacks is refused (UnknownTask), nothing written.
from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

import attrs

from markertools import (
    Attempt,
    Automation,
    AutomationNameTaken,
    Claim,
    CostRow,
    FinishedTurn,
    InvalidArgument,
    InvalidType,
    Lease,
    Project,
    Quota,
    Task,
    TurnCost,
    TurnOutcome,
    add_micros,
    checked_finish,
    claim_of,
    finish_digest,
    finish_replay,
    from_micros,
    is_priced,
    pick_claim,
    quota_exhausted,
    to_micros,
)
from markertools_adapters.errors import UnknownTask
from markertools_adapters.memory._automations import name_clash
from markertools_adapters.memory._journal import JournalMixin
from markertools_adapters.memory._state import (
    MemoryState,
    awaited_ids,
    check_claim,
    release_held,
    revoke_left_running,
)

AUTOMATION_CHANGES: Final[frozenset[str]] = frozenset(
    {"prompt", "interval_seconds", "first_run_at", "run_once"}
)


def check_automation_changes(changes: Mapping[str, object]) -> None:
    unknown = set(changes) - AUTOMATION_CHANGES
    if unknown:
        raise InvalidArgument(f"cannot change automation field(s) {sorted(unknown)}")


class WorkerMixin(JournalMixin):  # finish_turn runs in its atomic()
    _state: MemoryState

    if TYPE_CHECKING:  # AttemptMixin's, next in the MemoryStore's bases

        def latest_attempt(self, task_id: str) -> Attempt | None: ...

    # ---- TaskClaimer -------------------------------------------------------------------

    def claim_next_task(self, project_id: str, host: str) -> Task | None:
        return self._claim(project_id, host, time.time(), None)

    def _claim(
        self, project_id: str, host: str, now: float, lease_seconds: float | None
    ) -> Task | None:
        state = self._state
        with state.lock:
            queued = (
                t
                for t in state.tasks.values()
                if t.project_id == project_id and t.status == "queued"
            )
            awaited = awaited_ids(state)
            chosen = pick_claim(  # FLT-5 awaited, WRK-6 affinity, WRK-8 quota hold, oldest
                queued,
                host,
                now,
                state.affinities.get,
                lambda user: quota_exhausted(state.quotas.get(user)),
                awaited.__contains__,
            )
            if chosen is None:
                return None
            claimed = attrs.evolve(  # FLT-1: every claim a larger epoch
                chosen, status="running", host=host, turn=chosen.turn + 1, epoch=chosen.epoch + 1
            )
            state.tasks[chosen.id] = claimed
            if lease_seconds is not None:
                state.leases[chosen.id] = Lease(
                    chosen.id, host, now + lease_seconds, started_at=now, epoch=claimed.epoch
                )
            return claimed

    def claim_task(
        self,
        project_id: str,
        host: str,
        *,
        now: float | None = None,
        lease_seconds: float | None = None,
    ) -> Claim | None:
        at = time.time() if now is None else now
        with self._state.lock:  # Rule 5: one hold of the lock, as one transaction
            task = self._claim(project_id, host, at, lease_seconds)
            if task is None:
                return None
            followups = self._take(task.id, advance=False)  # the claim advanced the turn
            return claim_of(task, self.latest_attempt(task.id), followups)

    # ---- FollowupTaker -----------------------------------------------------------------

    def take_followups(self, task_id: str, *, claim: Claim | None = None) -> tuple[str, ...]:
        with self._state.lock:
            if claim is not None:  # FLT-1
                check_claim(self._state, claim)
            return self._take(task_id, advance=True)

    def _take(self, task_id: str, *, advance: bool) -> tuple[str, ...]:
        with self._state.lock:
            release_held(self._state, task_id)  # TOL-7: a turn that queued no report
            taken: list[str] = []
            rows = self._state.followups
            for i, f in enumerate(rows):
                if f.task_id == task_id and not f.consumed:
                    taken.append(f.text)
                    rows[i] = attrs.evolve(f, consumed=True)
            task = self._state.tasks.get(task_id)
            if advance and taken and task is not None:  # TOL-4: a new turn starts
                self._state.tasks[task_id] = attrs.evolve(task, turn=task.turn + 1)
            return tuple(taken)

    def set_thread_id(self, task_id: str, thread_id: str | None) -> None:
        with self._state.lock:
            task = self._state.tasks.get(task_id)
            if task is None:
                raise UnknownTask(task_id, "set_thread_id")
            self._state.tasks[task_id] = attrs.evolve(task, thread_id=thread_id)

    # ---- AutomationAdmin ---------------------------------------------------------------

    def list_automations(self, project_id: str | None) -> tuple[Automation, ...]:
        with self._state.lock:
            rows = [
                a
                for a in self._state.automations.values()
                if a.status != "deleted" and (project_id is None or a.project_id == project_id)
            ]
        return tuple(sorted(rows, key=lambda a: a.id))

    def set_automation_status(
        self, automation_id: str, expected_status: str, status: str
    ) -> Automation | None:
        with self._state.lock:
            current = self._state.automations.get(automation_id)
            if current is None or current.status != expected_status:
                return None
            updated = attrs.evolve(current, status=status)
            others = (a for k, a in self._state.automations.items() if k != automation_id)
            if name_clash(updated, others):
                raise AutomationNameTaken(updated.project_id, updated.name)
            self._state.automations[automation_id] = updated
            return updated

    def update_automation(
        self, automation_id: str, changes: Mapping[str, object]
    ) -> Automation | None:
        check_automation_changes(changes)
        with self._state.lock:
            current = self._state.automations.get(automation_id)
            if current is None or current.status == "deleted":
                return None
            fields: dict[str, Any] = dict(changes)
            updated = attrs.evolve(current, **fields)
            self._state.automations[automation_id] = updated
            return updated

    # ---- RecordWriter ------------------------------------------------------------------

    def put_project(self, project: Project) -> None:
        with self._state.lock:
            self._state.projects[project.id] = project

    def set_permissions(self, user: str, project_id: str, grants: Collection[str]) -> None:
        with self._state.lock:
            self._state.permissions[(user, project_id)] = frozenset(grants)

    def put_quota(self, quota: Quota) -> None:
        with self._state.lock:
            self._state.quotas[quota.user] = quota

    def charge_quota(self, user: str, usd: Decimal | int | float | str) -> Quota | None:
        amount = to_micros(usd, "charge_quota usd")
        with self._state.lock:
            current = self._state.quotas.get(user)
            if current is None:
                return None
            used = add_micros(to_micros(current.used_usd), amount, "charge_quota usd")
            charged = attrs.evolve(current, used_usd=from_micros(used))
            self._state.quotas[user] = charged
            return charged

    def record_cost(self, row: CostRow) -> None:
        if not isinstance(row, CostRow):
            raise InvalidType(f"expected a CostRow, got {type(row).__name__}")
        with self._state.lock:
            if row.task_id not in self._state.tasks:
                raise UnknownTask(row.task_id, "record_cost")
            self._state.costs.append(row)

    # ---- TurnFinisher (TRN-9) ----------------------------------------------------------

    def finish_turn(
        self,
        task_id: str,
        turn_id: str,
        *,
        outcome: TurnOutcome | str,
        result_text: str | None = None,
        error_text: str | None = None,
        cost: TurnCost | CostRow | None = None,
        requeue: bool = False,
        claim: Claim | None = None,
    ) -> FinishedTurn:
        status = checked_finish(task_id, turn_id, outcome, cost, requeue)
        digest = finish_digest(outcome, result_text, error_text, cost, requeue)
        state = self._state
        with state.lock, self.atomic():
            first = state.finished_turns.get((task_id, turn_id))
            if first is not None:  # TRN-9 replay, FLT-6: only of the same input
                return finish_replay(first, digest)
            task = state.tasks.get(task_id)
            if task is None:
                raise UnknownTask(task_id, "finish_turn")
            if claim is not None:  # FLT-1
                check_claim(state, claim)
            changed = task.status == "running"
            if changed:
                fields: dict[str, Any] = {"status": status}
                if result_text is not None:
                    fields["result_text"] = result_text
                if error_text is not None:
                    fields["error_text"] = error_text
                before, task = task, attrs.evolve(task, **fields)
                state.tasks[task_id] = task
                revoke_left_running(state, before, task)  # TOL-3
            row: CostRow | None = None
            charged: Quota | None = None
            if cost is not None:
                if isinstance(cost, TurnCost):
                    rounds = [r.round for r in state.costs if r.task_id == task_id]
                    row = cost.row(task_id, max(rounds, default=0) + 1)
                else:
                    row = cost
                state.costs.append(row)
                if task.created_by is not None and is_priced(row):
                    assert row.usd is not None
                    charged = self.charge_quota(task.created_by, row.usd)
            done = FinishedTurn(task_id, turn_id, task.status, changed, row, charged, digest=digest)
            state.finished_turns[(task_id, turn_id)] = done
            return done

    def charge_turn(
        self,
        task_id: str,
        turn_id: str,
        cost: TurnCost | CostRow,
        *,
        claim: Claim | None = None,
    ) -> FinishedTurn:
        checked_finish(task_id, turn_id, "completed", cost, False)
        if cost is None:
            raise InvalidType("cost: expected a TurnCost or a CostRow, got None")
        digest = finish_digest("charge", None, None, cost, False)
        state = self._state
        with state.lock, self.atomic():
            first = state.charged_turns.get((task_id, turn_id))
            if first is not None:
                return finish_replay(first, digest)
            task = state.tasks.get(task_id)
            if task is None:
                raise UnknownTask(task_id, "charge_turn")
            if claim is not None:
                check_claim(state, claim)
            if isinstance(cost, TurnCost):
                rounds = [r.round for r in state.costs if r.task_id == task_id]
                row = cost.row(task_id, max(rounds, default=0) + 1)
            else:
                row = cost
            state.costs.append(row)
            charged: Quota | None = None
            if task.created_by is not None and is_priced(row):
                assert row.usd is not None
                charged = self.charge_quota(task.created_by, row.usd)
            done = FinishedTurn(task_id, turn_id, task.status, False, row, charged, digest=digest)
            state.charged_turns[(task_id, turn_id)] = done
            return done
