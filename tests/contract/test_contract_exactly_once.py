"""Exactly-once delivery (TRN-9), why a turn was not delivered (TRN-10) and bounded
delivery (TRN-11), on every store (memory, SQLite, PostgreSQL): a finished turn
delivered again is a replay that changes nothing; a delivery that crashes in the middle
(a BaseException out of a port, the way a killed process leaves a transaction) is
completed by the redelivery without duplicating or losing anything; the report is
queued once; a turn that can not be delivered says why; polls and waits stop at the
deadline or the cancellation signal."""

from __future__ import annotations

import threading
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.exactly_once import NOW, TURN, Crash, Crashing, deliver, ports_for, snapshot, world

from markertools import deliver_turn
from markertools.domain.model import Task
from markertools_adapters.clock import VirtualClock


@pytest.mark.rule("TRN-9")
def test_a_finished_turn_delivered_again_is_a_replay_that_changes_nothing(make_store: Any) -> None:
    store = make_store(world())
    first = deliver(store)
    assert first.delivered and not first.replayed and first.report_queued
    assert [e.outcome for e in first.entries] == ["done"] * 6
    after_first = snapshot(store)
    again = deliver(store)
    assert again.replayed is True
    assert again.entries == first.entries and again.message == first.message
    assert again.queued_followups == first.queued_followups
    assert snapshot(store) == after_first  # not one row, audit record or follow-up more
    created = [e.target for e in first.entries if e.kind == "task-create"]
    assert len(set(created)) == 2 and all(t.startswith("t-") for t in created)


@pytest.mark.rule("TRN-9")
def test_without_a_turn_id_every_call_executes(make_store: Any) -> None:
    store = make_store(world())
    ports = ports_for(store)  # one random source: new ids on every call
    for _ in range(2):
        deliver_turn(TURN, sender="t-s", outcome="completed", ports=ports)
    creates = [t for t in snapshot(store)["tasks"] if t[3] in ("first child", "second child")]
    assert len(creates) == 4  # the documented opt-out


@pytest.mark.rule("TRN-9")
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(at=st.integers(min_value=1, max_value=14))
def test_a_crash_at_any_write_then_redelivery_equals_one_clean_delivery(make_store: Any, at: int) -> None:
    clean = make_store(world())
    expected_report = deliver(clean)
    expected = snapshot(clean)

    store = make_store(world())
    with pytest.raises(Crash):
        deliver(Crashing(store, at))
    report = deliver(store)  # the worker delivers the same turn again
    assert report.delivered and report.report_queued
    assert snapshot(store) == {**expected, "audit": snapshot(store)["audit"]}
    # no duplicate and nothing lost: the same tasks, todos and follow-ups (the report once)
    assert snapshot(store)["followups"] == expected["followups"]
    assert [e.outcome for e in report.entries] == [e.outcome for e in expected_report.entries]
    third = deliver(store)
    assert third.replayed is True


@pytest.mark.rule("TRN-9", "TRN-8")
def test_a_report_that_can_not_be_queued_says_so_and_is_queued_once_later(make_store: Any) -> None:
    store = make_store(world())

    @attrs.define
    class NoQueue:
        store: Any

        def __getattr__(self, name: str) -> Any:
            if name == "enqueue_followup":
                def refuse(*a: Any, **k: Any) -> None:
                    raise OSError("the queue is down")

                return refuse
            return getattr(self.store, name)

    broken = deliver(NoQueue(store))
    assert broken.delivered is True and broken.report_queued is False
    assert broken.report_error == "OSError: the queue is down (deliver the turn again with the same turn id)"
    assert snapshot(store)["followups"] == []
    fixed = deliver(store)
    assert fixed.report_queued is True and not fixed.replayed
    assert [f for _, f in snapshot(store)["followups"]] == sorted([fixed.message, "/goal ship it"])
    assert deliver(store).replayed is True
    assert len(snapshot(store)["followups"]) == 2


@pytest.mark.rule("TRN-10")
@pytest.mark.parametrize(
    ("sender", "outcome", "code", "reason"),
    [
        ("t-s", "failed", "outcome-not-completed", "the turn ended 'failed'"),
        ("nobody", "completed", "unknown-sender", "the sender task does not exist"),
        ("t-cancelled", "completed", "sender-cancelled", "the sender was cancelled"),
    ],
)
def test_a_turn_not_delivered_says_why(make_store: Any, sender: str, outcome: str, code: str, reason: str) -> None:
    w = world()
    w = attrs.evolve(w, tasks=(*w.tasks, Task(id="t-cancelled", project_id="p", status="interrupted", created_by="u")))
    store = make_store(w)
    report = deliver_turn(TURN, sender=sender, outcome=outcome, ports=ports_for(store), turn_id="x")
    assert report.delivered is False and report.entries == ()
    assert report.not_delivered is not None and report.not_delivered.code == code
    assert reason in report.not_delivered.reason.render("en")


