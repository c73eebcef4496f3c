# Owns: the in-memory reference implementation of the core storage ports - TaskStore,
# ProjectLookup, CostLookup, PermissionLookup, AuditLog, FollowupQueue - and of WorldStore
# (load a World, export every table back, todos / automations / attempts included), as a
# mixin of MemoryStore. The SQLite and PostgreSQL adapters are held to these semantics by
# the shared contract suite (tests/contract/).
#
# Invariants:
#   Rule 1: every read-then-write holds `state.lock`, so compare-and-set is atomic.
#   Rule 2: records are frozen values; nothing returned is a view of the tables.
#   Rule 3: export order is canonical (ids ascending; costs by task and round; audit and
#           follow-ups in insertion order), so equal data exports equal worlds.
#   Rule 4 (AUT-3): load_world refuses a world with two active automations of one project
#           sharing a name, as the SQL adapters' unique index does.
from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

import attrs

from markertools import (
    TASK_STATUSES,
    AuditRecord,
    CostRow,
    Followup,
    InvalidArgument,
    LineageLink,
    PermissionGrant,
    Project,
    Quota,
    Task,
    TaskChange,
    TaskListing,
    created_now,
    is_priced,
    refuse_bad_engine,
    refuse_bad_status,
)
from markertools_adapters.memory._state import MemoryState, compare_and_set
from markertools_adapters.world import World

K = TypeVar("K")
V = TypeVar("V")


