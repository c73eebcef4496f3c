"""SQLite schema: versioned forward migrations, refusal of newer / foreign databases,
connection settings (WAL, busy timeout), STRICT tables that match the record codecs."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import attrs
import pytest

from markertools.domain.model import Automation, Task
from markertools.domain.schedule import next_run_at
from markertools_adapters.permissions import PERMISSION_TABLES
from markertools_adapters.sqlite import (
    LATEST_VERSION,
    SchemaError,
    SchemaTooNew,
    SqliteStore,
    open_store,
)
from markertools_adapters.sqlite._codec import (
    ATTEMPTS,
    AUDIT,
    AUTOMATIONS,
    COSTS,
    PROJECTS,
    QUOTAS,
    TASKS,
    TODOS,
)
from markertools_adapters.sqlite._schema import MIGRATIONS


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def test_fresh_database_is_at_the_latest_version(tmp_path: Path) -> None:
    with open_store(tmp_path / "a.db") as store:
        assert store.schema_version == LATEST_VERSION == len(MIGRATIONS)
    conn = sqlite3.connect(tmp_path / "a.db")
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(LATEST_VERSION,)]


def test_connection_uses_wal_and_a_busy_timeout(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "a.db", busy_timeout=7.5) as store:
        conn = store._db.conn
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA busy_timeout").fetchone() == (7500,)
        assert conn.isolation_level is None


def test_every_table_is_strict_and_matches_its_codec(tmp_path: Path) -> None:
    with open_store(tmp_path / "a.db") as store:
        conn = store._db.conn
        sql = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
        for name, ddl in sql.items():
            if name not in PERMISSION_TABLES:  # created by markertools_adapters.permissions
                assert ddl.rstrip().endswith("STRICT"), name
        for codec, extra in (
            (TASKS, []),
            (TODOS, []),
            (AUTOMATIONS, ["next_run_at"]),
            (PROJECTS, []),
            (COSTS, ["seq"]),
            (QUOTAS, []),
            (ATTEMPTS, []),
            (AUDIT, ["seq"]),
        ):
            assert sorted(_columns(conn, codec.table)) == sorted([*codec.sql_names, *extra]), (
                codec.table
            )


@pytest.mark.rule("SCH-5")
def test_an_older_database_is_migrated_forward(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    SqliteStore(path, migrate_to=1).close()
    # rows written by a version-1 markertools: no next_run_at column yet
    conn = sqlite3.connect(path, isolation_level=None)
    assert "next_run_at" not in _columns(conn, "automations")
    automation = Automation(
        id="a", project_id="p", name="n", prompt="x", created_at=100.0, first_run_at=500.0
    )
    conn.execute(AUTOMATIONS.insert_sql, AUTOMATIONS.encode(automation))
    # only the columns a version-1 database has (step 5 added repo_url and
    # retried_after_attempt, step 7 turn and thread_id, step 9 epoch, step 10 engine)
    row = dict(zip(TASKS.names, TASKS.encode(Task(id="t", project_id="p")), strict=True))
    v1 = [
        n
        for n in TASKS.names
        if n not in ("repo_url", "retried_after_attempt", "turn", "thread_id", "epoch", "engine")
    ]
    conn.execute(
        f"INSERT INTO tasks ({', '.join(v1)}) VALUES ({', '.join('?' * len(v1))})",
        [row[n] for n in v1],
    )
    assert conn.execute("SELECT version FROM schema_version").fetchone() == (1,)
    conn.close()

    with open_store(path) as store:
        assert store.schema_version == LATEST_VERSION
        assert store.get_task("t") == Task(id="t", project_id="p")
        assert store.due_automations(499.0) == ()
        assert store.due_automations(500.0) == (automation,)
        stored = store._db.read_one("SELECT next_run_at FROM automations WHERE id = 'a'")
        assert stored == (next_run_at(automation),)
        plans = store._db.read("SELECT name FROM sqlite_master WHERE type = 'index'")
        assert ("automations_due",) in plans


def test_a_newer_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    open_store(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE schema_version SET version = ?", (LATEST_VERSION + 1,))
    conn.close()
    before = path.read_bytes()
    with pytest.raises(
        SchemaTooNew, match=rf"version {LATEST_VERSION + 1} is newer.*\({LATEST_VERSION}\)"
    ):
        open_store(path)
    assert path.read_bytes() == before


def test_a_foreign_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(SchemaError, match=r"not a markertools database.*invoices"):
        open_store(path)


def test_a_failed_step_rolls_back_to_the_previous_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from markertools_adapters.sqlite import _schema

    path = tmp_path / "f.db"
    SqliteStore(path, migrate_to=1).close()

    def boom(conn: sqlite3.Connection) -> None:
        raise RuntimeError("disk on fire")

    broken = (_schema.MIGRATIONS[0], (*_schema.MIGRATIONS[1], boom))
    monkeypatch.setattr(_schema, "MIGRATIONS", broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        open_store(path)
    monkeypatch.undo()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version FROM schema_version").fetchone() == (1,)
    assert "next_run_at" not in _columns(conn, "automations")
    conn.close()
    with open_store(path) as store:
        assert store.schema_version == LATEST_VERSION


def _open_and_report(path: str, queue: multiprocessing.Queue[int]) -> None:
    store = open_store(path)
    queue.put(store.schema_version)
    store.close()


def test_concurrent_openers_of_a_fresh_file_migrate_it_once(tmp_path: Path) -> None:
    path = str(tmp_path / "race.db")
    ctx = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue[int] = ctx.Queue()
    procs = [ctx.Process(target=_open_and_report, args=(path, queue)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert sorted(queue.get(timeout=5) for _ in procs) == [LATEST_VERSION] * 4
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM schema_version").fetchone() == (1,)
    assert conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE name = 'automations_due'"
    ).fetchone() == (1,)


def test_refresh_keeps_next_run_at_in_step_with_the_pure_schedule(tmp_path: Path) -> None:
    automation = Automation(id="a", project_id="p", name="n", prompt="x", created_at=10.0)
    with open_store(tmp_path / "s.db") as store:
        store.insert_automation(automation)
        assert store.claim_automation("a", 10.0, 20.0)
        claimed = store.get_automation("a")
        assert claimed == attrs.evolve(automation, last_run_at=20.0, last_slot_at=10.0, run_count=1)
        stored = store._db.read_one("SELECT next_run_at FROM automations WHERE id = 'a'")
        assert stored == (next_run_at(claimed),)
