# Owns: the in-memory reference of the ApprovalStore port (APR-1..5): approval requests
# and a project's approval rules, as a mixin of MemoryStore over `self._state` under its
# lock; and `expire_for_requeue`, which the attempts mixin calls inside a requeue (APR-5).
#
# Invariants:
#   Rule 1 (house rule 6): every change of a request is compare-and-set under the lock:
#           pending -> approved | denied only while unexpired and its task runs (APR-3),
#           pending -> expired whatever the time; of two answers exactly one wins.
#   Rule 2: a request is stored only for a task that exists and is running, checked under
#           the same hold of the lock; its project and attempt come from the task row.
#   Rule 3: rules are tried in (position, id) order; a new rule goes last in its project.
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import attrs

from markertools import (
    ANSWERED_BY_REQUEUE,
    ApprovalRequest,
    ApprovalRule,
    InvalidArgument,
    check_request,
    check_rule,
    requeue_expiry_reason,
)
from markertools_adapters.memory._state import MemoryState

ANSWERS = ("approved", "denied")


def _order(request: ApprovalRequest) -> tuple[float, str]:
    return (request.asked_at, request.id)


def expire_for_requeue(
    state: MemoryState, task_id: str, reason: str | None, now: float
) -> dict[str, ApprovalRequest]:
    """APR-5 (under the caller's lock): expire the task's pending requests as its requeue
    does; the rows as they were before, so a failing requeue can put them back."""
    before: dict[str, ApprovalRequest] = {}
    text = requeue_expiry_reason(reason)
    for key, request in list(state.approvals.items()):
        if request.task_id == task_id and request.status == "pending":
            before[key] = request
            state.approvals[key] = attrs.evolve(
                request,
                status="expired",
                answered_by=ANSWERED_BY_REQUEUE,
                answer_reason=text,
                answered_at=now,
            )
    return before


class ApprovalMixin:
    _state: MemoryState

    def insert_approval(self, request: ApprovalRequest) -> ApprovalRequest:
        check_request(request)
        with self._state.lock:  # Rule 2
            if request.id in self._state.approvals:
                raise InvalidArgument(f"approval request {request.id!r} already exists")
            task = self._state.tasks.get(request.task_id)
            if task is None or task.status != "running":
                status = "missing" if task is None else repr(task.status)
                raise InvalidArgument(
                    f"approval request for task {request.task_id!r}: the task is {status}, "
                    "not running"
                )
            stored = attrs.evolve(
                request, project_id=task.project_id, attempt=task.auto_resume_count
            )
            self._state.approvals[stored.id] = stored
            return stored

    def get_approval(self, approval_id: str) -> ApprovalRequest | None:
        with self._state.lock:
            return self._state.approvals.get(approval_id)

    def list_approvals(
        self,
        project_id: str | None = None,
        *,
        statuses: Collection[str] | None = None,
        task_id: str | None = None,
    ) -> tuple[ApprovalRequest, ...]:
        wanted = None if statuses is None else frozenset(statuses)
        with self._state.lock:
            found = [
                r
                for r in self._state.approvals.values()
                if (project_id is None or r.project_id == project_id)
                and (wanted is None or r.status in wanted)
                and (task_id is None or r.task_id == task_id)
            ]
        return tuple(sorted(found, key=_order))

    def pending_approvals(
        self, task_ids: Sequence[str]
    ) -> Mapping[str, tuple[ApprovalRequest, ...]]:
        ids = frozenset(task_ids)
        with self._state.lock:
            tasks = self._state.tasks
            found: dict[str, list[ApprovalRequest]] = {}
            for r in self._state.approvals.values():
                task = tasks.get(r.task_id)
                if (
                    r.status == "pending"
                    and r.task_id in ids
                    and task is not None
                    and task.status == "running"
                ):
                    found.setdefault(r.task_id, []).append(r)
        return {k: tuple(sorted(v, key=_order)) for k, v in found.items()}

    def answer_approval(
        self,
        approval_id: str,
        status: str,
        *,
        answered_by: str,
        reason: str | None,
        now: float,
    ) -> ApprovalRequest | None:
        if status not in ANSWERS:
            raise InvalidArgument(
                f"an answer's status must be one of {', '.join(ANSWERS)}; got {status!r}"
            )
        with self._state.lock:  # Rule 1
            current = self._state.approvals.get(approval_id)
            if current is None or current.status != "pending" or current.expires_at <= now:
                return None
            task = self._state.tasks.get(current.task_id)
            if task is None or task.status != "running":
                return None
            updated = attrs.evolve(
                current,
                status=status,
                answered_by=answered_by,
                answer_reason=reason,
                answered_at=now,
            )
            check_request(updated)
            self._state.approvals[approval_id] = updated
            return updated

    def expire_approval(
        self, approval_id: str, *, answered_by: str, reason: str, now: float
    ) -> ApprovalRequest | None:
        with self._state.lock:  # Rule 1
            current = self._state.approvals.get(approval_id)
            if current is None or current.status != "pending":
                return None
            updated = attrs.evolve(
                current,
                status="expired",
                answered_by=answered_by,
                answer_reason=reason,
                answered_at=now,
            )
            check_request(updated)
            self._state.approvals[approval_id] = updated
            return updated

    def add_approval_rule(self, rule: ApprovalRule) -> ApprovalRule:
        check_rule(rule)
        with self._state.lock:  # Rule 3
            if rule.id in self._state.approval_rules:
                raise InvalidArgument(f"approval rule {rule.id!r} already exists")
            positions = [
                r.position
                for r in self._state.approval_rules.values()
                if r.project_id == rule.project_id
            ]
            stored = attrs.evolve(rule, position=max(positions, default=0) + 1)
            self._state.approval_rules[stored.id] = stored
            return stored

    def approval_rules(self, project_id: str) -> tuple[ApprovalRule, ...]:
        with self._state.lock:
            rules = [r for r in self._state.approval_rules.values() if r.project_id == project_id]
        return tuple(sorted(rules, key=lambda r: (r.position, r.id)))

    def get_approval_rule(self, rule_id: str) -> ApprovalRule | None:
        with self._state.lock:
            return self._state.approval_rules.get(rule_id)

    def remove_approval_rule(self, rule_id: str) -> bool:
        with self._state.lock:
            return self._state.approval_rules.pop(rule_id, None) is not None
