"""The one way in (`markertools_adapters.connect`): every form of database name a worker
writes opens the right store, carrying Ports built from what it was given (the system
clock and random source by default, the named executor, PostgreSQL's LISTEN/NOTIFY
waiter); an unknown scheme or a missing executor is refused with the reason; the store
closes as a context manager; a store opened another way says how to get its ports."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.postgres import drop_schema, new_schema_name, require_dsn

import markertools_adapters
from markertools import Project, Task
from markertools_adapters.clock import SeededRandom, SystemClock, SystemRandom, VirtualClock
from markertools_adapters.executors import DispatchingExecutor, NoopExecutor
from markertools_adapters.memory import MemoryStore
from markertools_adapters.opener import database_kind
from markertools_adapters.postgres import PgChangeWaiter, PostgresStore
from markertools_adapters.sqlite import SqliteStore


def test_every_form_of_name_opens_the_store_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert database_kind("memory:") == ("memory", "")
    assert database_kind("sqlite:///w.db") == ("sqlite", "w.db")
    assert database_kind("sqlite:////var/lib/w.db") == ("sqlite", "/var/lib/w.db")
    assert database_kind("sqlite:///:memory:") == ("sqlite", ":memory:")
    assert database_kind("sqlite://") == ("sqlite", ":memory:")
    assert database_kind("w.db") == ("sqlite", "w.db")
    assert database_kind(Path("dir/w.db")) == ("sqlite", "dir/w.db")
    assert database_kind("POSTGRESQL://me@db/x") == ("postgres", "postgresql://me@db/x")
    with markertools_adapters.connect("sqlite:///w.db", executor="noop") as store:
        assert isinstance(store, SqliteStore) and store.path == "w.db"
        store.put_project(Project("p1"))
    assert (tmp_path / "w.db").is_file()
    with markertools_adapters.connect("w.db", executor="noop") as again:
        assert again.get_project("p1") == Project("p1")  # the same file, plain path
    with markertools_adapters.connect("memory:", executor="noop") as memory:
        assert isinstance(memory, MemoryStore)


def test_the_store_carries_ports_built_from_what_it_was_given(tmp_path: Path) -> None:
    with markertools_adapters.connect(tmp_path / "w.db", executor="local") as store:
        ports = store.ports
        assert ports.tasks is store and ports.costs is store and ports.journal is store
        assert isinstance(ports.clock, SystemClock) and isinstance(ports.random, SystemRandom)
        assert isinstance(ports.executor, DispatchingExecutor)
        assert ports.waiter is None and ports.files is None
    clock, random, executor = VirtualClock(5.0), SeededRandom(1), NoopExecutor()
    with markertools_adapters.connect(
        "memory:", executor=executor, clock=clock, random=random
    ) as memory:
        assert (memory.ports.clock, memory.ports.random, memory.ports.executor) == (
            clock,
            random,
            executor,
        )


def test_postgresql_is_connected_with_its_change_waiter() -> None:
    dsn, schema = require_dsn(), new_schema_name()
    try:
        with markertools_adapters.connect(dsn, executor="noop", schema=schema) as store:
            assert isinstance(store, PostgresStore) and store.schema == schema
            assert isinstance(store.ports.waiter, PgChangeWaiter)
            store.insert_task(Task("t1", "p1", status="queued"))
            assert store.claim_next_task("p1", "h1") is not None
        with markertools_adapters.connect(dsn, executor="noop", schema=schema, waiter=None) as s:
            assert s.ports.waiter is None
    finally:
        drop_schema(dsn, schema)


def test_an_unknown_scheme_a_bad_sqlite_url_and_a_missing_executor_are_refused(
    tmp_path: Path,
) -> None:
    with pytest.raises(ValueError) as unknown:
        markertools_adapters.connect("mysql://root:secret@db/shop", executor="noop")
    assert str(unknown.value) == (
        "mysql://root:***@db/shop: unknown database URL scheme 'mysql'; expected "
        "sqlite:///PATH (or a plain file path), sqlite:///:memory:, "
        "postgresql://USER@HOST/DB, or memory:"
    )
    with pytest.raises(ValueError, match=r"^sqlite://w.db: a SQLite URL names a path after"):
        markertools_adapters.connect("sqlite://w.db", executor="noop")
    with pytest.raises(ValueError, match=r"^unknown executor 'kubernetes'; expected one of"):
        markertools_adapters.connect("memory:", executor="kubernetes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="executor"):
        markertools_adapters.connect("memory:")  # type: ignore[call-arg]
    with pytest.raises(FileNotFoundError, match="no such database file"):
        markertools_adapters.connect(tmp_path / "typo.db", executor="noop", must_exist=True)
    assert not (tmp_path / "typo.db").exists()


def test_a_postgresql_password_is_never_shown() -> None:
    with pytest.raises(ValueError) as refused:
        markertools_adapters.connect("postgresqlx://me:hunter2@db/x", executor="noop")
    assert str(refused.value).startswith("postgresqlx://me:***@db/x: unknown database URL")
    with pytest.raises(markertools_adapters.StoreUnavailable) as unreachable:
        markertools_adapters.connect(
            "postgresql://me:hunter2@127.0.0.1:1/x?connect_timeout=2", executor="noop"
        )
    assert "hunter2" not in str(unreachable.value)


def test_a_store_opened_another_way_says_how_to_get_its_ports() -> None:
    with pytest.raises(AttributeError) as missing:
        _ = MemoryStore().ports
    assert str(missing.value) == (
        "this store carries no ports: open it with markertools_adapters.connect(...), "
        "or build them with markertools_adapters.wiring.store_ports(store, ...)"
    )