@pytest.mark.rule("TRN-10")
def test_goal_and_coordinator_senders_have_their_own_codes(make_store: Any) -> None:
    w = world()
    w = attrs.evolve(
        w,
        tasks=(
            *w.tasks,
            Task(id="t-goal", project_id="p", status="running", created_by="u", verify_command="make test"),
            Task(id="t-coord", project_id="p", status="running", created_by="u", is_coordinator=True),
        ),
    )
    store = make_store(w)
    goal = deliver_turn(TURN, sender="t-goal", outcome="completed", ports=ports_for(store))
    coord = deliver_turn(TURN, sender="t-coord", outcome="completed", ports=ports_for(store))
    assert goal.not_delivered is not None and goal.not_delivered.code == "goal-task"
    assert coord.not_delivered is not None and coord.not_delivered.code == "coordinator-task"


@pytest.mark.rule("TRN-10")
def test_an_unknown_outcome_or_locale_is_a_caller_error_naming_the_allowed_values(make_store: Any) -> None:
    from markertools import Locale, TurnOutcome

    store = make_store(world())
    with pytest.raises(ValueError, match=r"outcome must be one of completed, failed, .*; got 'complete'"):
        deliver_turn(TURN, sender="t-s", outcome="complete", ports=ports_for(store))
    with pytest.raises(ValueError, match=r"locale must be one of en, zh; got 'fr'"):
        deliver_turn(TURN, sender="t-s", outcome="completed", ports=ports_for(store), locale="fr")
    report = deliver_turn(TURN, sender="t-s", outcome=TurnOutcome.COMPLETED, ports=ports_for(store), locale=Locale.ZH)
    assert report.delivered and report.locale == "zh"
    assert snapshot(store)["tasks"]  # nothing was refused


WAIT_TURN = """```task-poll
{"task_id": "t-run", "timeout_seconds": 600}
```

```wait-threads
{"task_ids": ["t-run"], "timeout_seconds": 600}
```
"""


@pytest.mark.rule("TRN-11")
def test_a_deadline_ends_every_poll_and_wait_early_with_stopped_waiting(make_store: Any) -> None:
    store = make_store(world())
    clock = VirtualClock(NOW)
    report = deliver_turn(WAIT_TURN, sender="t-s", outcome="completed", ports=ports_for(store, clock), deadline=30)
    assert clock.now() - NOW <= 30 + 1e-6  # not 2 x 600 s
    assert [e.outcome for e in report.entries] == ["done", "done"]
    for entry in report.entries:
        text = entry.reason.render("en")
        assert "NOT finished: stopped waiting after" in text
        assert (
            "because the delivery's deadline passed (30 s from its start, shared by every poll "
            "and wait of the turn), last status seen 'running'; poll again in a later turn"
        ) in text


@pytest.mark.rule("TRN-11")
def test_a_set_cancellation_signal_stops_waiting_at_once(make_store: Any) -> None:
    store = make_store(world())
    clock = VirtualClock(NOW)
    stop = threading.Event()
    stop.set()
    report = deliver_turn(WAIT_TURN, sender="t-s", outcome="completed", ports=ports_for(store, clock), cancel=stop)
    assert clock.now() == NOW
    assert all(
        "stopped waiting after 0 s because the delivery was cancelled" in e.reason.render("en")
        for e in report.entries
    )
    later = deliver_turn(WAIT_TURN, sender="t-s", outcome="completed", ports=ports_for(store, clock), cancel=lambda: clock.now() > NOW + 5)
    assert 5 < clock.now() - NOW <= 5 + 2 * 600 / 60 + 10  # stopped at the first check after 5 s
    assert "because the delivery was cancelled" in later.entries[0].reason.render("en")


@pytest.mark.rule("TRN-11")
def test_bad_deadlines_and_signals_are_caller_errors(make_store: Any) -> None:
    store = make_store(world())
    for bad in (-1, float("nan"), "10", True):
        with pytest.raises(ValueError, match="deadline must be a finite number of seconds >= 0"):
            deliver_turn(WAIT_TURN, sender="t-s", outcome="completed", ports=ports_for(store), deadline=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"cancel must be a threading\.Event"):
        deliver_turn(WAIT_TURN, sender="t-s", outcome="completed", ports=ports_for(store), cancel=3)


@pytest.mark.rule("TRN-10")
def test_stores_refuse_statuses_outside_their_enumeration(make_store: Any) -> None:
    from markertools.domain.model import Todo

    store = make_store(world())
    with pytest.raises(ValueError, match=r"task status must be one of queued, running, .*; got 'done'"):
        store.insert_task(Task(id="t-bad", project_id="p", status="done"))
    with pytest.raises(ValueError, match=r"task status must be one of .*; got 'finished'"):
        store.transition_task("t-run", "running", {"status": "finished"})
    with pytest.raises(ValueError, match=r"todo status must be one of pending, in_progress, blocked, completed; got 'open'"):
        store.insert_todo(Todo(id="d-bad", project_id="p", title="x", status="open"))
    assert store.get_task("t-bad") is None
    assert store.get_task("t-run").status == "running"