class CoreMixin:
    _state: MemoryState

    # ---- TaskStore -----------------------------------------------------------------

    def get_task(self, task_id: str) -> Task | None:
        with self._state.lock:
            return self._state.tasks.get(task_id)

    def get_tasks(self, task_ids: Sequence[str]) -> Mapping[str, Task]:
        with self._state.lock:
            tasks = self._state.tasks
            return {i: tasks[i] for i in task_ids if i in tasks}

    def lineage(self, task_id: str, max_steps: int) -> tuple[LineageLink, ...]:
        with self._state.lock:
            tasks = self._state.tasks
            links: list[LineageLink] = []
            current = tasks.get(task_id)
            while current is not None and len(links) <= max_steps:
                links.append(
                    LineageLink(current.id, current.parent_task_id, current.coordinator_part)
                )
                if current.parent_task_id is None:
                    break
                current = tasks.get(current.parent_task_id)
            return tuple(links)

    def count_children(self, parent_id: str) -> int:
        with self._state.lock:
            return sum(
                1
                for t in self._state.tasks.values()
                if t.parent_task_id == parent_id and not t.coordinator_part
            )

    def insert_task(self, task: Task) -> None:
        refuse_bad_status("task", task.status, TASK_STATUSES)
        refuse_bad_engine(task.engine)  # ENG-1
        task = created_now(task, time.time())  # FLT-5: an unset created_at is now
        with self._state.lock:
            if task.id in self._state.tasks:
                raise InvalidArgument(f"task {task.id!r} already exists")
            self._state.tasks[task.id] = task

    def transition_task(
        self, task_id: str, expected_status: str, changes: TaskChange | Mapping[str, object]
    ) -> Task | None:
        fields = TaskChange.of(changes).to_mapping()  # an unknown field raises here
        if "status" in fields:
            refuse_bad_status("task", fields["status"], TASK_STATUSES)
        return compare_and_set(self._state, self._state.tasks, task_id, expected_status, fields)

    def list_tasks(
        self, project_id: str, *, status: str | None, q: str | None, limit: int
    ) -> TaskListing:
        needle = q.lower() if q is not None else None
        with self._state.lock:
            matches = [
                t
                for t in self._state.tasks.values()
                if t.project_id == project_id
                and (status is None or t.status == status)
                and (needle is None or needle in t.prompt.lower())
            ]
        matches.sort(key=lambda t: (t.created_at, t.id), reverse=True)
        counts = Counter(t.status for t in matches)
        return TaskListing(
            rows=tuple(matches[: max(limit, 0)]),
            total=len(matches),
            counts=tuple(sorted(counts.items())),
        )

    # ---- ProjectLookup ---------------------------------------------------------------

    def get_project(self, project_id: str) -> Project | None:
        with self._state.lock:
            return self._state.projects.get(project_id)

    # ---- CostLookup ------------------------------------------------------------------

    def task_costs(self, task_id: str) -> tuple[CostRow, ...]:
        with self._state.lock:
            rows = [r for r in self._state.costs if r.task_id == task_id]
        return tuple(sorted(rows, key=lambda r: r.round))

    def get_quota(self, user: str) -> Quota | None:
        with self._state.lock:
            return self._state.quotas.get(user)

    def unpriced_tokens(self, user: str) -> int:
        with self._state.lock:
            tasks = self._state.tasks
            return sum(
                r.tokens
                for r in self._state.costs
                if not r.estimated
                and not is_priced(r)
                and r.task_id in tasks
                and tasks[r.task_id].created_by == user
            )

    # ---- PermissionLookup ------------------------------------------------------------

    def has_permission(self, user: str | None, project_id: str, permission: str) -> bool:
        if user is None:
            return False
        with self._state.lock:
            return permission in self._state.permissions.get((user, project_id), frozenset())

    # ---- AuditLog / FollowupQueue ----------------------------------------------------

    def record_audit(self, record: AuditRecord) -> None:
        with self._state.lock:
            self._state.audit.append(record)

    def enqueue_followup(self, task_id: str, text: str) -> None:
        with self._state.lock:
            self._state.followups.append(Followup(task_id, text))

    # ---- WorldStore --------------------------------------------------------------------

    def load_world(self, world: World) -> None:
        """Fill this (empty) store from `world`; a duplicate key raises and loads nothing."""
        staged = MemoryState()
        _put_unique(staged.projects, ((p.id, p) for p in world.projects), "project")
        grants: dict[tuple[str, str], frozenset[str]] = {}
        for g in world.permissions:
            key = (g.user, g.project)
            grants[key] = grants.get(key, frozenset()) | frozenset(g.grants)
        staged.permissions = grants
        _put_unique(staged.tasks, ((t.id, t) for t in world.tasks), "task")
        _put_unique(staged.todos, ((t.id, t) for t in world.todos), "todo")
        _put_unique(staged.automations, ((a.id, a) for a in world.automations), "automation")
        active_names: set[tuple[str, str]] = set()
        for a in world.automations:  # Rule 4 (AUT-3)
            if a.status == "active" and (a.project_id, a.name) in active_names:
                raise InvalidArgument(
                    f"automation {a.id!r}: an active automation of project "
                    f"{a.project_id!r} is already named {a.name!r}"
                )
            if a.status == "active":
                active_names.add((a.project_id, a.name))
        staged.costs = list(world.costs)
        _put_unique(staged.quotas, ((q.user, q) for q in world.quotas), "quota")
        _put_unique(
            staged.attempts, (((a.task_id, a.attempt_no), a) for a in world.attempts), "attempt"
        )
        staged.audit = list(world.audit)
        staged.followups = list(world.followups)
        with self._state.lock:
            if self._state.tasks or self._state.projects or self._state.todos:
                raise InvalidArgument("load_world needs an empty store")
            for field in attrs.fields(MemoryState):
                if field.name != "lock":
                    setattr(self._state, field.name, getattr(staged, field.name))

    def export_world(self, now: float) -> World:
        with self._state.lock:
            s = self._state
            return World(
                now=now,
                projects=tuple(s.projects[k] for k in sorted(s.projects)),
                permissions=tuple(
                    PermissionGrant(user, project, tuple(sorted(grants)))
                    for (user, project), grants in sorted(s.permissions.items())
                ),
                tasks=tuple(s.tasks[k] for k in sorted(s.tasks)),
                todos=tuple(s.todos[k] for k in sorted(s.todos)),
                automations=tuple(s.automations[k] for k in sorted(s.automations)),
                costs=tuple(sorted(s.costs, key=lambda r: (r.task_id, r.round))),
                quotas=tuple(s.quotas[k] for k in sorted(s.quotas)),
                attempts=tuple(s.attempts[k] for k in sorted(s.attempts)),
                audit=tuple(s.audit),
                followups=tuple(s.followups),
            )

    # ---- conveniences for embedding code and tests (not ports) ---------------------------

    def followups_for(self, task_id: str) -> tuple[str, ...]:
        with self._state.lock:
            return tuple(f.text for f in self._state.followups if f.task_id == task_id)

    def audit_records(self) -> tuple[AuditRecord, ...]:
        with self._state.lock:
            return tuple(self._state.audit)


def _put_unique(table: dict[K, V], items: Iterable[tuple[K, V]], what: str) -> None:
    for key, value in items:
        if key in table:
            raise InvalidArgument(f"duplicate {what} {key!r}")
        table[key] = value
