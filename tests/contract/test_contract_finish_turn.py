"""The unit of work at the end of a turn (TRN-9) and exact money (CST-2) on every storage
adapter - memory, the toy kit store, SQLite and PostgreSQL: `finish_turn` completes or
requeues the task, records the turn's cost and charges the creator's quota in one
transaction, once per (task, turn id); a failure in the middle leaves nothing and the
same call again finishes the turn exactly once; `record_cost` refuses an unknown task."""

from __future__ import annotations

import threading
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from markertools import CostRow, FinishedTurn, Quota, Task, TurnCost, finish_digest
from markertools_adapters.errors import UnknownTask
from markertools_adapters.world import World

MakeStore = Callable[[World], Any]
NOW = 1_798_333_200.0


def running(tid: str, creator: str | None = "u1") -> Task:
    return Task(tid, "p1", status="running", created_by=creator, host="h1", prompt="work")


QUOTA = Quota("u1", 10, 0)


def world(*tasks: Task, quota: Quota | None = QUOTA) -> World:
    return World(now=NOW, tasks=tasks, quotas=() if quota is None else (quota,))


def state(store: Any, tid: str = "t1") -> tuple[Any, ...]:
    """What a finished turn may change: the task, its cost rows, the creator's quota."""
    return (store.get_task(tid), store.task_costs(tid), store.get_quota("u1"))


# ---- completing, requeueing, and exact money -----------------------------------------


@pytest.mark.rule("TRN-9", "CST-2")
def test_a_completed_turn_sets_the_status_records_the_cost_and_charges_once(
    make_store: MakeStore,
) -> None:
    store = make_store(world(running("t1")))
    done = store.finish_turn(
        "t1", "turn-1", outcome="completed", result_text="all done", cost=TurnCost(0.1, 1200)
    )
    cost = CostRow("t1", 1, Decimal("0.1"), 1200, False, True)
    digest = finish_digest("completed", "all done", None, TurnCost(0.1, 1200), False)
    assert done == FinishedTurn(
        "t1", "turn-1", "completed", True, cost, Quota("u1", 10, "0.1"), digest=digest
    )
    task = store.get_task("t1")
    assert (task.status, task.result_text) == ("completed", "all done")
    assert store.task_costs("t1") == (cost,)
    assert store.get_quota("u1").used_usd == Decimal("0.1")
    before = state(store)
    again = store.finish_turn(
        "t1", "turn-1", outcome="completed", result_text="all done", cost=TurnCost(0.1, 1200)
    )
    assert again.replayed is True
    assert (again.status, again.changed, again.cost, again.charged) == (
        done.status,
        done.changed,
        done.cost,
        done.charged,
    )
    assert state(store) == before  # the cost is not recorded twice, the quota not charged twice


@pytest.mark.rule("TRN-9", "CST-2")
def test_requeued_turns_number_their_rounds_and_add_up_to_exact_cents(
    make_store: MakeStore,
) -> None:
    """What the embedding user saw: 0.20000000000000004 after two charges of 0.1, and
    round 1 recorded every turn."""
    store = make_store(world(Task("t1", "p1", status="queued", created_by="u1")))
    for n in (1, 2, 3):
        claimed = store.claim_next_task("p1", "h1")
        assert claimed is not None and claimed.id == "t1"
        last = n == 3
        done = store.finish_turn(
            "t1", f"turn-{n}", outcome="completed", cost=TurnCost(0.1, 10), requeue=not last
        )
        assert done.status == ("completed" if last else "queued")
        assert done.cost is not None and done.cost.round == n
    assert [row.round for row in store.task_costs("t1")] == [1, 2, 3]
    assert store.get_quota("u1") == Quota("u1", 10, "0.3")
    assert repr(store.get_quota("u1").used_usd) == "Decimal('0.3')"
    assert store.charge_quota("u1", "0.000001") == Quota("u1", 10, "0.300001")


