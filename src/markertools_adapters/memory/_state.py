# Owns: the in-memory world's tables (`MemoryState`), shared by the memory store's
# per-area mixins. A plain container guarded by one re-entrant lock: every mixin method
# that reads-then-writes holds `state.lock`, which is what makes its compare-and-set
# atomic in memory (house rule 6). Also the one compare-and-set on a status that task
# transitions and todo updates share (`compare_and_set`).
from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

import attrs

from markertools import (
    Affinity,
    ApprovalRequest,
    ApprovalRule,
    Attempt,
    AuditRecord,
    Automation,
    Checkpoint,
    Claim,
    CostRow,
    FinishedTurn,
    Followup,
    Lease,
    LeaseLost,
    Project,
    Quota,
    StoredToken,
    Task,
    Todo,
)


@attrs.define
class MemoryState:
    """Everything a MemoryStore holds, as plain values (guarded by `lock`)."""

    tasks: dict[str, Task] = attrs.Factory(dict)
    projects: dict[str, Project] = attrs.Factory(dict)
    # (user, project) -> grants
    permissions: dict[tuple[str, str], frozenset[str]] = attrs.Factory(dict)
    todos: dict[str, Todo] = attrs.Factory(dict)
    automations: dict[str, Automation] = attrs.Factory(dict)
    costs: list[CostRow] = attrs.Factory(list)
    quotas: dict[str, Quota] = attrs.Factory(dict)
    # (task_id, attempt_no) -> attempt
    attempts: dict[tuple[str, int], Attempt] = attrs.Factory(dict)
    audit: list[AuditRecord] = attrs.Factory(list)
    # in queue order; take_followups marks them consumed (replaces the record)
    followups: list[Followup] = attrs.Factory(list)
    # TRN-9: (sender, turn id, position) -> the journal row (JSON)
    delivery_blocks: dict[tuple[str, str, int], str] = attrs.Factory(dict)
    # TRN-9: (task id, turn id) -> what finish_turn did
    finished_turns: dict[tuple[str, str], FinishedTurn] = attrs.Factory(dict)
    # TOL-4: (task id, turn, canonical kind) -> tool calls made
    turn_uses: dict[tuple[str, int, str], int] = attrs.Factory(dict)
    # TOL-7: (task id, turn, text) held until the turn's report is queued, in order
    held_followups: list[tuple[str, int, str]] = attrs.Factory(list)
    # TOL-3: token hash -> the stored token (never the secret)
    tokens: dict[str, StoredToken] = attrs.Factory(dict)
    # WRK-6: task id -> its lease (only while the task runs) / its affinity
    leases: dict[str, Lease] = attrs.Factory(dict)
    affinities: dict[str, Affinity] = attrs.Factory(dict)
    # WRK-7: task id -> its last goal checkpoint
    checkpoints: dict[str, Checkpoint] = attrs.Factory(dict)
    # FLT-2: (task id, turn id) -> the cost row and charge of a turn that was not the last
    charged_turns: dict[tuple[str, str], FinishedTurn] = attrs.Factory(dict)
    # FLT-5: waiter task id -> the tasks it waits for
    waits: dict[str, frozenset[str]] = attrs.Factory(dict)
    # APR-1..5: approval requests and approval rules, by id
    approvals: dict[str, ApprovalRequest] = attrs.Factory(dict)
    approval_rules: dict[str, ApprovalRule] = attrs.Factory(dict)
    lock: threading.RLock = attrs.field(factory=threading.RLock, eq=False, repr=False)

    # The adapter kit's stores pickle the state (docs/worker-loop.md): the records and
    # tables travel, the lock does not - an unpickled state gets a fresh one.
    def __getstate__(self) -> dict[str, Any]:
        return {
            f.name: getattr(self, f.name) for f in attrs.fields(MemoryState) if f.name != "lock"
        }

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "lock", threading.RLock())


def check_claim(state: MemoryState, claim: Claim) -> None:
    """FLT-1: under the lock, raise LeaseLost unless `claim` still holds its task."""
    task = state.tasks.get(claim.task.id)
    if task is None or task.epoch != claim.epoch or task.status != "running":
        raise LeaseLost(
            claim.task.id,
            claim.epoch,
            None if task is None else task.epoch,
            None if task is None else task.status,
        )


def awaited_ids(state: MemoryState) -> frozenset[str]:
    """FLT-5: the tasks a queued or running task waits for (under the caller's lock)."""
    found: set[str] = set()
    for waiter, targets in state.waits.items():
        task = state.tasks.get(waiter)
        if task is not None and task.status in ("queued", "running"):
            found.update(targets)
    return frozenset(found)


def revoke_left_running(state: MemoryState, before: object, after: object) -> None:
    """TOL-3: when a task row leaves `running` (before running, after not), revoke its
    tokens and drop its lease (WRK-6) - under the lock of the change itself, so in the same 'transaction'."""
    if not (isinstance(before, Task) and isinstance(after, Task)):
        return
    if before.status == "running" and after.status != "running":
        state.leases.pop(after.id, None)  # WRK-6: a lease lives only while the task runs
        for key, token in state.tokens.items():
            if token.task_id == after.id and not token.revoked:
                state.tokens[key] = attrs.evolve(token, revoked=True)


class _HasStatus(Protocol):
    @property
    def status(self) -> str: ...


S = TypeVar("S", bound=_HasStatus)


def compare_and_set(
    state: MemoryState,
    table: dict[str, S],
    key: str,
    expected_status: str,
    changes: Mapping[str, object],
) -> S | None:
    """Apply `changes` to `table[key]` only while its status is `expected_status`, under
    the state lock; the new row, or None (missing, or changed meanwhile). The caller has
    already refused fields that may not change."""
    with state.lock:
        current = table.get(key)
        if current is None or current.status != expected_status:
            return None
        fields: dict[str, Any] = dict(changes)
        updated = attrs.evolve(current, **fields)  # type: ignore[misc]
        table[key] = updated
        revoke_left_running(state, current, updated)
        return updated


def release_held(state: MemoryState, task_id: str) -> tuple[str, ...]:
    """TOL-7: queue the task's held follow-ups (in the order held) and forget them."""
    from markertools import Followup

    with state.lock:
        texts = tuple(text for t, _, text in state.held_followups if t == task_id)
        if texts:
            state.held_followups = [h for h in state.held_followups if h[0] != task_id]
            state.followups.extend(Followup(task_id, text) for text in texts)
        return texts
