"""PostgreSQL: every statement a storage port really runs is served by an index, and the
number of statements per block does not grow with the database (the PostgreSQL half of
tests/adapters/sqlite/test_sqlite_query_plans.py, with the same port calls).

The statements are captured as the adapter sends them (psycopg.Connection.execute is
wrapped for the duration of one call), then EXPLAINed with their own parameters and
sequential scans disabled: a "Seq Scan" left in the plan means no index can serve it."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from support.postgres import SKIP_REASON, connect, dsn, pg_dsn, require_dsn, throwaway_store
from support.query_plans import PORT_CALLS, _blocks, _world

from markertools.domain.model import PermissionGrant, Project, Task
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.world import World

pytestmark = [pytest.mark.postgres, pytest.mark.skipif(pg_dsn() is None, reason=SKIP_REASON)]
__all__ = ["dsn"]  # fixture

_QUERY = re.compile(r"\s*(SELECT|WITH|UPDATE|DELETE)\b", re.I)
_STATEMENT = re.compile(r"\s*(SELECT|WITH|UPDATE|DELETE|INSERT)\b", re.I)


class Recorder:
    """Every statement text (and its parameters) sent through psycopg while active."""

    def __init__(self) -> None:
        self.statements: list[tuple[str, Any]] = []

    def queries(self) -> list[tuple[str, Any]]:
        return [(q, p) for q, p in self.statements if _QUERY.match(q)]

    def data_statements(self) -> int:
        return sum(1 for q, _ in self.statements if _STATEMENT.match(q))


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> Callable[[], Any]:
    """`with recording() as recorder:` - capture what psycopg sends inside the block."""
    original = psycopg.Connection.execute

    @contextlib.contextmanager
    def active() -> Iterator[Recorder]:
        recorder = Recorder()

        def spy(self: Any, query: Any, params: Any = None, **kw: Any) -> Any:
            if isinstance(query, str):
                recorder.statements.append((query, params))
            return original(self, query, params, **kw)

        monkeypatch.setattr(psycopg.Connection, "execute", spy)
        try:
            yield recorder
        finally:
            monkeypatch.setattr(psycopg.Connection, "execute", original)

    return active


@pytest.fixture(scope="module")
def plans_store() -> Iterator[Any]:
    store = throwaway_store(_world())
    yield store
    store.close()


@pytest.mark.parametrize(("name", "call"), PORT_CALLS, ids=[name for name, _ in PORT_CALLS])
def test_port_statements_use_indexes(
    plans_store: Any, recording: Callable[[], Any], name: str, call: Callable[[Any], object]
) -> None:
    with recording() as recorder:
        call(plans_store)
    statements = recorder.statements
    assert any(_STATEMENT.match(q) for q, _ in statements), f"{name} ran no statement"
    with connect(require_dsn(), plans_store.schema) as conn:
        conn.execute("SET enable_seqscan = off")
        for query, params in recorder.queries():
            plan = "\n".join(row[0] for row in conn.execute(f"EXPLAIN {query}", params))
            assert "Seq Scan" not in plan, f"{name}: {query}\n{plan}"


@pytest.mark.rule("WAI-4", "LIN-4")
@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("get_tasks", lambda s: s.get_tasks([f"t{i:03d}" for i in range(8)] + ["nope"])),
        ("lineage", lambda s: s.lineage("t150", 32)),
        ("list_tasks", lambda s: s.list_tasks("p", status="running", q="JOB", limit=5).rows),
        ("list_todos", lambda s: s.list_todos("p", statuses={"pending"}, q="todo", limit=5).rows),
    ],
)
def test_batch_reads_are_one_statement(
    plans_store: Any, recording: Callable[[], Any], name: str, call: Callable[[Any], object]
) -> None:
    """WAI-4: a wait round reads all its targets with one query; the lineage walk is one
    recursive CTE; a listing's rows and counts come from one statement."""
    with recording() as recorder:
        result = call(plans_store)
    assert result  # it found something, so the one statement really did the work
    assert recorder.data_statements() == 1, recorder.statements


def _statements_for(store: Any, recording: Callable[[], Any], text: str, sender: str) -> int:
    from markertools import deliver_turn
    from markertools_adapters.clock import SeededRandom, VirtualClock
    from markertools_adapters.wiring import store_ports

    ports = store_ports(
        store, clock=VirtualClock(10_000.0), random=SeededRandom(text), executor=NoopExecutor()
    )
    with recording() as recorder:
        report = deliver_turn(text, sender=sender, outcome="completed", ports=ports)
    assert all(e.outcome == "done" for e in report.entries), report.message
    return int(recorder.data_statements())


@pytest.mark.rule("WAI-4")
def test_statements_per_block_are_bounded_and_independent_of_size(
    recording: Callable[[], Any],
) -> None:
    """Each extra block of a kind costs at most what the first one did, whatever the number
    of tasks in the database and the number of wait targets (one read per round)."""
    counts: dict[int, dict[str, int]] = {}
    for size in (50, 1500):
        world = World(
            projects=(Project(id="p"),),
            permissions=(PermissionGrant("u", "p", ("approve_merge", "create_task", "read")),),
            tasks=(
                Task(id="lead", project_id="p", created_by="u"),
                *(
                    Task(
                        id=f"s{i}",
                        project_id="p",
                        status="running",
                        created_by="u",
                        parent_task_id="lead",
                        created_at=float(i),
                    )
                    for i in range(size)
                ),
                *(Task(id=f"f{i}", project_id="p", status="completed") for i in range(9)),
            ),
        )
        store = throwaway_store(world)
        try:

            def n(text: str, sender: str = "lead", store: Any = store) -> int:
                return _statements_for(store, recording, text, sender)

            one = {
                "cancel": n(_blocks("task-cancel", ['{"task_id": "s1"}'])),
                "poll": n(_blocks("task-poll", ['{"task_id": "s2"}'])),
                "wait": n(_blocks("wait-threads", ['{"task_ids": ["f0"]}'])),
                "create": n(_blocks("task-create", ['{"prompt": "x"}']), "s5"),
            }
            ids = ", ".join(f'"f{i}"' for i in range(1, 9))
            many = {
                "cancel": n(
                    _blocks("task-cancel", [f'{{"task_id": "s{i}"}}' for i in (10, 11, 12)])
                ),
                "poll": n(_blocks("task-poll", [f'{{"task_id": "s{i}"}}' for i in (20, 21, 22)])),
                "wait": n(_blocks("wait-threads", ["{" + f'"task_ids": [{ids}]' + "}"])),
                "create": n(_blocks("task-create", ['{"prompt": "y"}'] * 3), "s6"),
            }
        finally:
            store.close()
        for kind in ("cancel", "poll", "create"):
            assert many[kind] <= 3 * one[kind], (kind, one[kind], many[kind])
        assert many["wait"] == one["wait"]  # 8 targets: still one read per round
        counts[size] = {f"{k}-1": v for k, v in one.items()} | {
            f"{k}-n": v for k, v in many.items()
        }
    assert counts[50] == counts[1500]
