"""Fleet safety on every store (memory, the toy kit store, SQLite, PostgreSQL), at the
library level, as an embedding worker sees it:

- FLT-1: a claim carries a fencing epoch; once host B holds the task (A's lease expired,
  B requeued and claimed it), every write A makes with its claim - a delivered turn, a
  tool call, the end of the turn, taking follow-ups, a cost row, a checkpoint, a lease
  renewal, anything inside `fenced` - raises LeaseLost and changes nothing;
- FLT-2: a delivery cut off after its first block is pending until the task's next
  runner completes it (only the blocks not yet applied run), and the preamble of that
  runner's first turn names what the turn did; the ledger row names the cause; a tool
  call retried after a crash counts toward its cap once; a turn's cost is charged once;
- FLT-5: claim order puts awaited tasks first;
- FLT-6: keys reused with other input are refused naming both digests;
- FLT-7: a sender that is not running delivers nothing."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import attrs
import pytest

from markertools import (
    CallIdReused,
    LeaseLost,
    NotDeliveredCode,
    Quota,
    Task,
    TurnCost,
    TurnFinishedDifferently,
    TurnIdReused,
    deliver_call,
    deliver_turn,
    recover_pending_turns,
)
from markertools.domain.model import PermissionGrant, Project
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.first_turn import first_turn_prompt
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

MakeStore = Callable[[World], Any]
NOW = 1_798_333_200.0
LEASE = 30.0
CREATE = '```task-create\n{"prompt": "child work", "name": "kid"}\n```'
TODO = '```todo-create\n{"title": "write the notes"}\n```'


def _world(*tasks: Task, quotas: tuple[Quota, ...] = ()) -> World:
    return World(
        now=NOW,
        projects=(Project("p1", "shop"),),
        permissions=(PermissionGrant("u1", "p1", ("read", "create_task", "approve_merge")),),
        tasks=tasks,
        quotas=quotas,
    )


def _task(tid: str, status: str = "queued", created: float = 1.0, **kw: Any) -> Task:
    return Task(tid, "p1", status=status, created_by="u1", created_at=created, **kw)


def _ports(store: Any, now: float = NOW) -> Any:
    return store_ports(
        store, clock=VirtualClock(now), random=SeededRandom(1), executor=NoopExecutor()
    )


def _taken_over(store: Any) -> tuple[Any, Any]:
    """Host A claims t1, its lease expires, host B requeues it and claims it again."""
    a = store.claim_task("p1", "A", now=NOW, lease_seconds=LEASE)
    assert a is not None and a.epoch == 1
    requeued = store.requeue_expired(
        "t1",
        "A",
        NOW + LEASE + 1,
        affinity_seconds=0,
        reason="host A stopped renewing its lease",
    )
    assert requeued.ok, requeued.error
    b = store.claim_task("p1", "B", now=NOW + LEASE + 2, lease_seconds=LEASE)
    assert b is not None and b.task.id == "t1" and b.epoch == 2
    return a, b


LOST = (
    "lease lost: task 't1' is no longer held by claim 1 (it is claim 2 now, running); "
    "nothing was written - stop this attempt and write nothing more for it"
)


@pytest.mark.rule("FLT-1")
def test_every_claim_gets_a_larger_epoch_kept_with_its_lease(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1")))
    a, b = _taken_over(store)
    assert (a.epoch, b.epoch) == (1, 2)
    assert store.get_task("t1").epoch == 2
    lease = store.get_lease("t1")
    assert (lease.host, lease.epoch) == ("B", 2)


@pytest.mark.rule("FLT-1")
def test_a_host_that_lost_its_claim_writes_nothing(make_store: MakeStore) -> None:
    """The defect as the embedding user hit it: after renew_leases("A", ...) returns (),
    A's delivery and A's finish_turn still wrote for the task B runs."""
    store = make_store(_world(_task("t1")))
    a, b = _taken_over(store)
    ports = _ports(store)
    assert store.renew_leases("A", [a], lease_seconds=LEASE, now=NOW + LEASE + 3) == ()
    before = store.export_world(NOW)

    writes: list[tuple[str, Callable[[], object]]] = [
        (
            "deliver_turn",
            lambda: deliver_turn(
                CREATE, sender="t1", outcome="completed", ports=ports, turn_id="turn-1", claim=a
            ),
        ),
        (
            "deliver_call",
            lambda: deliver_call(
                "todo_create", {"title": "x"}, sender="t1", ports=ports, call_id="c1", claim=a
            ),
        ),
        (
            "finish_turn",
            lambda: store.finish_turn(
                "t1", "turn-1", outcome="completed", result_text="A's result", claim=a
            ),
        ),
        ("take_followups", lambda: store.take_followups("t1", claim=a)),
        ("charge_turn", lambda: store.charge_turn("t1", "turn-0", TurnCost(1, 10), claim=a)),
        (
            "record_checkpoint",
            lambda: store.record_checkpoint(
                "t1", 1, thread_id="th", turn_id="turn-1", now=NOW, claim=a
            ),
        ),
        ("fenced", lambda: store.fenced(a).__enter__()),
    ]
    for name, write in writes:
        with pytest.raises(LeaseLost) as lost:
            write()
        assert str(lost.value) == LOST, name
        assert (lost.value.epoch, lost.value.current_epoch) == (1, 2)
        assert store.export_world(NOW) == before, name
    assert store.get_task("t1").status == "running"  # still B's
    assert store.renew_leases("B", [b], lease_seconds=LEASE, now=NOW + LEASE + 3) == ("t1",)

    # B's own writes go through
    report = deliver_turn(
        CREATE, sender="t1", outcome="completed", ports=ports, turn_id="turn-b", claim=b
    )
    assert [(e.kind, e.outcome) for e in report.entries] == [("task-create", "done")]
    done = store.finish_turn("t1", "turn-b", outcome="completed", result_text="B's", claim=b)
    assert (done.status, store.get_task("t1").result_text) == ("completed", "B's")
    # and once the task is finished even the right claim is refused
    with pytest.raises(LeaseLost, match="the task is completed, no longer running"):
        store.take_followups("t1", claim=b)


@pytest.mark.rule("FLT-1")
def test_a_claim_of_another_task_or_a_store_that_cannot_fence_is_a_caller_error(
    make_store: MakeStore,
) -> None:
    store = make_store(_world(_task("t1"), _task("t2")))
    claim = store.claim_task("p1", "A", now=NOW, lease_seconds=LEASE)
    ports = _ports(store)
    other = "t2" if claim.task.id == "t1" else "t1"
    with pytest.raises(ValueError, match=r"claim is for task .*, not the sender"):
        deliver_turn(CREATE, sender=other, outcome="completed", ports=ports, claim=claim)
    with pytest.raises(ValueError, match=r"claim= needs a store that can fence"):
        deliver_turn(
            CREATE,
            sender=claim.task.id,
            outcome="completed",
            ports=attrs.evolve(ports, fencing=None),
            claim=claim,
        )


@pytest.mark.rule("FLT-2")
def test_a_delivery_cut_off_is_pending_and_the_next_runner_completes_it(
    make_store: MakeStore,
) -> None:
    """A crash after the turn's first block: the child exists, the todo not yet. The next
    runner's recovery applies only the todo, the preamble names the child by id, and the
    ledger row names the cause."""
    store = make_store(_world(_task("t1", prompt="plan the release")))
    a = store.claim_task("p1", "A", now=NOW, lease_seconds=LEASE)
    ports = _ports(store)
    text = f"Two things.\n\n{CREATE}\n\n{TODO}\n"

    class Crash(Exception):
        pass

    real_insert_todo = store.insert_todo

    def dies(todo: Any) -> None:
        raise Crash("killed here")

    # simulate the process dying at the second block's write: its transaction rolls back
    # and nothing after it runs (the exception stands in for kill -9: tests/worker kill the
    # real process at every write)
    store.insert_todo = dies
    report = deliver_turn(text, sender="t1", outcome="completed", ports=ports, turn_id="u1", claim=a)
    store.insert_todo = real_insert_todo
    assert not report.report_queued  # the todo block could not be recorded
    child = [t for t in store.export_world(NOW).tasks if t.parent_task_id == "t1"]
    assert len(child) == 1
    pending = store.pending_turns("t1")
    assert [(p.turn_id, p.epoch, p.outcome, p.locale, p.text) for p in pending] == [
        ("u1", 1, "completed", "en", text)
    ]

    requeued = store.requeue_expired(
        "t1", "A", NOW + LEASE + 1, affinity_seconds=0, reason="host A was killed"
    )
    assert requeued.ok and requeued.attempt.interrupted_reason == "host A was killed"
    b = store.claim_task("p1", "B", now=NOW + LEASE + 2, lease_seconds=LEASE)
    recovered = recover_pending_turns(b, ports=ports)
    assert len(recovered) == 1
    entries = recovered[0].report.entries
    assert [(e.kind, e.outcome) for e in entries] == [("task-create", "done"), ("todo-create", "done")]
    assert entries[0].target == child[0].id  # restored, not created again
    world = store.export_world(NOW)
    assert len([t for t in world.tasks if t.parent_task_id == "t1"]) == 1
    assert [t.title for t in world.todos] == ["write the notes"]
    assert store.pending_turns("t1") == ()
    assert recover_pending_turns(b, ports=ports) == ()  # nothing left: nothing runs

    prompt = first_turn_prompt(
        store.get_task("t1"), b.start, ports, recovered=[recovered[0].report.message]
    )
    assert "resume" in prompt.sections
    assert "Interruption reason of the previous attempt: host A was killed" in prompt.prompt
    assert "the platform finished that delivery" in prompt.prompt
    assert child[0].id in prompt.prompt  # the agent learns the child's id


@pytest.mark.rule("FLT-2")
def test_a_pending_turn_of_a_lost_claim_is_not_completed_by_it(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1")))
    a, _b = _taken_over(store)
    with pytest.raises(LeaseLost):
        recover_pending_turns(a, ports=_ports(store))


@pytest.mark.rule("FLT-2", "TOL-4")
def test_a_call_retried_after_a_crash_counts_toward_its_cap_once(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1", "running", turn=1)))
    ports = _ports(store)

    class Crash(Exception):
        pass

    real = store.insert_todo

    def dies(todo: Any) -> None:
        raise Crash("killed here")

    store.insert_todo = dies
    first = deliver_call("todo_create", {"title": "x"}, sender="t1", ports=ports, call_id="c1")
    store.insert_todo = real
    assert first.entry.outcome == "rejected"  # the block rolled back
    retried = deliver_call("todo_create", {"title": "x"}, sender="t1", ports=ports, call_id="c1")
    assert retried.replayed  # its result was journalled: the same answer, nothing more
    assert store.turn_usage("t1", 1) == {"todo-create": 1}


@pytest.mark.rule("FLT-2", "WRK-8")
def test_the_cost_of_a_turn_that_is_not_the_last_is_charged_once(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1", "running"), quotas=(Quota("u1", 10, 0),)))
    first = store.charge_turn("t1", "turn-1", TurnCost(Decimal("0.25"), 100))
    again = store.charge_turn("t1", "turn-1", TurnCost(Decimal("0.25"), 100))
    assert (first.replayed, again.replayed) == (False, True)
    assert first.cost.round == 1 and again.cost == first.cost
    assert store.get_quota("u1").used_usd == Decimal("0.25")
    assert len(store.task_costs("t1")) == 1
    assert store.get_task("t1").status == "running"  # the task is left alone
    with pytest.raises(TurnFinishedDifferently) as other:
        store.charge_turn("t1", "turn-1", TurnCost(Decimal("9"), 9))
    assert str(other.value).startswith(
        "turn 'turn-1' of task 't1' was already finished with other input (stored digest finish:"
    )
    assert store.get_quota("u1").used_usd == Decimal("0.25")


@pytest.mark.rule("FLT-6")
def test_a_finished_turn_id_with_another_outcome_or_cost_is_refused(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1", "running"), quotas=(Quota("u1", 10, 0),)))
    store.finish_turn("t1", "t1-turn", outcome="completed", result_text="ok", cost=TurnCost(1, 5))
    before = store.export_world(NOW)
    for kw in (
        {"outcome": "failed", "cost": TurnCost("9", 9)},
        {"outcome": "completed", "result_text": "other", "cost": TurnCost(1, 5)},
        {"outcome": "completed", "result_text": "ok", "cost": TurnCost(2, 5)},
    ):
        with pytest.raises(TurnFinishedDifferently) as refused:
            store.finish_turn("t1", "t1-turn", **kw)
        error = refused.value
        assert isinstance(error, ValueError)
        assert error.stored != error.given
        assert error.stored[:7] == error.given[:7] == "finish:"
        assert store.export_world(NOW) == before
    same = store.finish_turn(
        "t1", "t1-turn", outcome="completed", result_text="ok", cost=TurnCost(1, 5)
    )
    assert same.replayed


@pytest.mark.rule("FLT-6")
def test_a_turn_id_with_another_outcome_and_a_call_id_with_other_arguments_are_refused(
    make_store: MakeStore,
) -> None:
    store = make_store(_world(_task("t1", "running", turn=1)))
    ports = _ports(store)
    deliver_turn(CREATE, sender="t1", outcome="completed", ports=ports, turn_id="t-1")
    before = store.export_world(NOW)
    with pytest.raises(TurnIdReused, match=r"/completed, this one text:[0-9a-f]{12}…/failed\)"):
        deliver_turn(CREATE, sender="t1", outcome="failed", ports=ports, turn_id="t-1")
    assert store.export_world(NOW) == before

    first = deliver_call("task_create", {"prompt": "one"}, sender="t1", ports=ports, call_id="c0")
    assert first.entry.outcome == "done"
    before = store.export_world(NOW)
    with pytest.raises(CallIdReused) as reused:
        deliver_call("task_create", {"prompt": "DIFFERENT"}, sender="t1", ports=ports, call_id="c0")
    assert str(reused.value).startswith(
        "call id 'c0' of task 't1' was already used with other arguments (stored digest args:"
    )
    assert store.export_world(NOW) == before
    again = deliver_call("task_create", {"prompt": "one"}, sender="t1", ports=ports, call_id="c0")
    assert again.replayed and again.entry.target == first.entry.target


@pytest.mark.rule("FLT-7")
@pytest.mark.parametrize("status", ["queued", "completed", "failed", "cancelled"])
def test_a_sender_that_is_not_running_delivers_nothing(make_store: MakeStore, status: str) -> None:
    store = make_store(_world(_task("t1", status)))
    before = store.export_world(NOW)
    report = deliver_turn(CREATE, sender="t1", outcome="completed", ports=_ports(store))
    assert not report.delivered and report.entries == ()
    assert report.not_delivered.code == NotDeliveredCode.SENDER_NOT_RUNNING == "sender-not-running"
    assert report.not_delivered.reason.render() == (
        f"the sender task is not running (it is {status}); only a running task's turns are"
        " delivered"
    )
    after = store.export_world(NOW)
    assert attrs.evolve(after, audit=()) == before
    assert [(a.kind, a.outcome, a.reason) for a in after.audit] == [
        (
            "turn",
            "discarded",
            f"turn not delivered: the sender task is not running (it is {status}); only a"
            " running task's turns are delivered; 1 block(s) discarded",
        )
    ]


@pytest.mark.rule("FLT-5")
def test_a_task_a_running_task_waits_for_is_claimed_first(make_store: MakeStore) -> None:
    store = make_store(
        _world(
            _task("old", created=1.0),
            _task("parent", "running", created=2.0),
            _task("child", created=3.0, parent_task_id="parent"),
        )
    )
    store.mark_awaited("parent", ["child"])
    first = store.claim_task("p1", "H", now=NOW)
    assert first.task.id == "child"  # awaited beats older
    store.clear_awaited("parent")
    store.insert_task(_task("c2", created=4.0, parent_task_id="parent"))
    assert store.claim_task("p1", "H", now=NOW).task.id == "old"  # nobody waits: oldest


@pytest.mark.rule("FLT-5")
def test_a_requeued_waiter_never_goes_ahead_of_what_it_waits_for(make_store: MakeStore) -> None:
    store = make_store(_world(_task("parent", created=1.0), _task("child", created=2.0)))
    claim = store.claim_task("p1", "A", now=NOW, lease_seconds=LEASE)
    assert claim.task.id == "parent"
    store.mark_awaited("parent", ["child"])
    assert store.requeue_expired("parent", "A", NOW + LEASE + 1, affinity_seconds=0).ok
    # the parent is queued again and older, but it waits for the child: the child first
    assert store.claim_task("p1", "B", now=NOW + LEASE + 2).task.id == "child"
