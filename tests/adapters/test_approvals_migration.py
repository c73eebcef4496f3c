"""Migration step 10 (approvals, approval rules, a task's engine) on a database written
before it: a version-9 SQLite file or PostgreSQL schema keeps its tasks, gains the
approvals tables and `tasks.engine` (NULL), and requests, answers, rules and the requeue
that expires them work on the old rows (APR-1, APR-2, APR-3, APR-5)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.postgres import drop_schema
from test_money_migration import Old

from markertools import ApprovalRequest, ApprovalRule
from markertools_adapters.postgres._schema import LATEST_VERSION as PG_LATEST
from markertools_adapters.sqlite._schema import LATEST_VERSION as SQLITE_LATEST

V9 = 9  # the last schema version without approvals


class Old9(Old):
    def create(self) -> None:
        if self.engine == "sqlite":
            from markertools_adapters.sqlite import SqliteStore

            SqliteStore(self.path, migrate_to=V9).close()
        else:
            from markertools_adapters.postgres import PostgresStore

            PostgresStore(self.dsn, schema=self.schema, migrate_to=V9).close()


@pytest.fixture(params=["sqlite", "postgres"])
def old(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Old9]:
    database = Old9(request.param, tmp_path)
    database.create()
    yield database
    if request.param == "postgres":
        drop_schema(database.dsn, database.schema)


def test_both_engines_are_at_step_10() -> None:
    assert SQLITE_LATEST == PG_LATEST >= 10  # step 11: costs.priced_by


@pytest.mark.rule("APR-1", "APR-2", "APR-3", "APR-5")
def test_a_version_9_database_keeps_its_tasks_and_gains_approvals(old: Old9) -> None:
    no = False if old.engine == "postgres" else 0
    old.execute(
        "INSERT INTO tasks (id, project_id, status, executor, goal_mode, is_coordinator,"
        " prompt, created_at, auto_resume_count, turn, epoch) VALUES (?, ?, ?, ?, ?, ?, ?, ?,"
        " ?, ?, ?)",
        [("t1", "p1", "running", "local", no, no, "fix the bug", 1.5, 1, 3, 2)],
    )
    with old.open() as store:
        task = store.get_task("t1")
        assert (task.prompt, task.status, task.epoch, task.engine) == (
            "fix the bug",
            "running",
            2,
            None,
        )
        stored = store.insert_approval(
            ApprovalRequest(
                "apr-1", "t1", "?", "command", ("make", "test"), asked_at=2.0, expires_at=902.0
            )
        )
        assert (stored.project_id, stored.attempt) == ("p1", 1)
        rule = store.add_approval_rule(ApprovalRule("r-1", "p1", "allow", prefix=("make",)))
        assert rule.position == 1
        store.insert_approval(
            ApprovalRequest(
                "apr-2",
                "t1",
                "?",
                "permission",
                None,
                None,
                ("/net",),
                asked_at=3.0,
                expires_at=903.0,
            )
        )
        answered = store.answer_approval(
            "apr-1", "approved", answered_by="person:ana", reason=None, now=4.0
        )
        assert answered is not None and answered.status == "approved"
        assert store.requeue_platform("t1", "running", "platform_fresh", -1, 5.0).ok
        assert store.get_approval("apr-2").answered_by == "requeue"
    assert old.version() == SQLITE_LATEST
