"""Every SQL statement a storage port runs is indexed: no full scan of tasks, todos or
automations (EXPLAIN QUERY PLAN of each statement captured while calling every port
method). World load / export and migrations are bulk operations and are not ports."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.query_plans import PORT_CALLS, _blocks, _world

from markertools.domain.model import (
    PermissionGrant,
    Project,
    Task,
)
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.sqlite import SqliteStore, create_store_from_world
from markertools_adapters.world import World

_BIG_TABLES = ("tasks", "todos", "automations", "costs", "task_attempts", "followups")
_FULL_SCAN = re.compile(r"^SCAN (?:TABLE )?(\w+)")


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

    ports = store_ports(
        store, clock=VirtualClock(10_000.0), random=SeededRandom(text), executor=NoopExecutor()
    )
    statements: list[str] = []
    with store.traced(statements.append):
        report = deliver_turn(text, sender=sender, outcome="completed", ports=ports)
    assert all(e.outcome == "done" for e in report.entries), report.message
    return len(statements)


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
