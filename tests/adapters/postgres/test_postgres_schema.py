"""PostgreSQL schema: the same versioned forward migrations as SQLite (same tables,
columns and indexes), refusal of newer and foreign schemas, rollback of a failed step,
concurrent hosts migrating a fresh schema exactly once, and the status NOTIFY trigger."""

from __future__ import annotations

import json
import multiprocessing
import threading
from typing import Any

import pytest
from support.postgres import SKIP_REASON, connect, dsn, pg_dsn, schema

from markertools.domain.model import Automation, Task
from markertools.domain.schedule import next_run_at
from markertools_adapters.postgres import (
    LATEST_VERSION,
    NOTIFY_CHANNEL,
    PostgresStore,
    SchemaError,
    SchemaTooNew,
    open_store,
)
from markertools_adapters.postgres._codec import AUTOMATIONS, TASKS
from markertools_adapters.postgres._schema import MARKERTOOLS_TABLES, MIGRATIONS

pytestmark = [pytest.mark.postgres, pytest.mark.skipif(pg_dsn() is None, reason=SKIP_REASON)]
__all__ = ["dsn", "schema"]  # fixtures


def _columns(conn: Any, table: str) -> list[str]:
    rows = conn.execute(
        "SELECT column_name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position",
        (table,),
    ).fetchall()
    return [row[0] for row in rows]


def test_fresh_schema_is_at_the_latest_version_and_matches_sqlite(dsn: str, schema: str) -> None:
    from markertools_adapters.sqlite import LATEST_VERSION as SQLITE_VERSION

    with open_store(dsn, 1, schema=schema) as store:
        assert store.schema_version == LATEST_VERSION == len(MIGRATIONS) == SQLITE_VERSION
    with connect(dsn, schema) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(LATEST_VERSION,)]
        for table in MARKERTOOLS_TABLES:
            assert _columns(conn, table), table


def test_tables_match_the_sqlite_schema_column_for_column(
    dsn: str, schema: str, tmp_path: Any
) -> None:
    import sqlite3

    from markertools_adapters.sqlite import open_store as open_sqlite

    open_sqlite(tmp_path / "s.db").close()
    lite = sqlite3.connect(tmp_path / "s.db")
    lite_tables = {
        name
        for (name,) in lite.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if not name.startswith("sqlite_")
    }
    open_store(dsn, 1, schema=schema).close()
    with connect(dsn, schema) as conn:
        pg_tables = {
            row[0]
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
        }
        assert pg_tables == lite_tables
        for table in sorted(lite_tables):
            lite_columns = [row[1] for row in lite.execute(f"PRAGMA table_info({table})")]
            assert _columns(conn, table) == lite_columns, table
        pg_indexes = {
            row[0]
            for row in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
                " AND indexname NOT LIKE '%%_pkey'"
            )
        }
    lite_indexes = {
        name
        for (name,) in lite.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
        )
    }
    assert pg_indexes == lite_indexes


def test_columns_match_the_record_codecs(dsn: str, schema: str) -> None:
    open_store(dsn, 1, schema=schema).close()
    with connect(dsn, schema) as conn:
        assert _columns(conn, "tasks") == list(TASKS.names)
        assert _columns(conn, "automations") == [*AUTOMATIONS.names, "next_run_at"]


@pytest.mark.rule("SCH-5")
def test_an_older_schema_is_migrated_forward(dsn: str, schema: str) -> None:
    PostgresStore(dsn, schema=schema, migrate_to=1).close()
    automation = Automation(
        id="a", project_id="p", name="n", prompt="x", created_at=100.0, first_run_at=500.0
    )
    with connect(dsn, schema) as conn:
        assert "next_run_at" not in _columns(conn, "automations")
        conn.execute(AUTOMATIONS.insert_sql, AUTOMATIONS.encode(automation))
        # only the columns a version-1 schema has (step 5 added repo_url and
        # retried_after_attempt, step 7 turn and thread_id, step 9 epoch, step 10 engine)
        row = dict(zip(TASKS.names, TASKS.encode(Task(id="t", project_id="p")), strict=True))
        v1 = [
            n
            for n in TASKS.names
            if n
            not in ("repo_url", "retried_after_attempt", "turn", "thread_id", "epoch", "engine")
        ]
        conn.execute(
            f"INSERT INTO tasks ({', '.join(v1)}) VALUES ({', '.join(['%s'] * len(v1))})",
            [row[n] for n in v1],
        )
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (1,)
    with open_store(dsn, 1, schema=schema) as store:
        assert store.schema_version == LATEST_VERSION
        assert store.get_task("t") == Task(id="t", project_id="p")
        assert store.due_automations(499.0) == ()
        assert store.due_automations(500.0) == (automation,)
    with connect(dsn, schema) as conn:
        stored = conn.execute("SELECT next_run_at FROM automations WHERE id = 'a'").fetchone()
        assert stored == (next_run_at(automation),)


def test_a_newer_schema_is_refused_and_left_untouched(dsn: str, schema: str) -> None:
    open_store(dsn, 1, schema=schema).close()
    with connect(dsn, schema) as conn:
        conn.execute("UPDATE schema_version SET version = %s", (LATEST_VERSION + 1,))
    with pytest.raises(SchemaTooNew, match=rf"version {LATEST_VERSION + 1}, newer"):
        open_store(dsn, 1, schema=schema)
    with connect(dsn, schema) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (
            LATEST_VERSION + 1,
        )


