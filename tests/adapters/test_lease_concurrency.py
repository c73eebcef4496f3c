"""Leases under real concurrency, on one SQLite file and on the real PostgreSQL (WRK-6):
four processes claim with leases from 30 queued tasks at once - every task is claimed
exactly once and holds one lease, of its claimer; and two processes race to requeue the
same expired lease - exactly one wins, one ledger row is written."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.postgres import drop_schema, new_schema_name, require_dsn

from markertools.domain.model import Task
from markertools_adapters.world import World

HOSTS = 4
TASKS = 30
WAIT = 120.0
NOW = 1_000.0
LEASE = 30.0


def _open(engine: str, target: str, schema: str) -> Any:
    if engine == "sqlite":
        from markertools_adapters.sqlite import open_store

        return open_store(target)
    from markertools_adapters.postgres import open_store as open_pg

    return open_pg(target, 2, schema=schema)


def _claimer(engine: str, target: str, schema: str, host: str, barrier: Any, out: Any) -> None:
    got: list[str] = []
    error = ""
    try:
        store = _open(engine, target, schema)
        try:
            barrier.wait(60)
            while (claim := store.claim_task("p1", host, now=NOW, lease_seconds=LEASE)) is not None:
                got.append(claim.task.id)
        finally:
            store.close()
    except Exception as exc:  # reported to the parent, which fails the test with it
        error = repr(exc)
    out.put((host, got, error))


def _requeuer(engine: str, target: str, schema: str, name: str, barrier: Any, out: Any) -> None:
    ok, error = False, ""
    try:
        store = _open(engine, target, schema)
        try:
            barrier.wait(60)
            result = store.requeue_expired("t00", "dead", NOW + LEASE + 1, affinity_seconds=60.0)
            ok, error = result.ok, result.error or ""
        finally:
            store.close()
    except Exception as exc:
        error = repr(exc)
    out.put((name, ok, error))


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    tasks = tuple(
        Task(f"t{i:02}", "p1", status="queued", created_by="u1", created_at=float(i % 7))
        for i in range(TASKS)
    )
    world = World(now=NOW, tasks=tasks)
    if request.param == "sqlite":
        from markertools_adapters.sqlite import create_store_from_world

        path = tmp_path / "leases.db"
        create_store_from_world(world, path).close()
        yield "sqlite", str(path), ""
        return
    from markertools_adapters.postgres import PostgresStore

    dsn, schema = require_dsn(), new_schema_name()
    store = PostgresStore(dsn, schema=schema)
    store.load_world(world)
    store.close()
    yield "postgres", dsn, schema
    drop_schema(dsn, schema)


def _run(target: Any, args: list[tuple[Any, ...]]) -> list[Any]:
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(len(args)), ctx.Queue()
    procs = [ctx.Process(target=target, args=(*a, barrier, out)) for a in args]
    for p in procs:
        p.start()
    results = [out.get(timeout=WAIT) for _ in procs]
    for p in procs:
        p.join(WAIT)
    return results


@pytest.mark.slow
@pytest.mark.rule("WRK-6")
def test_hosts_claiming_with_leases_claim_each_task_once(
    database: tuple[str, str, str],
) -> None:
    engine, target, schema = database
    results = _run(_claimer, [(engine, target, schema, f"h{i}") for i in range(HOSTS)])
    assert [error for _, _, error in results if error] == []
    every = [tid for _, ids, _ in results for tid in ids]
    assert len(every) == len(set(every)) == TASKS  # none twice, none lost
    owner = {tid: host for host, ids, _ in results for tid in ids}
    store = _open(engine, target, schema)
    try:
        for tid, host in owner.items():
            lease = store.get_lease(tid)
            assert (lease.host, lease.expires_at) == (host, NOW + LEASE)
            assert store.get_task(tid).host == host
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.rule("WRK-6")
def test_two_hosts_racing_to_requeue_an_expired_lease_one_wins(
    database: tuple[str, str, str],
) -> None:
    engine, target, schema = database
    store = _open(engine, target, schema)
    try:
        assert store.claim_task("p1", "dead", now=NOW, lease_seconds=LEASE).task.id == "t00"
    finally:
        store.close()
    results = _run(_requeuer, [(engine, target, schema, name) for name in ("r1", "r2")])
    wins = [name for name, ok, _ in results if ok]
    losses = [error for _, ok, error in results if not ok]
    assert len(wins) == 1
    assert losses == ["task 't00' is not running"]
    store = _open(engine, target, schema)
    try:
        task = store.get_task("t00")
        assert (task.status, task.auto_resume_count) == ("queued", 1)
        assert len(store.list_attempts("t00")) == 1
        assert store.get_affinity("t00").host == "dead"
    finally:
        store.close()
