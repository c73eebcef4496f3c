# Owns: the in-memory AttemptLedger port methods (docs/rules.md ATT), as a mixin of MemoryStore.
# Operates on `self._state` (MemoryState) under `self._state.lock`.
#
# Invariants:
#   Rule 1 (ATT-2): requeue_platform is all-or-nothing: under the lock it computes the
#           ledger row and the new task row first, then writes both; if any write fails
#           the previous ledger entry and task row are restored and the failure is
#           returned (RequeueResult ok=False), never raised.
#   Rule 2 (ATT-1): recording an existing (task_id, attempt_no) keeps the first row.
#   Rule 3 (ATT-3): latest_attempt never raises; a malformed row yields None.
#   Rule 4 (APR-5): the requeue expires the task's pending approval requests under the
#           same hold of the lock, and puts them back when it fails.
from __future__ import annotations

from markertools import (
    ApprovalRequest,
    Attempt,
    RequeueResult,
    checked_attempt,
    ending_attempt,
    requeued_task,
    summarize_error,
)
from markertools_adapters.memory._approvals import expire_for_requeue
from markertools_adapters.memory._state import MemoryState, revoke_left_running


class AttemptMixin:
    _state: MemoryState

    def requeue_platform(
        self,
        task_id: str,
        expected_status: str,
        kind: str,
        checkpoint_round: int,
        now: float,
        *,
        reason: str | None = None,
    ) -> RequeueResult:
        try:
            with self._state.lock:
                return self._requeue_locked(
                    task_id, expected_status, kind, checkpoint_round, now, reason
                )
        except Exception as exc:
            return RequeueResult(ok=False, error=summarize_error(exc))

    def _requeue_locked(
        self,
        task_id: str,
        expected_status: str,
        kind: str,
        checkpoint_round: int,
        now: float,
        reason: str | None = None,
    ) -> RequeueResult:
        state = self._state
        task = state.tasks.get(task_id)
        if task is None:
            return RequeueResult(ok=False, error=f"task {task_id!r} not found")
        if task.status != expected_status:
            return RequeueResult(
                ok=False,
                error=f"task {task_id!r} is {task.status!r}, not {expected_status!r} (changed meanwhile)",
            )
        row = ending_attempt(task, kind, checkpoint_round, now, reason)
        new_task = requeued_task(task)
        key = (task_id, row.attempt_no)
        previous = state.attempts.get(key)
        recorded = previous if previous is not None else row
        expired: dict[str, ApprovalRequest] = {}
        try:
            if previous is None:
                state.attempts[key] = row
            state.tasks[task_id] = new_task
            revoke_left_running(state, task, new_task)  # TOL-3
            expired = expire_for_requeue(state, task_id, row.interrupted_reason, now)
        except BaseException:
            if previous is None:
                state.attempts.pop(key, None)
            state.tasks[task_id] = task
            state.approvals.update(expired)
            raise
        return RequeueResult(ok=True, attempt=recorded)

    def latest_attempt(self, task_id: str) -> Attempt | None:
        try:
            with self._state.lock:
                rows = [a for (tid, _), a in self._state.attempts.items() if tid == task_id]
            if not rows:
                return None
            latest = max(rows, key=lambda a: a.attempt_no)
            return checked_attempt(latest)
        except Exception:
            return None

    def list_attempts(self, task_id: str) -> tuple[Attempt, ...]:
        with self._state.lock:
            rows = [a for (tid, _), a in self._state.attempts.items() if tid == task_id]
        return tuple(sorted(rows, key=lambda a: a.attempt_no))
