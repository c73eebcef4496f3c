"""In-memory automation store specifics: several threads claiming one slot, exactly one
wins (SCH-4). The multi-process version for SQLite lives with that adapter's tests."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest
from support.strategies.todo import NOW

from markertools.domain.model import Automation, Project
from markertools_adapters.memory import MemoryStore
from markertools_adapters.world import World


def store_with(*automations: Automation) -> MemoryStore:
    store = MemoryStore()
    store.load_world(World(now=NOW, projects=(Project("p1"),), automations=automations))
    return store


@pytest.fixture(autouse=True)
def fast_thread_switching() -> Iterator[None]:
    """Switch threads as often as possible so unsynchronised read-then-write would race."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def claim_race(
    store: MemoryStore, automation_id: str, slot: float, now: float, n: int
) -> list[bool]:
    barrier = threading.Barrier(n)
    results: list[bool] = []
    lock = threading.Lock()

    def worker() -> None:
        barrier.wait()
        won = store.claim_automation(automation_id, slot, now)
        with lock:
            results.append(won)

    threads = [threading.Thread(target=worker) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


@pytest.mark.rule("SCH-4")
@pytest.mark.parametrize("run_once", [False, True])
def test_exactly_one_of_many_threads_claims_a_slot(run_once: bool) -> None:
    a = Automation("a1", "p1", "n", "p", interval_seconds=60, first_run_at=NOW, run_once=run_once)
    store = store_with(a)
    for round_no in range(20):
        slot = NOW + 60 * round_no
        results = claim_race(store, "a1", slot, slot + 1, n=12)
        if run_once and round_no > 0:
            assert results.count(True) == 0
        else:
            assert results.count(True) == 1
    got = store.get_automation("a1")
    assert got is not None
    assert got.run_count == (1 if run_once else 20)
