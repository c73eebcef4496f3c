"""Every SQL statement a storage port runs is indexed: no full scan of tasks, todos or
automations (EXPLAIN QUERY PLAN of each statement captured while calling every port
method). World load / export and migrations are bulk operations and are not ports."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from markertools._model import (
    AuditRecord,
    Automation,
    CostRow,
    PermissionGrant,
    Project,
    Quota,
    Task,
    Todo,
)
from markertools_adapters.sqlite import SqliteStore, create_store_from_world
from markertools_adapters.world import World

_BIG_TABLES = ("tasks", "todos", "automations", "costs", "task_attempts", "followups")
_FULL_SCAN = re.compile(r"^SCAN (?:TABLE )?(\w+)")


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
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path: Path = tmp_path_factory.mktemp("plans") / "p.db"
    s = create_store_from_world(_world(), path)
    yield s
    s.close()


@pytest.mark.parametrize(("name", "call"), PORT_CALLS, ids=[name for name, _ in PORT_CALLS])
def test_port_statements_use_indexes(
    store: SqliteStore, name: str, call: Callable[[Any], object]
) -> None:
    statements: list[str] = []
    with store.traced(statements.append):
        call(store)
    queries = [s for s in statements if re.match(r"\s*(SELECT|WITH|UPDATE|DELETE|INSERT)", s, re.I)]
    assert queries, f"{name} ran no query"
    for sql in queries:
        plan = store._db.read(f"EXPLAIN QUERY PLAN {sql}")
        details = [str(row[3]) for row in plan]
        for detail in details:
            match = _FULL_SCAN.match(detail)
            assert not (match and match.group(1) in _BIG_TABLES), f"{name}: {detail} in {sql}"


def test_every_port_method_is_exercised() -> None:
    from markertools_adapters.wiring import storage_port_methods

    methods = storage_port_methods()
    covered = {
        name.split("_noop")[0].removesuffix("_status").removesuffix("_q") for name, _ in PORT_CALLS
    }
    assert methods <= covered, sorted(methods - covered)


def test_the_check_detects_a_full_scan() -> None:
    with create_store_from_world(_world()) as s:
        plan = s._db.read("EXPLAIN QUERY PLAN SELECT * FROM tasks WHERE prompt = 'x'")
        assert any(_FULL_SCAN.match(str(row[3])) for row in plan)


def _statements_for(store: SqliteStore, text: str, sender: str) -> int:
    from markertools import deliver_turn
    from markertools_adapters.clock import SeededRandom, VirtualClock
    from markertools_adapters.wiring import store_ports

    ports = store_ports(store, clock=VirtualClock(10_000.0), random=SeededRandom(text))
    statements: list[str] = []
    with store.traced(statements.append):
        report = deliver_turn(text, sender=sender, outcome="completed", ports=ports)
    assert all(e.outcome == "done" for e in report.entries), report.message
    return len(statements)


def _blocks(kind: str, bodies: list[str]) -> str:
    return "".join(f"```{kind}\n{body}\n```\n\n" for body in bodies)


@pytest.mark.rule("WAI-4")
def test_statements_per_block_are_bounded_and_independent_of_size(tmp_path: Path) -> None:
    """Each extra block of a kind costs the same number of SQL statements, whatever the
    number of tasks in the database and the number of wait targets."""
    counts: dict[int, dict[str, int]] = {}
    for size in (200, 3000):
        tasks = [
            Task(
                id=f"s{i}",
                project_id="p",
                status="running",
                created_by="u",
                parent_task_id="lead",
                created_at=float(i),
            )
            for i in range(size)
        ]
        world = World(
            projects=(Project(id="p"),),
            permissions=(PermissionGrant("u", "p", ("approve_merge", "create_task", "read")),),
            tasks=(
                Task(id="lead", project_id="p", created_by="u"),
                *tasks,
                *(Task(id=f"f{i}", project_id="p", status="completed") for i in range(9)),
            ),
        )
        store = create_store_from_world(world, tmp_path / f"n{size}.db")
        one = {
            "cancel": _statements_for(store, _blocks("task-cancel", ['{"task_id": "s1"}']), "lead"),
            "poll": _statements_for(store, _blocks("task-poll", ['{"task_id": "s2"}']), "lead"),
            "wait": _statements_for(
                store, _blocks("wait-threads", ['{"task_ids": ["f0"]}']), "lead"
            ),
            "create": _statements_for(store, _blocks("task-create", ['{"prompt": "x"}']), "s5"),
        }
        many = {
            "cancel": _statements_for(
                store,
                _blocks("task-cancel", [f'{{"task_id": "s{i}"}}' for i in (10, 11, 12)]),
                "lead",
            ),
            "poll": _statements_for(
                store,
                _blocks("task-poll", [f'{{"task_id": "s{i}"}}' for i in (20, 21, 22)]),
                "lead",
            ),
            "wait": _statements_for(
                store,
                _blocks(
                    "wait-threads",
                    ['{"task_ids": [' + ", ".join(f'"f{i}"' for i in range(1, 9)) + "]}"],
                ),
                "lead",
            ),
            "create": _statements_for(store, _blocks("task-create", ['{"prompt": "y"}'] * 3), "s6"),
        }
        store.close()
        counts[size] = {f"{k}-1": v for k, v in one.items()} | {
            f"{k}-n": v for k, v in many.items()
        }
        # three blocks cost at most three times one block (per-turn facts are read once)
        for kind in ("cancel", "poll", "create"):
            assert many[kind] <= 3 * one[kind], (kind, one[kind], many[kind])
        assert many["wait"] == one["wait"]  # 8 targets: still one read per round (WAI-4)
    assert counts[200] == counts[3000]
