"""Shared by the SQLite and PostgreSQL query-plan tests: a 200-task world, every storage
port call on it, and a turn of N blocks of one kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from markertools.domain.model import (
    AuditRecord,
    Automation,
    CostRow,
    PermissionGrant,
    Project,
    Quota,
    Task,
    Todo,
)
from markertools_adapters.world import World


def _world() -> World:
    tasks = [
        Task(
            id=f"t{i:03d}",
            project_id="p",
            parent_task_id=f"t{i - 1:03d}" if i else None,
            created_by="u",
            created_at=float(i),
            prompt=f"job {i}",
        )
        for i in range(200)
    ]
    return World(
        projects=(Project(id="p", name="shop"),),
        permissions=(PermissionGrant("u", "p", ("read",)),),
        tasks=tuple(tasks),
        todos=tuple(Todo(id=f"d{i:03d}", project_id="p", title=f"todo {i}") for i in range(50)),
        automations=tuple(
            Automation(
                id=f"a{i:03d}", project_id="p", name=f"n{i}", prompt="x", created_at=float(i)
            )
            for i in range(50)
        ),
        costs=tuple(CostRow(task_id=f"t{i:03d}", round=1, priced=i % 2 == 0) for i in range(200)),
        quotas=(Quota(user="u", total_usd=5.0),),
    )


PORT_CALLS: list[tuple[str, Callable[[Any], object]]] = [
    ("get_task", lambda s: s.get_task("t005")),
    ("get_tasks", lambda s: s.get_tasks(["t001", "t002", "nope"])),
    ("lineage", lambda s: s.lineage("t150", 32)),
    ("count_children", lambda s: s.count_children("t010")),
    ("insert_task", lambda s: s.insert_task(Task(id="new", project_id="p"))),
    ("transition_task", lambda s: s.transition_task("t007", "running", {"status": "interrupted"})),
    ("transition_task_noop", lambda s: s.transition_task("t008", "running", {})),
    ("list_tasks", lambda s: s.list_tasks("p", status=None, q=None, limit=20)),
    ("list_tasks_status", lambda s: s.list_tasks("p", status="running", q=None, limit=20)),
    ("list_tasks_q", lambda s: s.list_tasks("p", status="queued", q="job", limit=20)),
    ("get_todo", lambda s: s.get_todo("d001")),
    ("list_todos", lambda s: s.list_todos("p", statuses={"pending", "blocked"}, q=None, limit=20)),
    ("list_todos_q", lambda s: s.list_todos("p", statuses={"pending"}, q="todo", limit=20)),
    ("insert_todo", lambda s: s.insert_todo(Todo(id="dnew", project_id="p"))),
    ("update_todo", lambda s: s.update_todo("d002", "pending", {"status": "completed"})),
    ("get_automation", lambda s: s.get_automation("a001")),
    ("active_automation_names", lambda s: s.active_automation_names("p")),
    (
        "insert_automation",
        lambda s: s.insert_automation(Automation(id="anew", project_id="p", name="z", prompt="y")),
    ),
    ("due_automations", lambda s: s.due_automations(10.0)),
    ("claim_automation", lambda s: s.claim_automation("a003", 3.0, 10.0)),
    ("get_project", lambda s: s.get_project("p")),
    ("task_costs", lambda s: s.task_costs("t003")),
    ("get_quota", lambda s: s.get_quota("u")),
    ("unpriced_tokens", lambda s: s.unpriced_tokens("u")),
    ("has_permission", lambda s: s.has_permission("u", "p", "read")),
    (
        "requeue_platform",
        lambda s: s.requeue_platform("t009", "running", "platform_fresh", -1, 5.0),
    ),
    ("latest_attempt", lambda s: s.latest_attempt("t009")),
    ("list_attempts", lambda s: s.list_attempts("t009")),
    (
        "record_audit",
        lambda s: s.record_audit(AuditRecord("t1", "task-cancel", None, "done", "r", 1.0)),
    ),
    ("enqueue_followup", lambda s: s.enqueue_followup("t001", "report")),
    # LeaseStore (WRK-6, WRK-7, WRK-10)
    ("claim_task_lease", lambda s: s.claim_task("p", "h1", now=5.0, lease_seconds=30.0)),
    ("renew_leases", lambda s: s.renew_leases("h1", ["t001", "t002"], lease_seconds=3, now=5)),
    ("get_lease", lambda s: s.get_lease("t001")),
    ("expired_leases", lambda s: s.expired_leases(5.0, "p")),
    ("requeue_expired", lambda s: s.requeue_expired("t001", "h1", 5.0, affinity_seconds=9)),
    ("get_affinity", lambda s: s.get_affinity("t001")),
    ("cancelled_among", lambda s: s.cancelled_among(["t001", "t002"])),
    ("last_checkpoint", lambda s: s.last_checkpoint("t001")),
    ("fleet_snapshot", lambda s: s.fleet_snapshot("p", 5.0)),
]


def _blocks(kind: str, bodies: list[str]) -> str:
    return "".join(f"```{kind}\n{body}\n```\n\n" for body in bodies)
