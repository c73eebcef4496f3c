"""PgChangeWaiter (LISTEN/NOTIFY early wake-up for poll and wait) against a real server:
it wakes when a target changes status - whoever wrote the change - ignores other tasks
and other schemas, never loses a change that lands between two waits, survives a lost
connection as plain timed waits, and delivery's wait-threads uses it.

No timing thresholds: the waiter counts why each wait ended (early_wakeups / full_waits),
and every wait that must end early is given a long timeout, so a broken waiter fails the
count instead of a stopwatch."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from support.postgres import SKIP_REASON, connect, dsn, pg_dsn, store, throwaway_store

from markertools import deliver_turn
from markertools.domain.model import Task
from markertools.parse.params import TaskPollParams, WaitThreadsParams
from markertools.parse.plan import Command, TurnPlan
from markertools_adapters.clock import SystemClock, SystemRandom
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.postgres import PgChangeWaiter
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

pytestmark = [pytest.mark.postgres, pytest.mark.skipif(pg_dsn() is None, reason=SKIP_REASON)]
__all__ = ["dsn", "store"]  # fixtures

LONG = 60.0  # a wait that must end early is given this long; it never takes it


def until(condition: Callable[[], bool], what: str, limit: float = 30.0) -> None:
    """Poll `condition` (bounded, to synchronise with the listener thread; not a timing
    assertion: the limit only keeps a broken test from hanging)."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.01)