@pytest.mark.rule("TRN-9")
@pytest.mark.parametrize(
    ("outcome", "status"),
    [
        ("failed", "failed"),
        ("timed_out", "failed"),
        ("incomplete", "failed"),
        ("unfinished", "failed"),
        ("cancelled", "interrupted"),
        ("interrupted", "interrupted"),
        ("quota_interrupted", "interrupted"),
    ],
)
def test_an_outcome_that_did_not_complete_ends_the_task_with_its_status(
    make_store: MakeStore, outcome: str, status: str
) -> None:
    store = make_store(world(running("t1")))
    done = store.finish_turn("t1", "turn-1", outcome=outcome, error_text="the model gave up")
    assert (done.status, done.changed, done.cost, done.charged) == (status, True, None, None)
    task = store.get_task("t1")
    assert (task.status, task.error_text, task.result_text) == (status, "the model gave up", None)


@pytest.mark.rule("TRN-9")
def test_a_task_cancelled_during_its_turn_keeps_its_status_but_pays_for_the_turn(
    make_store: MakeStore,
) -> None:
    store = make_store(world(running("t1")))
    assert store.transition_task("t1", "running", {"status": "interrupted"}) is not None
    done = store.finish_turn(
        "t1", "turn-1", outcome="completed", result_text="late", cost=TurnCost("0.25", 5)
    )
    assert (done.status, done.changed) == ("interrupted", False)
    task = store.get_task("t1")
    assert (task.status, task.result_text) == ("interrupted", None)
    assert store.task_costs("t1") == (CostRow("t1", 1, "0.25", 5),)
    assert store.get_quota("u1").used_usd == Decimal("0.25")


@pytest.mark.rule("TRN-9")
def test_a_task_without_a_creator_or_quota_is_finished_without_a_charge(
    make_store: MakeStore,
) -> None:
    """The old snippet called charge_quota(task.created_by): a TypeError for such a task."""
    store = make_store(world(running("t1", creator=None), running("t2", creator="u9")))
    done = store.finish_turn("t1", "turn-1", outcome="completed", cost=TurnCost(1, 7))
    assert (done.status, done.charged) == ("completed", None)
    assert done.cost == CostRow("t1", 1, 1, 7)
    other = store.finish_turn("t2", "turn-1", outcome="completed", cost=TurnCost(1, 7))
    assert (other.status, other.charged) == ("completed", None)  # u9 has no quota record
    assert store.get_quota("u1") == Quota("u1", 10, 0)


@pytest.mark.rule("TRN-9")
def test_an_unpriced_or_given_cost_row_is_recorded_as_given(make_store: MakeStore) -> None:
    store = make_store(world(running("t1")))
    row = CostRow("t1", 7, None, 300, estimated=True, priced=False)
    done = store.finish_turn("t1", "turn-1", outcome="completed", cost=row, requeue=True)
    assert (done.cost, done.charged, done.status) == (row, None, "queued")
    assert store.task_costs("t1") == (row,)
    assert store.unpriced_tokens("u1") == 0  # estimated tokens are not actual ones


# ---- refusals: nothing is written ----------------------------------------------------


@pytest.mark.rule("TRN-9", "TRN-10")
def test_unknown_tasks_and_bad_arguments_are_refused_before_anything_is_written(
    make_store: MakeStore,
) -> None:
    store = make_store(world(running("t1")))
    before = state(store)
    with pytest.raises(UnknownTask) as unknown:
        store.finish_turn("nope", "turn-1", outcome="completed", cost=TurnCost(1))
    assert str(unknown.value) == "finish_turn: no task 'nope' in this store (nothing was written)"
    assert unknown.value.task_id == "nope"
    with pytest.raises(ValueError, match=r"^outcome must be one of completed, failed, .*; got 'done'$"):
        store.finish_turn("t1", "turn-1", outcome="done")
    with pytest.raises(ValueError, match=r"^turn_id: expected a non-empty string, got ''$"):
        store.finish_turn("t1", "", outcome="completed")
    with pytest.raises(ValueError, match=r"^cost: the row is for task 't2', not 't1' \(give a TurnCost"):
        store.finish_turn("t1", "turn-1", outcome="completed", cost=CostRow("t2", 1, 1))
    assert state(store) == before
    # the unknown task's turn id was not used up: the same call for a real task works
    assert store.finish_turn("t1", "turn-1", outcome="completed").replayed is False


