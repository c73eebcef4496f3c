"""In-memory attempts ledger specifics (docs/rules.md ATT): the all-or-nothing requeue when a write
fails part way (ATT-2) and latest_attempt on malformed rows (ATT-3). Port semantics shared
by every adapter are in tests/contract/test_contract_attempts.py."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from support.strategies.todo import NOW

from markertools.domain.model import Attempt, Project, Task
from markertools_adapters.memory import MemoryState, MemoryStore
from markertools_adapters.world import World


def store_with(task: Task, attempts: tuple[Attempt, ...] = ()) -> MemoryStore:
    store = MemoryStore()
    store.load_world(World(now=NOW, projects=(Project("p1"),), tasks=(task,), attempts=attempts))
    return store


def task(**kw: Any) -> Task:
    fields: dict[str, Any] = {
        "project_id": "p1",
        "status": "interrupted",
        "result_text": "out",
        "error_text": "err",
        "interrupted_reason": "host restart",
    }
    fields.update(kw)
    return Task("t1", **fields)


class FailingDict(dict):  # type: ignore[type-arg]
    def __setitem__(self, key: Any, value: Any) -> None:
        raise OSError("disk full")


def state(store: MemoryStore) -> MemoryState:
    return store._state


@pytest.mark.rule("ATT-2")
def test_recording_failure_rolls_back_and_is_returned() -> None:
    original = task()
    store = store_with(original)
    state(store).attempts = FailingDict()
    result = store.requeue_platform("t1", "interrupted", "platform_fresh", -1, NOW)
    assert not result.ok and result.error is not None and "disk full" in result.error
    assert store.get_task("t1") == original
    assert store.list_attempts("t1") == ()


@pytest.mark.rule("ATT-2")
def test_task_write_failure_removes_the_recorded_attempt() -> None:
    original = task()
    store = store_with(original)
    tasks = FailingDict(state(store).tasks)
    state(store).tasks = tasks
    result = store.requeue_platform("t1", "interrupted", "platform_fresh", -1, NOW)
    assert not result.ok and "disk full" in (result.error or "")
    assert store.list_attempts("t1") == ()
    assert dict.__getitem__(tasks, "t1") == original


@pytest.mark.rule("ATT-2")
def test_concurrent_requeues_of_one_task_requeue_it_once() -> None:
    store = store_with(task())
    results: list[bool] = []
    barrier = threading.Barrier(8)

    def worker() -> None:
        barrier.wait()
        results.append(store.requeue_platform("t1", "interrupted", "platform_fresh", -1, NOW).ok)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count(True) == 1
    assert store.get_task("t1").auto_resume_count == 1
    assert [a.attempt_no for a in store.list_attempts("t1")] == [1]


@pytest.mark.rule("ATT-3")
@pytest.mark.parametrize(
    "bad",
    [
        Attempt("t1", 3, "weird_kind"),
        Attempt("t1", 3, "platform_fresh", checkpoint_round="x"),  # type: ignore[arg-type]
        Attempt("t1", 3, "platform_fresh", result_text=42),  # type: ignore[arg-type]
        Attempt("t1", 3, "platform_fresh", created_at=float("nan")),
    ],
)
def test_malformed_latest_row_yields_none(bad: Attempt) -> None:
    good = Attempt("t1", 1, "platform_fresh")
    store = store_with(task(), attempts=(good,))
    state(store).attempts[("t1", 3)] = bad
    assert store.latest_attempt("t1") is None


@pytest.mark.rule("ATT-3")
def test_latest_attempt_never_raises() -> None:
    store = store_with(task())

    class Exploding(dict):  # type: ignore[type-arg]
        def items(self) -> Any:
            raise RuntimeError("table missing")

    state(store).attempts = Exploding()
    assert store.latest_attempt("t1") is None
    # incomparable attempt numbers are malformed too
    store = store_with(task())
    state(store).attempts[("t1", 1)] = Attempt("t1", 1, "platform_fresh")
    state(store).attempts[("t1", 2)] = Attempt("t1", "two", "platform_fresh")  # type: ignore[arg-type]
    assert store.latest_attempt("t1") is None
