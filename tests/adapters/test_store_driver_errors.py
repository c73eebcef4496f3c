"""TRN-8: what an embedding worker catches when the database fails. Driver exceptions never
reach the caller: an operational failure (SQLite "database is locked" beyond the busy
timeout, a server that cannot be reached or cut the connection) is StoreUnavailable,
anything else the driver raises (a file that is not a database) is StoreError, each with
the driver's exception as `__cause__` and its class and text as the message; and a port
call that fails this way still only rejects its block (TRN-8)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from support.postgres import require_dsn, throwaway_store

import markertools_adapters
from markertools import Project, Task, deliver_turn
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.errors import MarkertoolsError, StoreError, StoreUnavailable
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.sqlite import SqliteStore
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

WORLD = World(
    now=1_798_333_200.0,
    projects=(Project("p1", "shop"),),
    tasks=(Task("t1", "p1", status="running", created_by="u1"),),
)


def locked(path: Path) -> sqlite3.Connection:
    """Another process's view: a connection holding the database's write lock."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    return other


@pytest.mark.rule("TRN-8")
def test_a_locked_sqlite_database_is_store_unavailable_with_the_driver_error_as_cause(
    tmp_path: Path,
) -> None:
    path = tmp_path / "w.db"
    with markertools_adapters.connect(path, executor="noop", busy_timeout=0.05) as store:
        store.load_world(WORLD)
        other = locked(path)
        with pytest.raises(StoreUnavailable) as failed:
            store.insert_task(Task("t2", "p1", status="queued"))
        assert str(failed.value) == "OperationalError: database is locked"
        assert type(failed.value.__cause__) is sqlite3.OperationalError
        assert isinstance(failed.value, StoreError) and isinstance(failed.value, MarkertoolsError)
        assert store.get_task("t1") is not None  # reads go on under WAL
        other.execute("ROLLBACK")
        other.close()
        store.insert_task(Task("t2", "p1", status="queued"))  # the store recovers by itself
        assert store.get_task("t2") is not None


@pytest.mark.rule("TRN-8")
def test_a_file_that_is_not_a_database_is_a_store_error_not_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database\n" * 10)
    with pytest.raises(StoreError) as failed:
        SqliteStore(path)
    assert not isinstance(failed.value, StoreUnavailable)
    assert str(failed.value) == "DatabaseError: file is not a database"
    assert type(failed.value.__cause__) is sqlite3.DatabaseError
    assert path.read_bytes().startswith(b"these are my notes")  # nothing written to it


@pytest.mark.rule("TRN-8")
def test_a_block_whose_write_hits_a_locked_database_is_rejected_with_the_reason(
    tmp_path: Path,
) -> None:
    path = tmp_path / "w.db"
    store = SqliteStore(path, busy_timeout=0.05)
    store.load_world(WORLD)
    ports = store_ports(
        store, clock=VirtualClock(WORLD.now), random=SeededRandom(3), executor=NoopExecutor()
    )
    other = locked(path)
    try:
        turn = '```todo-create\n{"title": "write the changelog"}\n```\n'
        report = deliver_turn(turn, sender="t1", outcome="completed", ports=ports)
    finally:
        other.execute("ROLLBACK")
        other.close()
        store.close()
    (entry,) = report.entries
    assert entry.outcome == "rejected"
    assert "StoreUnavailable: OperationalError: database is locked" in entry.reason.render("en")


@pytest.mark.rule("TRN-8")
def test_an_unreachable_postgresql_server_is_store_unavailable() -> None:
    import psycopg

    with pytest.raises(StoreUnavailable) as failed:
        markertools_adapters.connect(
            "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2", executor="noop"
        )
    assert str(failed.value).startswith("OperationalError: connection failed")
    assert isinstance(failed.value.__cause__, psycopg.OperationalError)


@pytest.mark.rule("TRN-8")
def test_a_postgresql_connection_cut_by_the_server_is_store_unavailable_then_recovers() -> None:
    import psycopg

    require_dsn()
    store = throwaway_store(WORLD, pool_size=1)
    try:
        with store._db.connection() as conn:  # the pool's one connection
            pid = conn.info.backend_pid
        admin = psycopg.connect(require_dsn(), autocommit=True)
        try:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        finally:
            admin.close()
        with pytest.raises(StoreUnavailable) as failed:
            store.get_task("t1")
        assert isinstance(failed.value.__cause__, psycopg.OperationalError)
        assert str(failed.value).startswith(type(failed.value.__cause__).__name__ + ": ")
        task = store.get_task("t1")  # the pool has replaced the connection
        assert task is not None and task.status == "running"
    finally:
        store.close()
