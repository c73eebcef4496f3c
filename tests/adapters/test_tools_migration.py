"""Migration step 7 (same-turn tools) on a database written before it: a version-6
SQLite file or PostgreSQL schema keeps its tasks and audit records - which read back
with turn 0, no thread id and the audit source "block" - and gains the call ledger, the
held follow-ups and the task tokens, whose revocation trigger works on the old rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.postgres import drop_schema
from test_money_migration import Old

from markertools import TaskChange, authorize_task_token, mint_task_token, token_hash
from markertools_adapters.clock import SeededRandom
from markertools_adapters.postgres._schema import LATEST_VERSION as PG_LATEST
from markertools_adapters.sqlite._schema import LATEST_VERSION as SQLITE_LATEST

V6 = 6  # the last schema version without the same-turn tool tables


class Old6(Old):
    def create(self) -> None:
        if self.engine == "sqlite":
            from markertools_adapters.sqlite import SqliteStore

            SqliteStore(self.path, migrate_to=V6).close()
        else:
            from markertools_adapters.postgres import PostgresStore

            PostgresStore(self.dsn, schema=self.schema, migrate_to=V6).close()


@pytest.fixture(params=["sqlite", "postgres"])
def old(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Old6]:
    database = Old6(request.param, tmp_path)
    database.create()
    yield database
    if request.param == "postgres":
        drop_schema(database.dsn, database.schema)


def test_both_engines_are_at_step_7_or_later() -> None:
    assert SQLITE_LATEST == PG_LATEST >= 7


@pytest.mark.rule("TOL-3", "TOL-4")
def test_a_version_6_database_keeps_its_data_and_gains_the_tool_tables(old: Old6) -> None:
    no = False if old.engine == "postgres" else 0
    old.execute(
        "INSERT INTO tasks (id, project_id, status, executor, goal_mode, is_coordinator,"
        " prompt, created_at, auto_resume_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            ("t1", "p1", "running", "local", no, no, "fix the bug", 1.5, 0),
            ("t2", "p1", "queued", "local", no, no, "write docs", 2.5, 1),
        ],
    )
    old.execute(
        "INSERT INTO audit (sender, kind, target, outcome, reason, time) VALUES (?, ?, ?, ?, ?, ?)",
        [("t1", "task-poll", "t2", "done", "t2 is queued", 3.0)],
    )
    with old.open() as store:
        t1, t2 = store.get_task("t1"), store.get_task("t2")
        assert (t1.prompt, t1.turn, t1.thread_id) == ("fix the bug", 0, None)
        assert (t2.status, t2.auto_resume_count, t2.turn) == ("queued", 1, 0)
        (audit,) = store.export_world(0.0).audit
        assert (audit.kind, audit.reason, audit.source) == ("task-poll", "t2 is queued", "block")
        assert store.claim_task("p1", "h1").task.id == "t2"  # the only queued task
        assert store.get_task("t2").turn == 1
        assert store.record_turn_use("t1", 0, "task-poll") == 1
        store.hold_followup("t1", 0, "/goal g")
        assert store.release_held_followups("t1") == ("/goal g",)
        token = mint_task_token(store, "t1", now=10.0, token_hex=SeededRandom(3).token_hex)
        assert authorize_task_token(store, token.token, 11.0).task_id == "t1"
        store.transition_task("t1", "running", TaskChange(status="failed"))
        assert store.task_token(token_hash(token.token)).revoked
    assert old.version() >= 7
