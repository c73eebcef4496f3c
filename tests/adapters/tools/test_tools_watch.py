"""TOL-11 in process: the status watch of `tools serve` (`_watch.StatusWatch`) over a
real SQLite store holds every waiting call without a thread, reads all their statuses in
one store call per round, wakes a call only when its own targets finished (a call that
arrives while a read is under way waits for the next round, it is never woken by a
read that did not hold its tasks), and the fair pool (`_pool.FairPool`) serves a key
with nothing queued before another key's backlog."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from tools_support import sqlite_store

from markertools import CallWait, Task
from markertools.domain.model import Project
from markertools_adapters.tools._pool import FairPool
from markertools_adapters.tools._watch import StatusWatch
from markertools_adapters.world import World


def _world(n: int) -> World:
    tasks = [Task(f"s{i}", "p1", status="running", created_by="u1", turn=1) for i in range(n)]
    tasks += [Task(f"c{i}", "p1", status="running", created_by="u1") for i in range(n)]
    return World(now=time.time(), projects=(Project("p1", "shop"),), tasks=tuple(tasks))


class HeldReads:
    """The store's task reads, each held until the test lets it go (`gate`)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.gate = threading.Event()
        self.reading = threading.Event()
        self.reads: list[list[str]] = []

    def get_tasks(self, ids: list[str]) -> Any:
        self.reads.append(list(ids))
        self.reading.set()
        assert self.gate.wait(30)
        return self._store.get_tasks(ids)


@pytest.mark.rule("TOL-11")
def test_a_wait_that_arrives_during_a_read_is_not_woken_by_it(tmp_path: Path) -> None:
    store = sqlite_store(tmp_path / "w.db", _world(2))
    held = HeldReads(store)
    watch = StatusWatch(held, None, FairPool(2))  # type: ignore[arg-type]
    woken: list[str] = []

    async def scenario() -> None:
        async def wait(name: str, plan: CallWait) -> None:
            await watch.wait(plan, 30)
            woken.append(name)

        async with anyio.create_task_group() as group:
            group.start_soon(watch.run)
            group.start_soon(wait, "first", CallWait("s0", ("c0",), 30))
            await anyio.to_thread.run_sync(held.reading.wait, 30)  # the first read began
            group.start_soon(wait, "second", CallWait("s1", ("c1",), 30))
            await anyio.sleep(0.1)
            held.gate.set()  # the read (without s1, c1) ends
            await anyio.sleep(0.3)  # several rounds
            assert woken == [] and watch.waiting == 2
            assert store.transition_task("c1", "running", {"status": "completed"})
            with anyio.fail_after(30):
                while woken != ["second"]:
                    await anyio.sleep(0.01)
            group.cancel_scope.cancel()

    try:
        anyio.run(scenario)
    finally:
        store.close()
    assert held.reads[0] == ["s0", "c0"]
    assert all(len(ids) <= 4 for ids in held.reads)  # one read for all waits per round


@pytest.mark.rule("TOL-11")
def test_five_hundred_waits_hold_no_thread_and_take_one_read_per_round(tmp_path: Path) -> None:
    n = 500
    store = sqlite_store(tmp_path / "w.db", _world(n))
    watch = StatusWatch(store, None, FairPool(4))
    seen: dict[str, int] = {}

    async def scenario() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(watch.run)
            for i in range(n):
                group.start_soon(watch.wait, CallWait(f"s{i}", (f"c{i}",), 60), 60)
            with anyio.fail_after(30):
                while watch.waiting < n:
                    await anyio.sleep(0.01)
            before = watch.reads
            await anyio.sleep(0.5)
            seen["rounds"] = watch.reads - before
            seen["threads"] = threading.active_count()
            for i in range(n):
                assert store.transition_task(f"c{i}", "running", {"status": "failed"})
            with anyio.fail_after(30):
                while watch.waiting:
                    await anyio.sleep(0.01)
            group.cancel_scope.cancel()

    try:
        anyio.run(scenario)
    finally:
        store.close()
    assert seen["threads"] <= 8, seen  # the pool's few threads, not one per wait
    assert 1 <= seen["rounds"] <= 0.5 / 0.025 + 1, seen  # a read per 25 ms at most


@pytest.mark.rule("TOL-11")
def test_the_pool_serves_a_key_with_nothing_queued_before_a_backlog() -> None:
    order: list[str] = []
    release = threading.Event()

    def job(name: str) -> None:
        order.append(name)
        assert release.wait(30)

    async def scenario() -> None:
        pool = FairPool(1)
        async with anyio.create_task_group() as group:
            group.start_soon(pool.run, "busy", job, "busy-0")
            await anyio.sleep(0.05)
            for n in range(1, 6):
                group.start_soon(pool.run, "busy", job, f"busy-{n}")
            await anyio.sleep(0.05)
            group.start_soon(pool.run, "other", job, "other-0")
            await anyio.sleep(0.05)
            assert pool.busy == 1 and pool.queued == 6
            release.set()

    anyio.run(scenario)
    assert order[0] == "busy-0" and order[1] in ("busy-1", "other-0")
    assert order.index("other-0") <= 2  # after at most one job of the backlog