def in_thread(fn: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    return thread


def set_status(dsn: str, schema: str, task_id: str, status: str) -> None:
    """Another writer (not markertools) changes a task with plain SQL."""
    with connect(dsn, schema) as conn:
        conn.execute("UPDATE tasks SET status = %s WHERE id = %s", (status, task_id))


@pytest.mark.rule("POL-3", "WAI-4")
def test_wakes_when_a_target_changes_status_by_any_writer(store: Any, dsn: str) -> None:
    store.insert_task(Task(id="t1", project_id="p", status="running"))
    waiter = store.change_waiter()
    waiting = in_thread(lambda: waiter.wait_for_change(["t1"], LONG))
    set_status(dsn, store.schema, "t1", "completed")
    waiting.join(LONG + 10)
    assert not waiting.is_alive()
    assert (waiter.early_wakeups, waiter.full_waits) == (1, 0)


@pytest.mark.rule("WRK-5")
def test_wake_ends_every_wait_once_so_a_new_target_is_watched(store: Any, dsn: str) -> None:
    """The worker host's cancel watch waits on the tasks it runs; a task claimed during
    that wait was not among the targets, and its cancel went unnoticed until the wait's
    bound (the 0.4-0.9 s cancels of issue 40). `wake()` ends the wait at once."""
    waiter = store.change_waiter()
    waiting = in_thread(lambda: waiter.wait_for_change(["t-old"], LONG))
    time.sleep(0.2)  # let the wait begin (ordering only: nothing here is timed)
    assert waiting.is_alive()
    waiter.wake()
    waiting.join(LONG + 10)
    assert not waiting.is_alive()
    assert (waiter.early_wakeups, waiter.full_waits) == (1, 0)


def test_other_tasks_and_other_schemas_do_not_wake_it(store: Any, dsn: str) -> None:
    elsewhere = throwaway_store(World(tasks=(Task(id="t1", project_id="p"),)))
    try:
        store.insert_task(Task(id="t1", project_id="p"))
        store.insert_task(Task(id="t2", project_id="p"))
        waiter = store.change_waiter()
        set_status(dsn, elsewhere.schema, "t1", "failed")  # same id, other schema
        set_status(dsn, store.schema, "t2", "failed")  # other task, same schema
        # notifications arrive in commit order: once t2's is in, t1-elsewhere's was seen
        until(lambda: waiter._seq >= 1, "the t2 notification")
        waiter.wait_for_change(["t1"], 0.2)
        assert (waiter.early_wakeups, waiter.full_waits) == (0, 1)
        assert waiter._seq == 1  # the other schema's notification was dropped
    finally:
        elsewhere.close()


def test_a_change_between_two_waits_is_not_lost(store: Any, dsn: str) -> None:
    store.insert_task(Task(id="t1", project_id="p"))
    waiter = store.change_waiter()
    waiter.wait_for_change(["t1"], 0.05)  # round 1 ends on its timeout
    set_status(dsn, store.schema, "t1", "interrupted")  # ... while the caller reads
    until(lambda: waiter._seq >= 1, "the notification")
    waiter.wait_for_change(["t1"], LONG)  # round 2 returns at once
    assert (waiter.early_wakeups, waiter.full_waits) == (1, 1)
    waiter.wait_for_change(["t1"], 0.05)  # and only once
    assert (waiter.early_wakeups, waiter.full_waits) == (1, 2)


def test_each_thread_has_its_own_cursor(store: Any, dsn: str) -> None:
    store.insert_task(Task(id="t1", project_id="p"))
    waiter = store.change_waiter()
    set_status(dsn, store.schema, "t1", "failed")
    until(lambda: waiter._seq >= 1, "the notification")
    threads = [in_thread(lambda: waiter.wait_for_change(["t1"], LONG)) for _ in range(3)]
    for thread in threads:
        thread.join(LONG + 10)
    assert waiter.early_wakeups == 3


def test_a_lost_connection_degrades_to_timed_waits_and_recovers(store: Any, dsn: str) -> None:
    store.insert_task(Task(id="t1", project_id="p"))
    waiter = store.change_waiter()
    pid = waiter.backend_pid
    with connect(dsn) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    until(lambda: not waiter.listening or waiter.backend_pid != pid, "the waiter to notice")
    waiter.wait_for_change(["t9"], 0.05)  # never raises; a plain timed wait meanwhile
    until(lambda: waiter.listening and waiter.backend_pid != pid, "the reconnect")
    waiter.wait_for_change(["t1"], LONG)  # the gap wakes everyone once (changes unknown)
    waiter.wait_for_change(["t1"], 0.05)
    early = waiter.early_wakeups
    waiting = in_thread(lambda: waiter.wait_for_change(["t1"], LONG))
    set_status(dsn, store.schema, "t1", "completed")  # and notifications flow again
    waiting.join(LONG + 10)
    assert not waiting.is_alive() and waiter.early_wakeups == early + 1


def test_waits_never_raise_on_odd_arguments(store: Any) -> None:
    waiter = store.change_waiter()
    for seconds in (0.0, -5.0, float("nan")):
        waiter.wait_for_change([], seconds)
    assert waiter.full_waits == 3


@pytest.mark.rule("TRN-8")
def test_an_unreachable_server_fails_when_the_waiter_is_made() -> None:
    import psycopg

    from markertools_adapters.errors import StoreUnavailable

    with pytest.raises(StoreUnavailable, match=r"^OperationalError: connection failed") as failed:
        PgChangeWaiter("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    assert isinstance(failed.value.__cause__, psycopg.OperationalError)


@pytest.mark.rule("WAI-4", "POL-3")
def test_delivery_wait_threads_wakes_on_the_notification(store: Any, dsn: str) -> None:
    store.insert_task(Task(id="sender", project_id="p", status="running", created_by="u"))
    store.insert_task(Task(id="t1", project_id="p", status="running", created_by="u"))
    store.grant_permissions("u", "p", ["read"])
    waiter = store.change_waiter()
    ports = store_ports(
        store, clock=SystemClock(), random=SystemRandom(), executor=NoopExecutor(), waiter=waiter
    )
    params = WaitThreadsParams(task_ids=("t1",), interval_seconds=60, timeout_seconds=120)
    plan = TurnPlan(commands=(Command("wait-threads", 1, params),))
    reports: list[Any] = []
    delivering = in_thread(
        lambda: reports.append(
            deliver_turn(plan, sender="sender", outcome="completed", ports=ports)
        )
    )
    until(lambda: waiter.full_waits + waiter.early_wakeups > 0 or _waiting(waiter), "the wait")
    store.transition_task("t1", "running", {"status": "completed", "result_text": "done!"})
    delivering.join(180)
    assert not delivering.is_alive()
    (entry,) = reports[0].entries
    assert entry.outcome == "done" and "done!" in entry.reason.render("en")
    assert waiter.early_wakeups == 1 and waiter.full_waits == 0


@pytest.mark.rule("POL-3")
def test_delivery_task_poll_wakes_on_the_notification(store: Any, dsn: str) -> None:
    """POL-3 with the waiter: the poll re-reads as soon as its target finishes (instead of
    at the next 60 s interval) and reports the same snapshot a clock round would."""
    store.insert_task(Task(id="sender", project_id="p", status="running", created_by="u"))
    store.insert_task(Task(id="t1", project_id="p", status="running", created_by="u"))
    store.grant_permissions("u", "p", ["read"])
    waiter = store.change_waiter()
    ports = store_ports(
        store, clock=SystemClock(), random=SystemRandom(), executor=NoopExecutor(), waiter=waiter
    )
    params = TaskPollParams(task_id="t1", interval_seconds=60, timeout_seconds=120)
    plan = TurnPlan(commands=(Command("task-poll", 1, params),))
    reports: list[Any] = []
    delivering = in_thread(
        lambda: reports.append(
            deliver_turn(plan, sender="sender", outcome="completed", ports=ports)
        )
    )
    until(lambda: _waiting(waiter), "the poll to wait")
    set_status(dsn, store.schema, "t1", "queued")  # not terminal: the poll goes on waiting
    until(lambda: waiter.early_wakeups == 1 and _waiting(waiter), "the next round")
    store.transition_task("t1", "queued", {"status": "failed", "error_text": "broke!"})
    delivering.join(180)
    assert not delivering.is_alive()
    (entry,) = reports[0].entries
    text = entry.reason.render("en")
    assert entry.outcome == "done" and "broke!" in text and "failed" in text
    assert waiter.early_wakeups == 2 and waiter.full_waits == 0


def _waiting(waiter: PgChangeWaiter) -> bool:
    """True once some thread blocks in wait_for_change (it then holds a cursor)."""
    with waiter._cond:
        return bool(waiter._cond._waiters)  # type: ignore[attr-defined]
