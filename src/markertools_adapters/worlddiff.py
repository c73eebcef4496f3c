# Owns: "what changed", as plain text lines for the CLI (`deliver`, `demo`): tasks /
# todos / automations created and changed field by field, follow-ups queued, audit
# records written, time passed (times shown as ISO 8601). Two sources: two exported worlds
# (`world_changes`, for small worlds such as the demo's), or a `TouchRecorder` - the
# storage ports of one delivery, wrapped so they note every record the delivery wrote
# (`touched_changes`, `touched_world`): the cost follows the delivery, not the database.
#
# Invariants:
#   Rule 1: record text (prompts, reasons) is shown cut to one line, never raw.
#   Rule 2: the recorder changes nothing about the calls it passes on (same arguments,
#           same results, same exceptions); a record counts as touched only once the
#           store accepted the write (a refused insert is not "created").
#   Rule 3: for the same delivery, touched_changes(...) == world_changes(before, after)
#           (tests/adapters/test_worlddiff_touched.py checks it).
from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import attrs

from markertools import (
    Attempt,
    AuditRecord,
    Automation,
    CostRow,
    Followup,
    LineageLink,
    Project,
    Quota,
    RequeueResult,
    Task,
    TaskChange,
    TaskListing,
    Todo,
    TodoListing,
    shanghai_iso,
)
from markertools_adapters.world import World

PREVIEW_CHARS = 100


