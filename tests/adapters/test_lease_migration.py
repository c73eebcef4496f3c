"""Migration step 8 (leases, affinity, goal checkpoints) on a database written before it:
a version-7 SQLite file or PostgreSQL schema keeps its tasks, gains the lease tables, and
a claim with a lease, the crash requeue and the lease-dropping trigger work on the old
rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.postgres import drop_schema
from test_money_migration import Old

from markertools import TaskChange
from markertools_adapters.postgres._schema import LATEST_VERSION as PG_LATEST
from markertools_adapters.sqlite._schema import LATEST_VERSION as SQLITE_LATEST

V7 = 7  # the last schema version without the lease tables


class Old7(Old):
    def create(self) -> None:
        if self.engine == "sqlite":
            from markertools_adapters.sqlite import SqliteStore

            SqliteStore(self.path, migrate_to=V7).close()
        else:
            from markertools_adapters.postgres import PostgresStore

            PostgresStore(self.dsn, schema=self.schema, migrate_to=V7).close()


@pytest.fixture(params=["sqlite", "postgres"])
def old(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Old7]:
    database = Old7(request.param, tmp_path)
    database.create()
    yield database
    if request.param == "postgres":
        drop_schema(database.dsn, database.schema)


def test_both_engines_are_at_step_8_or_later() -> None:
    assert SQLITE_LATEST == PG_LATEST >= 8


@pytest.mark.rule("WRK-6", "WRK-7")
def test_a_version_7_database_keeps_its_tasks_and_gains_leases(old: Old7) -> None:
    no = False if old.engine == "postgres" else 0
    old.execute(
        "INSERT INTO tasks (id, project_id, status, executor, goal_mode, is_coordinator,"
        " prompt, created_at, auto_resume_count, turn) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            ("t1", "p1", "running", "local", no, no, "fix the bug", 1.5, 0, 3),
            ("t2", "p1", "queued", "local", no, no, "write docs", 2.5, 1, 0),
        ],
    )
    with old.open() as store:
        t1 = store.get_task("t1")
        assert (t1.prompt, t1.status, t1.turn) == ("fix the bug", "running", 3)
        assert store.get_lease("t1") is None  # a task running before step 8 has no lease
        claim = store.claim_task("p1", "h1", now=100.0, lease_seconds=30.0)
        assert claim.task.id == "t2"
        lease = store.get_lease("t2")
        assert (lease.host, lease.expires_at, lease.started_at) == ("h1", 130.0, 100.0)
        result = store.requeue_expired("t2", "h1", 131.0, affinity_seconds=60.0)
        assert result.ok, result.error
        assert store.get_task("t2").status == "queued"
        assert store.get_affinity("t2").until == 191.0
        store.record_checkpoint("t1", 2, thread_id="th", turn_id="u2", now=5.0)
        assert store.last_checkpoint("t1").round == 2
        assert store.claim_task("p1", "h1", now=140.0, lease_seconds=30.0).task.id == "t2"
        store.transition_task("t2", "running", TaskChange(status="failed"))
        assert store.get_lease("t2") is None  # the step-8 trigger drops it
    assert old.version() >= 8
