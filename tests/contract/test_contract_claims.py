"""Issue 27 items 1 and 4 on every store (memory, the toy kit store, SQLite, PostgreSQL):
the follow-up contract (the queue is the only channel to the agent: a zero-block turn
queues nothing, nothing is handed out twice) and `claim_task`, whose Claim says what
kind of start it is (INJ-1) and hands over the follow-ups it took in the same
transaction. Everything goes through the calls a worker written from
docs/worker-loop.md makes: deliver_turn, transition_task, take_followups, claim_task,
requeue_platform."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from markertools import (
    Claim,
    StartKind,
    Task,
    TaskChange,
    deliver_turn,
)
from markertools.domain.model import PermissionGrant, Project
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.first_turn import first_turn_prompt
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

MakeStore = Callable[[World], Any]
NOW = 1_798_333_200.0
TODO = '```todo-create\n{"title": "write the changelog"}\n```'
BAD = '```todo-create\n{"title": ""}\n```'


def _world(*tasks: Task) -> World:
    return World(
        now=NOW,
        projects=(Project("p1", "shop"),),
        permissions=(PermissionGrant("u1", "p1", ("read", "create_task", "approve_merge")),),
        tasks=tasks,
    )


def _task(tid: str, status: str = "queued", created: float = 0.0, **kw: Any) -> Task:
    return Task(tid, "p1", status=status, created_by="u1", created_at=created, **kw)


def _ports(store: Any) -> Any:
    return store_ports(
        store, clock=VirtualClock(NOW), random=SeededRandom(1), executor=NoopExecutor()
    )


def _complete_and_requeue(store: Any, tid: str) -> None:
    """The end of a turn in docs/worker-loop.md: complete, then queue again for its next turn."""
    assert store.transition_task(tid, "running", TaskChange(status="completed")) is not None
    assert store.transition_task(tid, "completed", TaskChange(status="queued")) is not None


# ---- the follow-up contract (TRN-6) -------------------------------------------------------


@pytest.mark.rule("TRN-6", "TRN-9")
@pytest.mark.parametrize("turn_id", [None, "turn-1"])
def test_a_zero_block_turn_queues_nothing_and_says_so(
    make_store: MakeStore, turn_id: str | None
) -> None:
    store = make_store(_world(_task("t1", "running")))
    report = deliver_turn(
        "All done, nothing to ask.",
        sender="t1",
        outcome="completed",
        ports=_ports(store),
        turn_id=turn_id,
    )
    assert report.delivered and report.entries == ()
    assert report.queued_followups == () and report.report_queued
    assert report.message == "markertools report: 0 block(s) from your last turn ()."
    assert store.take_followups("t1") == ()
    assert store.export_world(NOW).followups == ()


@pytest.mark.rule("TRN-6")
def test_a_turn_whose_blocks_were_all_skipped_queues_its_report(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1", "running")))
    report = deliver_turn(BAD, sender="t1", outcome="completed", ports=_ports(store))
    assert [e.outcome for e in report.entries] == ["skipped"]
    assert report.queued_followups == (report.message,)
    (text,) = store.take_followups("t1")
    assert text == report.message and "todo-create" in text  # the agent learns why


@pytest.mark.rule("TRN-6", "INJ-1")
def test_deliver_take_claim_again_hands_nothing_stale(make_store: MakeStore) -> None:
    """A worker that keeps one session (examples/codex_worker.py): each report reaches the
    agent through take_followups; after a task-retry the claim hands nothing old."""
    store = make_store(_world(_task("t0", "running"), _task("t1", "running")))
    ports = _ports(store)
    report = deliver_turn(TODO, sender="t1", outcome="completed", ports=ports, turn_id="c-1")
    sent = store.take_followups("t1")  # what the worker sends as the next turn's input
    assert sent == report.queued_followups == (report.message,)
    assert store.transition_task("t1", "running", TaskChange(status="failed")) is not None
    retry = '```task-retry\n{"task_id": "t1"}\n```'
    retried = deliver_turn(retry, sender="t0", outcome="completed", ports=ports)
    assert [e.outcome for e in retried.entries] == ["done"], retried.message
    claim = store.claim_task("p1", "host-1")
    assert claim == Claim(store.get_task("t1"), StartKind.RETRY, ())
    assert store.take_followups("t1") == ()


@pytest.mark.rule("TRN-6", "INJ-1")
def test_a_continuation_claim_hands_the_report_once(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1", "running")))
    report = deliver_turn(TODO, sender="t1", outcome="completed", ports=_ports(store))
    _complete_and_requeue(store, "t1")
    claim = store.claim_task("p1", "host-1")
    assert isinstance(claim, Claim)
    assert claim.start is StartKind.CONTINUATION and claim.start == "continuation"
    assert claim.followups == (report.message,)
    assert (claim.task.id, claim.task.status, claim.task.host) == ("t1", "running", "host-1")
    assert store.take_followups("t1") == ()  # taken with the claim: never handed out twice
    exported = store.export_world(NOW).followups
    assert [(f.text, f.consumed) for f in exported] == [(report.message, True)]
    # a continuation injects nothing: the project context is not sent twice
    out = first_turn_prompt(
        claim.task,
        claim.start,
        projects=store,
        todos=store,
        attempts=store,
        random=SeededRandom(2),
    )
    assert out.sections == () and out.prompt == claim.task.prompt


# ---- claim_task (INJ-1) -------------------------------------------------------------------


@pytest.mark.rule("INJ-1")
def test_a_first_claim_is_fresh_and_an_empty_queue_claims_nothing(make_store: MakeStore) -> None:
    store = make_store(_world(_task("b", created=2.0), _task("a", created=1.0)))
    first = store.claim_task("p1", "host-1")
    assert first == Claim(store.get_task("a"), StartKind.FRESH, ())
    assert first.task.status == "running" and first.task.host == "host-1"
    assert store.claim_task("p1", "host-2").task.id == "b"
    assert store.claim_task("p1", "host-1") is None
    assert store.claim_next_task("p1", "host-1") is None  # the old call still works


@pytest.mark.rule("INJ-1", "ATT-2", "ATT-4")
def test_a_platform_requeue_claims_as_resume_and_gets_the_preamble(make_store: MakeStore) -> None:
    store = make_store(
        _world(
            _task("t1", "running", result_text="did half"),
            _task("g1", "running", goal_mode=True),
        )
    )
    assert store.requeue_platform("t1", "running", "platform_fresh", -1, NOW).ok
    claim = store.claim_task("p1", "host-1")
    assert (claim.task.id, claim.start, claim.followups) == ("t1", StartKind.RESUME, ())
    out = first_turn_prompt(
        claim.task,
        claim.start,
        projects=store,
        todos=store,
        attempts=store,
        random=SeededRandom(2),
    )
    assert out.sections == ("project", "resume")
    assert "This is a restart of attempt 1, not a new task" in out.prompt
    assert "did half" in out.prompt  # the previous output, framed as data
    assert store.requeue_platform("g1", "running", "goal_breakpoint", 3, NOW).ok
    goal = store.claim_task("p1", "host-1")
    assert (goal.task.id, goal.start) == ("g1", StartKind.CHECKPOINT)


@pytest.mark.rule("INJ-1")
def test_concurrent_claims_hand_each_task_and_each_followup_out_once(
    make_store: MakeStore,
) -> None:
    tasks = tuple(_task(f"t{i:02}", created=float(i)) for i in range(12))
    store = make_store(_world(*tasks))
    for t in tasks[::2]:
        store.enqueue_followup(t.id, f"report for {t.id}")
    got: list[Claim] = []
    lock = threading.Lock()

    def worker(host: str) -> None:
        while (claim := store.claim_task("p1", host)) is not None:
            with lock:
                got.append(claim)

    threads = [threading.Thread(target=worker, args=(f"h{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(c.task.id for c in got) == [t.id for t in tasks]
    by_id = {c.task.id: c for c in got}
    for i, t in enumerate(tasks):
        want = (f"report for {t.id}",) if i % 2 == 0 else ()
        kind = StartKind.CONTINUATION if want else StartKind.FRESH
        assert (by_id[t.id].followups, by_id[t.id].start) == (want, kind)
    assert all(store.take_followups(t.id) == () for t in tasks)