@pytest.mark.rule("CST-2")
def test_record_cost_for_an_unknown_task_is_refused_with_the_reason(make_store: MakeStore) -> None:
    store = make_store(world(running("t1")))
    with pytest.raises(UnknownTask, match=r"^record_cost: no task 'ghost' in this store"):
        store.record_cost(CostRow("ghost", 1, "0.5", 10))
    assert store.task_costs("ghost") == ()
    store.record_cost(CostRow("t1", 1, "0.5", 10))
    assert store.task_costs("t1") == (CostRow("t1", 1, Decimal("0.5"), 10),)


@pytest.mark.rule("CST-2")
def test_negative_amounts_are_refused_when_the_record_is_made() -> None:
    with pytest.raises(ValueError, match=r"^CostRow.usd: must not be negative, got -0.01$"):
        CostRow("t1", 1, -0.01)
    with pytest.raises(ValueError, match=r"^CostRow.tokens: must not be negative, got -3$"):
        CostRow("t1", 1, 1, -3)
    with pytest.raises(ValueError, match=r"^CostRow.round: must not be negative, got -1$"):
        CostRow("t1", -1)
    with pytest.raises(ValueError, match=r"^TurnCost.tokens: must not be negative, got -1$"):
        TurnCost(1, -1)
    with pytest.raises(ValueError, match=r"^Quota.used_usd: must be a finite amount, got nan$"):
        Quota("u1", 1, float("nan"))
    with pytest.raises(TypeError, match=r"^CostRow.usd: expected an amount of money, got bool$"):
        CostRow("t1", 1, True)


@pytest.mark.rule("CST-2")
def test_a_negative_charge_is_refused_and_changes_nothing(make_store: MakeStore) -> None:
    store = make_store(world(running("t1")))
    with pytest.raises(ValueError, match=r"^charge_quota usd: must not be negative, got -1$"):
        store.charge_quota("u1", -1)
    assert store.get_quota("u1") == Quota("u1", 10, 0)


# ---- a failure in the middle, then the same call again (crash / redelivery) ----------


@pytest.mark.rule("TRN-9")
def test_a_failure_in_the_middle_leaves_nothing_and_the_call_again_finishes_once(
    make_store: MakeStore,
) -> None:
    """The charge fails after the status and the cost row were written (a used amount
    at the 64-bit limit overflows, on every store): the whole call is undone, so the
    worker's retry - the same call with the same turn id - finishes the turn once."""
    full = Quota("u1", None, "9223372036854.775807")
    store = make_store(world(running("t1"), quota=full))
    before = state(store)
    with pytest.raises(ValueError) as failed:
        store.finish_turn(
            "t1", "turn-1", outcome="completed", result_text="x", cost=TurnCost(1), requeue=True
        )
    assert str(failed.value) == (
        "charge_quota usd: 9223372036854.775807 + 1 is too large (at most 9223372036854.775807)"
    )
    assert state(store) == before  # nothing of the turn: task still running, no cost row
    store.put_quota(Quota("u1", None, 0))
    done = store.finish_turn(
        "t1", "turn-1", outcome="completed", result_text="x", cost=TurnCost(1), requeue=True
    )
    assert (done.replayed, done.status, done.charged) == (False, "queued", Quota("u1", None, 1))
    again = store.finish_turn(
        "t1", "turn-1", outcome="completed", result_text="x", cost=TurnCost(1), requeue=True
    )
    assert again.replayed is True
    assert store.task_costs("t1") == (CostRow("t1", 1, 1),)
    assert store.get_quota("u1") == Quota("u1", None, 1)


@pytest.mark.rule("TRN-9")
def test_two_workers_finishing_one_turn_at_once_finish_it_once(make_store: MakeStore) -> None:
    store = make_store(world(running("t1")))
    barrier = threading.Barrier(4)
    results: list[FinishedTurn] = []
    lock = threading.Lock()

    def finish() -> None:
        barrier.wait()
        done = store.finish_turn("t1", "turn-1", outcome="completed", cost=TurnCost("0.5"))
        with lock:
            results.append(done)

    threads = [threading.Thread(target=finish) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.replayed for r in results) == [False, True, True, True]
    assert store.task_costs("t1") == (CostRow("t1", 1, "0.5"),)
    assert store.get_quota("u1").used_usd == Decimal("0.5")