def test_foreign_tables_with_our_names_are_refused_others_are_left_alone(
    dsn: str, schema: str
) -> None:
    with connect(dsn) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    with connect(dsn, schema) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    with open_store(dsn, 1, schema=schema) as store:  # unrelated tables are fine
        assert store.schema_version == LATEST_VERSION
    with connect(dsn, schema) as conn:
        conn.execute("DROP TABLE schema_version")
    with pytest.raises(SchemaError, match=r"already has tables named .*tasks"):
        open_store(dsn, 1, schema=schema)


def test_must_exist_refuses_a_schema_without_markertools_tables(dsn: str, schema: str) -> None:
    with pytest.raises(SchemaError, match=f"schema '{schema}' does not exist"):
        open_store(dsn, 1, schema=schema, must_exist=True)
    with connect(dsn) as conn:
        exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
        assert exists is None  # nothing was created
        conn.execute(f'CREATE SCHEMA "{schema}"')
    with pytest.raises(SchemaError, match="holds no markertools tables"):
        open_store(dsn, 1, schema=schema, must_exist=True)
    with connect(dsn, schema) as conn:
        assert _columns(conn, "tasks") == []  # still nothing created


def test_a_failed_step_rolls_back_to_the_previous_version(
    dsn: str, schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from markertools_adapters.postgres import _schema

    PostgresStore(dsn, schema=schema, migrate_to=1).close()

    def boom(conn: Any) -> None:
        raise RuntimeError("disk on fire")

    broken = (_schema.MIGRATIONS[0], (*_schema.MIGRATIONS[1], boom))
    monkeypatch.setattr(_schema, "MIGRATIONS", broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        open_store(dsn, 1, schema=schema)
    monkeypatch.undo()
    with connect(dsn, schema) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (1,)
        assert "next_run_at" not in _columns(conn, "automations")
    with open_store(dsn, 1, schema=schema) as store:
        assert store.schema_version == LATEST_VERSION


def _open_and_report(dsn: str, schema: str, queue: Any) -> None:
    store = open_store(dsn, 1, schema=schema)
    queue.put(store.schema_version)
    store.close()


def test_concurrent_hosts_migrate_a_fresh_schema_once(dsn: str, schema: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    queue: Any = ctx.Queue()
    procs = [ctx.Process(target=_open_and_report, args=(dsn, schema, queue)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert sorted(queue.get(timeout=5) for _ in procs) == [LATEST_VERSION] * 4
    with connect(dsn, schema) as conn:
        assert conn.execute("SELECT count(*) FROM schema_version").fetchone() == (1,)


# ---- the status NOTIFY trigger -----------------------------------------------------------


def _notifications(dsn: str, schema: str, action: Any) -> list[dict[str, Any]]:
    """Run `action()` while LISTENing, then change a marker task; every payload that
    arrives before the marker's (notifications come in commit order)."""
    with connect(dsn) as listener:
        listener.execute(f"LISTEN {NOTIFY_CHANNEL}")
        action()
        with connect(dsn, schema) as other:
            other.execute(
                "INSERT INTO tasks (id, project_id, status, executor, goal_mode, is_coordinator,"
                " prompt, created_at, auto_resume_count)"
                " VALUES ('marker', 'p', 'queued', 'local', false, false, '', 0, 0)"
            )
            other.execute("UPDATE tasks SET status = 'running' WHERE id = 'marker'")
        got = []
        for note in listener.notifies(timeout=60):
            payload = json.loads(note.payload)
            if payload.get("id") == "marker":
                return got
            got.append(payload)
    raise AssertionError(f"the marker's notification never came; got {got}")


def test_every_status_change_notifies_with_schema_id_and_status(dsn: str, schema: str) -> None:
    store = open_store(dsn, 1, schema=schema)
    try:
        store.insert_task(Task(id="t\x00", project_id="p", status="running"))

        def act() -> None:
            store.transition_task("t\x00", "running", {"result_text": "no status change"})
            store.transition_task("t\x00", "running", {"status": "completed"})
            with connect(dsn, schema) as other:  # another writer, plain SQL
                other.execute("UPDATE tasks SET status = 'merged'")
                other.execute("UPDATE tasks SET status = 'merged'")  # unchanged: no notify

        got = _notifications(dsn, schema, act)
    finally:
        store.close()
    assert got == [
        {"schema": schema, "id": "t\x01\x01", "status": "completed"},
        {"schema": schema, "id": "t\x01\x01", "status": "merged"},
    ]


def test_an_oversized_payload_still_lets_the_status_change_and_notifies_everyone(
    dsn: str, schema: str
) -> None:
    huge = "x" * 9000
    store = open_store(dsn, 1, schema=schema)
    try:
        store.insert_task(Task(id=huge, project_id="p", status="running"))
        got = _notifications(
            dsn, schema, lambda: store.transition_task(huge, "running", {"status": "failed"})
        )
        task = store.get_task(huge)
    finally:
        store.close()
    assert task is not None and task.status == "failed"
    assert got == [{"schema": schema, "id": None}]


def test_migration_lock_serialises_threads_too(dsn: str, schema: str) -> None:
    errors: list[BaseException] = []

    def open_once() -> None:
        try:
            open_store(dsn, 1, schema=schema).close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_once) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