def one_line(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """A value as one line of JSON-ish text, cut to `limit` code points."""
    if isinstance(value, str):
        value = " ".join(value.split())
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _by_id(records: Sequence[Any]) -> dict[str, Any]:
    return {r.id: r for r in records}


def shown_value(name: str, value: Any, limit: int = 60) -> str:
    """A field's value for a person: times (`*_at` fields, epoch seconds) as ISO 8601 with
    the offset, to the second, like every time in a report; the rest as `one_line`."""
    if name.endswith("_at") and isinstance(value, int | float) and not isinstance(value, bool):
        return shanghai_iso(value)
    return one_line(value, limit)


def _changed_fields(old: Any, new: Any) -> list[str]:
    out = []
    for field in attrs.fields(type(new)):
        before, after = getattr(old, field.name), getattr(new, field.name)
        if before != after:
            was, now = shown_value(field.name, before), shown_value(field.name, after)
            out.append(f"{field.name} {was} -> {now}")
    return out


def _records(label: str, before: Sequence[Any], after: Sequence[Any], describe: Any) -> list[str]:
    old, new = _by_id(before), _by_id(after)
    lines: list[str] = []
    created = [r for k, r in new.items() if k not in old]
    changed = [(old[k], r) for k, r in new.items() if k in old and old[k] != r]
    removed = [k for k in old if k not in new]
    if created:
        lines.append(f"{label} created:")
        lines += [f"  + {describe(r)}" for r in created]
    if changed:
        lines.append(f"{label} changed:")
        for was, now in changed:
            lines.append(f"  ~ {now.id}: " + "; ".join(_changed_fields(was, now)))
    if removed:
        lines.append(f"{label} removed:")
        lines += [f"  - {k}" for k in removed]
    return lines


def _task(t: Any) -> str:
    return (
        f"{t.id} (status {t.status}, parent {t.parent_task_id}, executor {t.executor}, "
        f"created_by {t.created_by}): prompt {one_line(t.prompt)}"
    )


def _todo(d: Any) -> str:
    return f"{d.id} ({d.status}, {d.priority}): {one_line(d.title)}"


def _automation(a: Any) -> str:
    return f"{a.id} ({a.name}, every {a.interval_seconds} s, {a.status}): {one_line(a.prompt)}"


def world_changes(before: World, after: World, *, virtual: bool = True) -> list[str]:
    """The differences, as lines; an empty list when nothing changed. `virtual`: the
    world's clock is a virtual one (the last line then says "virtual time passed")."""
    lines: list[str] = []
    lines += _records("tasks", before.tasks, after.tasks, _task)
    lines += _records("todos", before.todos, after.todos, _todo)
    lines += _records("automations", before.automations, after.automations, _automation)
    new_followups = after.followups[len(before.followups) :]
    if new_followups:
        lines.append("follow-ups queued:")
        lines += [f"  -> {f.task_id}: {one_line(f.text)}" for f in new_followups]
    new_audit = after.audit[len(before.audit) :]
    if new_audit:
        lines.append(f"audit records written: {len(new_audit)}")
        lines += [
            f"  {a.kind} -> {a.target or '-'}: {a.outcome}: {one_line(a.reason, 80)}"
            for a in new_audit
        ]
    if after.now != before.now:
        label = "virtual time passed" if virtual else "time passed"
        lines.append(f"{label}: {round(after.now - before.now, 3):g} s")
    return lines


# ---- what one delivery touched ------------------------------------------------------


class TouchRecorder:
    """Every storage port (markertools_adapters.wiring.StoragePorts) of `store`, passed
    through unchanged, noting what was written: for each task, todo and automation
    written, its row before the first write (None: created by this delivery); the audit
    records and follow-ups appended, in order (Rule 2)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.tasks_before: dict[str, Task | None] = {}
        self.todos_before: dict[str, Todo | None] = {}
        self.automations_before: dict[str, Automation | None] = {}
        self.audit: list[AuditRecord] = []
        self.followups: list[Followup] = []

    # ---- DeliveryJournal (TRN-9): passed through; its rows are not world records
    def block_entries(self, sender: str, turn_id: str) -> Mapping[int, str]:
        """DeliveryJournal.block_entries, passed through."""
        rows: Mapping[int, str] = self.store.block_entries(sender, turn_id)
        return rows

    def record_block(self, sender: str, turn_id: str, position: int, entry: str) -> None:
        """DeliveryJournal.record_block, passed through."""
        self.store.record_block(sender, turn_id, position, entry)

    def atomic(self) -> Any:
        """DeliveryJournal.atomic, passed through (the store's one transaction)."""
        return self.store.atomic()

    # ---- TaskStore
    def get_task(self, task_id: str) -> Task | None:
        """TaskStore.get_task, passed through."""
        task: Task | None = self.store.get_task(task_id)
        return task

    def get_tasks(self, task_ids: Sequence[str]) -> Mapping[str, Task]:
        """TaskStore.get_tasks, passed through."""
        found: Mapping[str, Task] = self.store.get_tasks(task_ids)
        return found

    def lineage(self, task_id: str, max_steps: int) -> tuple[LineageLink, ...]:
        """TaskStore.lineage, passed through."""
        return tuple(self.store.lineage(task_id, max_steps))

    def count_children(self, parent_id: str) -> int:
        """TaskStore.count_children, passed through."""
        return int(self.store.count_children(parent_id))

    def insert_task(self, task: Task) -> None:
        """TaskStore.insert_task; the task counts as created once the store took it."""
        self.store.insert_task(task)
        self.tasks_before.setdefault(task.id, None)

    def transition_task(
        self, task_id: str, expected_status: str, changes: TaskChange | Mapping[str, object]
    ) -> Task | None:
        """TaskStore.transition_task; the row before it is read first (once per task)."""
        if task_id not in self.tasks_before:
            self.tasks_before[task_id] = self.store.get_task(task_id)
        result: Task | None = self.store.transition_task(task_id, expected_status, changes)
        return result

    def list_tasks(
        self, project_id: str, *, status: str | None, q: str | None, limit: int
    ) -> TaskListing:
        """TaskStore.list_tasks, passed through."""
        listing: TaskListing = self.store.list_tasks(project_id, status=status, q=q, limit=limit)
        return listing

    # ---- TodoStore
    def get_todo(self, todo_id: str) -> Todo | None:
        """TodoStore.get_todo, passed through."""
        todo: Todo | None = self.store.get_todo(todo_id)
        return todo

    def list_todos(
        self, project_id: str, *, statuses: Collection[str], q: str | None, limit: int
    ) -> TodoListing:
        """TodoStore.list_todos, passed through."""
        listing: TodoListing = self.store.list_todos(
            project_id, statuses=statuses, q=q, limit=limit
        )
        return listing

    def insert_todo(self, todo: Todo) -> None:
        """TodoStore.insert_todo; the todo counts as created once the store took it."""
        self.store.insert_todo(todo)
        self.todos_before.setdefault(todo.id, None)

    def update_todo(
        self, todo_id: str, expected_status: str, changes: Mapping[str, object]
    ) -> Todo | None:
        """TodoStore.update_todo; the row before it is read first (once per todo)."""
        if todo_id not in self.todos_before:
            self.todos_before[todo_id] = self.store.get_todo(todo_id)
        result: Todo | None = self.store.update_todo(todo_id, expected_status, changes)
        return result

    # ---- AutomationStore
    def get_automation(self, automation_id: str) -> Automation | None:
        """AutomationStore.get_automation, passed through."""
        found: Automation | None = self.store.get_automation(automation_id)
        return found

    def active_automation_names(self, project_id: str) -> frozenset[str]:
        """AutomationStore.active_automation_names, passed through."""
        return frozenset(self.store.active_automation_names(project_id))

    def insert_automation(self, automation: Automation) -> None:
        """AutomationStore.insert_automation; created once the store took it."""
        self.store.insert_automation(automation)
        self.automations_before.setdefault(automation.id, None)

    def due_automations(self, now: float) -> tuple[Automation, ...]:
        """AutomationStore.due_automations, passed through."""
        return tuple(self.store.due_automations(now))

    def claim_automation(self, automation_id: str, slot: float, now: float) -> bool:
        """AutomationStore.claim_automation; the row before it is read first."""
        if automation_id not in self.automations_before:
            self.automations_before[automation_id] = self.store.get_automation(automation_id)
        return bool(self.store.claim_automation(automation_id, slot, now))

    # ---- ProjectLookup, CostLookup, PermissionLookup
    def get_project(self, project_id: str) -> Project | None:
        """ProjectLookup.get_project, passed through."""
        project: Project | None = self.store.get_project(project_id)
        return project

    def task_costs(self, task_id: str) -> tuple[CostRow, ...]:
        """CostLookup.task_costs, passed through."""
        return tuple(self.store.task_costs(task_id))

    def get_quota(self, user: str) -> Quota | None:
        """CostLookup.get_quota, passed through."""
        quota: Quota | None = self.store.get_quota(user)
        return quota

    def unpriced_tokens(self, user: str) -> int:
        """CostLookup.unpriced_tokens, passed through."""
        return int(self.store.unpriced_tokens(user))

    def has_permission(self, user: str | None, project_id: str, permission: str) -> bool:
        """PermissionLookup.has_permission, passed through (the answer unchanged)."""
        answer: bool = self.store.has_permission(user, project_id, permission)
        return answer

    # ---- AttemptLedger
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
        """AttemptLedger.requeue_platform; the task's row before it is read first."""
        if task_id not in self.tasks_before:
            self.tasks_before[task_id] = self.store.get_task(task_id)
        result: RequeueResult = self.store.requeue_platform(
            task_id, expected_status, kind, checkpoint_round, now, reason=reason
        )
        return result

    def latest_attempt(self, task_id: str) -> Attempt | None:
        """AttemptLedger.latest_attempt, passed through."""
        attempt: Attempt | None = self.store.latest_attempt(task_id)
        return attempt

    def list_attempts(self, task_id: str) -> tuple[Attempt, ...]:
        """AttemptLedger.list_attempts, passed through."""
        return tuple(self.store.list_attempts(task_id))

    # ---- AuditLog, FollowupQueue
    def record_audit(self, record: AuditRecord) -> None:
        """AuditLog.record_audit; the record is noted once the store took it."""
        self.store.record_audit(record)
        self.audit.append(record)

    def enqueue_followup(self, task_id: str, text: str) -> None:
        """FollowupQueue.enqueue_followup; the follow-up is noted once queued."""
        self.store.enqueue_followup(task_id, text)
        self.followups.append(Followup(task_id, text))


def _after(ids: Collection[str], get: Any) -> tuple[Any, ...]:
    rows = [get(i) for i in sorted(ids)]
    return tuple(r for r in rows if r is not None)


def touched_world(recorder: TouchRecorder, now: float) -> World:
    """The records `recorder` saw written, as they are now (read back through the
    store's get_task / get_todo / get_automation), with the audit records and follow-ups
    of the delivery: a world file (same shape) holding only what the delivery touched."""
    store = recorder.store
    return World(
        now=now,
        tasks=_after(recorder.tasks_before, store.get_task),
        todos=_after(recorder.todos_before, store.get_todo),
        automations=_after(recorder.automations_before, store.get_automation),
        audit=tuple(recorder.audit),
        followups=tuple(recorder.followups),
    )


def touched_changes(
    recorder: TouchRecorder,
    before_now: float,
    after: World | None = None,
    *,
    virtual: bool = True,
) -> list[str]:
    """What changed in the delivery `recorder` watched, as `world_changes` lines (Rule 3).
    `after` is `touched_world(recorder, ...)` when already built; `virtual` as there."""
    now = touched_world(recorder, before_now) if after is None else after

    def existed(before: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(r for _, r in sorted(before.items()) if r is not None)

    before = World(
        now=before_now,
        tasks=existed(recorder.tasks_before),
        todos=existed(recorder.todos_before),
        automations=existed(recorder.automations_before),
    )
    return world_changes(before, now, virtual=virtual)
