"""Running an orchestration: launches, limits, decision ids, quota stops, notifications
(PLN-5 .. PLN-9), all through the pure `apply(state, event, now)`."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from support.strategies.plans import role_dict, run_of

from markertools.plans import (
    Applied,
    Cancel,
    DecisionTimeout,
    Dispatch,
    Dropped,
    Duplicate,
    Event,
    Finish,
    HostOnline,
    HostRestarted,
    Launch,
    NotifyResult,
    Outcome,
    Pause,
    QuotaObserved,
    QuotaOk,
    QuotaPolicy,
    QuotaStop,
    QuotaUnobserved,
    QuotaWindow,
    Refused,
    Resume,
    RunState,
    StartRun,
    TurnEnded,
    TurnStarted,
    apply,
    decision_ids_needed,
    due_decision_timeouts,
    due_notices,
    launch_payload,
    launchable,
    overdue_turns,
    quota_verdict,
)


class Run:
    """A tiny driver: applies events with fresh event ids and a controllable clock."""

    def __init__(self, state: RunState, now: float = 1000.0) -> None:
        self.state = state
        self.now = now
        self.n = 0
        self.outcomes: list[Outcome] = []

    def eid(self) -> str:
        self.n += 1
        return f"e{self.n}"

    def do(self, event: Event) -> Outcome:
        step = apply(self.state, event, self.now)
        if isinstance(step.outcome, Refused | Duplicate):
            assert step.state is self.state  # refusals change nothing
        self.state = step.state
        self.outcomes.append(step.outcome)
        return step.outcome

    def ok(self, event: Event) -> Outcome:
        got = self.do(event)
        assert isinstance(got, Applied), got
        return got

    def role(self, name: str) -> Any:
        r = self.state.role(name)
        assert r is not None
        return r

    # common sequences
    def start(self) -> Run:
        self.ok(StartRun(self.eid()))
        return self

    def turn(self, name: str, decision: str, reply: str = "reply") -> None:
        self.ok(Launch(self.eid(), name))
        self.ok(TurnStarted(self.eid(), name, f"thr-{name}"))
        self.ok(TurnEnded(self.eid(), name, decision, reply))

    def deliver_all(self) -> None:
        for n in due_notices(self.state, self.now):
            self.ok(NotifyResult(self.eid(), n.event_id, "delivered"))


def two_step(**extra: Any) -> Run:
    return Run(run_of([role_dict("reader"), role_dict("fixer", ["reader"])], **extra)).start()


# ---- PLN-5 -------------------------------------------------------------------------


@pytest.mark.rule("PLN-5")
def test_dependent_role_waits_for_accepted_conclusion_and_receives_it() -> None:
    r = two_step()
    assert launchable(r.state) == ("reader",)
    refused = r.do(Launch(r.eid(), "fixer"))
    assert isinstance(refused, Refused)
    assert (
        refused.reason.render()
        == "role 'fixer' waits for 'reader' to finish with an accepted conclusion"
    )
    r.turn("reader", "d1")
    assert launchable(r.state) == ()  # finished a turn, but no accepted conclusion yet
    r.ok(Finish(r.eid(), "reader", "the bug is in parse()", "d1"))
    assert launchable(r.state) == ("fixer",)
    r.ok(Launch(r.eid(), "fixer"))
    payload = launch_payload(r.state, "fixer")
    assert payload is not None and payload.turn == 1
    assert payload.instruction == "first instruction of fixer"
    assert payload.inputs == (("reader", "the bug is in parse()"),)
    assert (payload.cwd, payload.sandbox, payload.timeout_ms) == (
        "/work/project",
        "read-only",
        1_800_000,
    )
    r.ok(TurnStarted(r.eid(), "fixer"))
    r.ok(TurnEnded(r.eid(), "fixer", "d2"))
    r.ok(Dispatch(r.eid(), "fixer", "d2", "now run the tests"))
    r.ok(Launch(r.eid(), "fixer"))
    second = launch_payload(r.state, "fixer")
    assert second is not None and second.turn == 2 and second.inputs == ()
    assert second.instruction == "now run the tests"


@pytest.mark.rule("PLN-5", "PLN-10")
def test_launchable_respects_max_concurrent_and_host_load() -> None:
    workers = [role_dict(n) for n in "abcd"]
    r = Run(run_of(workers, max_concurrent=2)).start()
    assert launchable(r.state) == ("a", "b")
    assert launchable(r.state, host_busy=1) == ("a",)
    assert launchable(r.state, host_busy=5) == ()
    r.ok(Launch(r.eid(), "a"))
    r.ok(Launch(r.eid(), "b"))
    assert launchable(r.state) == ()
    refused = r.do(Launch(r.eid(), "c"))
    assert (
        isinstance(refused, Refused)
        and refused.reason.render() == "2 turns are live, the concurrency limit is 2"
    )


@pytest.mark.rule("PLN-5", "PLN-6")
def test_run_completes_when_every_role_accepted() -> None:
    r = two_step()
    r.turn("reader", "d1")
    r.ok(Finish(r.eid(), "reader", "found"))
    r.turn("fixer", "d2")
    r.ok(Finish(r.eid(), "fixer", "fixed", "d2"))
    assert r.state.status == "completed"
    assert [n.kind for n in r.state.outbox][-1] == "completed"
    assert isinstance(r.do(Pause(r.eid())), Refused)
    assert isinstance(r.do(Cancel(r.eid())), Refused)


# ---- PLN-6 -------------------------------------------------------------------------


@pytest.mark.rule("PLN-6")
def test_turn_limit_pauses_the_run_instead_of_launching() -> None:
    r = Run(run_of([role_dict("a")], maxTurns=2)).start()
    r.turn("a", "d1")
    r.ok(Dispatch(r.eid(), "a", "d1", "again"))
    r.turn("a", "d2")
    r.ok(Dispatch(r.eid(), "a", "d2", "third time"))
    got = r.ok(Launch(r.eid(), "a"))
    assert isinstance(got, Applied) and got.note is not None
    assert got.note.render() == "turn limit reached: 2 of 2 turns used"
    assert r.state.status == "paused" and r.state.pause_reason == "turn-limit"
    assert r.role("a").status == "queued" and r.role("a").pending_instruction == "third time"
    assert r.state.turns_used == 2
    assert r.state.alerts[-1].message.key == "plan.paused.turn_limit"


@pytest.mark.rule("PLN-6", "PLN-7")
def test_decision_retry_limit_pauses() -> None:
    r = two_step(
        supervision={"decisionTimeoutMs": 1000, "maxDecisionRetries": 1, "maxTotalReminders": 30}
    )
    r.turn("reader", "d1")
    assert r.role("reader").decision_deadline is None  # clock starts on delivery
    r.deliver_all()
    assert r.role("reader").decision_deadline == r.now + 1.0
    early = r.do(DecisionTimeout(r.eid(), "reader", "d1"))
    assert isinstance(early, Refused) and "has not elapsed" in early.reason.render()
    r.now += 1.0
    assert due_decision_timeouts(r.state, r.now) == (("reader", "d1"),)
    r.ok(DecisionTimeout(r.eid(), "reader", "d1"))  # reminder 1
    assert r.role("reader").decision_retries == 1 and r.state.total_reminders == 1
    assert [n.kind for n in r.state.outbox] == ["reminder"]  # replaced the delivered notice
    r.deliver_all()
    r.now += 1.0
    got = r.ok(DecisionTimeout(r.eid(), "reader", "d1"))
    assert r.state.status == "paused" and r.state.pause_reason == "decision-retries"
    assert isinstance(got, Applied) and got.note is not None
    assert (
        got.note.render()
        == "role 'reader' got no decision after 1 reminders (maxDecisionRetries 1)"
    )
    assert r.role("reader").status == "paused" and r.role("reader").decision_id is None


@pytest.mark.rule("PLN-6")
def test_zero_retries_pause_at_first_timeout() -> None:
    r = two_step(
        supervision={"decisionTimeoutMs": 1000, "maxDecisionRetries": 0, "maxTotalReminders": 30}
    )
    r.turn("reader", "d1")
    r.deliver_all()
    r.now += 5
    r.ok(DecisionTimeout(r.eid(), "reader", "d1"))
    assert r.state.pause_reason == "decision-retries" and r.state.total_reminders == 0


@pytest.mark.rule("PLN-6", "PLN-7")
def test_total_reminder_limit_pauses_and_survives_resume() -> None:
    sup = {"decisionTimeoutMs": 1000, "maxDecisionRetries": 5, "maxTotalReminders": 2}
    r = Run(run_of([role_dict("a"), role_dict("b")], supervision=sup)).start()
    r.turn("a", "da")
    r.turn("b", "db")
    r.deliver_all()
    r.now += 1
    r.ok(DecisionTimeout(r.eid(), "a", "da"))
    r.ok(DecisionTimeout(r.eid(), "b", "db"))
    assert r.state.total_reminders == 2
    r.deliver_all()
    r.now += 1
    r.ok(DecisionTimeout(r.eid(), "a", "da"))
    assert r.state.status == "paused" and r.state.pause_reason == "reminders"
    assert decision_ids_needed(r.state) == ("a", "b")
    r.ok(Resume(r.eid(), (("a", "da2"), ("b", "db2"))))
    assert r.state.total_reminders == 2  # not reset by resuming
    assert r.role("a").decision_retries == 0  # per decision: the new decision starts at 0
    r.deliver_all()
    r.now += 1
    r.ok(DecisionTimeout(r.eid(), "a", "da2"))
    assert r.state.status == "paused" and r.state.pause_reason == "reminders"


@pytest.mark.rule("PLN-6")
def test_restart_pauses_unfinished_turns_and_never_resends_them() -> None:
    r = Run(run_of([role_dict(n) for n in "abcd"], max_concurrent=3)).start()
    r.turn("d", "dd")  # awaiting a decision
    r.ok(Launch(r.eid(), "a"))  # starting: instruction maybe sent
    r.ok(Launch(r.eid(), "b"))
    r.ok(TurnStarted(r.eid(), "b"))  # running
    got = r.ok(HostRestarted(r.eid()))
    assert isinstance(got, Applied) and got.note is not None
    assert (
        got.note.render()
        == "the host restarted while turns were unfinished ('a', 'b'); they are not re-sent"
    )
    assert r.state.status == "paused" and r.state.pause_reason == "host-restart"
    for name in "ab":
        role = r.role(name)
        assert role.status == "paused" and role.inflight_instruction is None
        assert role.interrupted_instruction == f"first instruction of {name}"
        assert role.pending_instruction is None
    assert r.role("c").status == "queued"  # never sent: may still run once resumed
    assert r.role("d").status == "paused"
    # late app-server events about the dead turns are stale
    assert isinstance(r.do(TurnEnded(r.eid(), "b", "late")), Dropped)
    r.ok(Resume(r.eid(), (("a", "a2"), ("b", "b2"), ("d", "d2"))))
    assert launchable(r.state) == ("c",)  # a and b await a decision: nothing is re-sent
    assert {r.role(n).status for n in "abd"} == {"awaiting-decision"}
    assert launch_payload(r.state, "a") is None


@pytest.mark.rule("PLN-6")
def test_restart_without_live_turns_keeps_running() -> None:
    r = two_step()
    r.turn("reader", "d1")
    r.ok(HostRestarted(r.eid()))
    assert r.state.status == "running" and r.role("reader").decision_id == "d1"


@pytest.mark.rule("PLN-6")
def test_pause_stops_live_turns_then_they_end_paused() -> None:
    r = Run(run_of([role_dict("a"), role_dict("b"), role_dict("c")])).start()
    r.ok(Launch(r.eid(), "a"))
    r.ok(TurnStarted(r.eid(), "a"))
    r.ok(Launch(r.eid(), "b"))
    r.ok(Pause(r.eid()))
    assert [x.status for x in r.state.roles] == ["stopping", "stopping", "queued"]
    refused = r.do(Resume(r.eid(), ()))
    assert isinstance(refused, Refused) and "still stopping" in refused.reason.render()
    r.ok(TurnStarted(r.eid(), "b"))  # its start notice arrives late: still stopping
    assert r.role("b").status == "stopping"
    r.ok(TurnEnded(r.eid(), "a", "unused-1", "partial"))
    r.ok(TurnEnded(r.eid(), "b", "unused-2"))
    assert [x.status for x in r.state.roles] == ["paused", "paused", "queued"]
    assert r.role("a").last_reply == "partial"
    r.ok(Resume(r.eid(), (("a", "a1"), ("b", "b1"))))
    assert r.state.status == "running"


@pytest.mark.rule("PLN-6")
@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (lambda: Launch("x", "reader"), "the run is ready, not running"),
        (lambda: Pause("x"), "illegal transition of run: ready -> paused (event 'pause')"),
        (lambda: Resume("x", ()), "illegal transition of run: ready -> running (event 'resume')"),
        (lambda: Dispatch("x", "reader", "d", "go"), "the run is ready, not running"),
        (lambda: Launch("x", "ghost"), "the run is ready, not running"),
    ],
)
def test_events_refused_before_start(event: Any, expected: str) -> None:
    r = Run(run_of([role_dict("reader")]))
    got = r.do(event())
    assert isinstance(got, Refused) and got.reason.render() == expected


@pytest.mark.rule("PLN-6")
def test_illegal_role_transitions_refused_with_states_named() -> None:
    r = two_step()
    r.turn("reader", "d1")
    got = r.do(Launch(r.eid(), "reader"))
    assert isinstance(got, Refused)
    assert (
        got.reason.render()
        == "illegal transition of role 'reader': awaiting-decision -> starting (event 'launch')"
    )
    got = r.do(Launch(r.eid(), "ghost"))
    assert isinstance(got, Refused) and got.reason.render() == "no role named 'ghost' in this run"
    assert isinstance(r.do(TurnStarted(r.eid(), "fixer")), Dropped)  # queued: stale


@pytest.mark.rule("PLN-6")
@pytest.mark.parametrize("when", ["ready", "running", "paused"])
def test_cancel_from_every_non_terminal_state(when: str) -> None:
    r = Run(run_of([role_dict("a"), role_dict("b")]))
    if when != "ready":
        r.start()
        r.ok(Launch(r.eid(), "a"))
        r.turn("b", "db")
    if when == "paused":
        r.ok(Pause(r.eid()))
    r.ok(Cancel(r.eid()))
    assert r.state.status == "cancelled"
    assert all(n.kind not in ("decision", "reminder") for n in r.state.outbox)
    assert r.state.outbox[-1].kind == "cancelled"
    if when == "running":
        assert r.role("a").status == "stopping"  # its turn still ends later
        r.ok(TurnEnded(r.eid(), "a", "x"))
        assert r.role("a").status == "paused"
    assert isinstance(r.do(Cancel(r.eid())), Refused)
    assert isinstance(r.do(Launch(r.eid(), "b")), Refused)


@pytest.mark.rule("PLN-6")
def test_overdue_turns() -> None:
    r = Run(run_of([role_dict("a")], timeoutMs=60_000)).start()
    r.ok(Launch(r.eid(), "a"))
    assert overdue_turns(r.state, r.now + 59.9) == ()
    assert overdue_turns(r.state, r.now + 60) == ("a",)
    r.ok(TurnEnded(r.eid(), "a", "d1", None, "timed_out"))  # start notice lost: still accepted
    assert r.role("a").status == "awaiting-decision" and r.role("a").last_outcome == "timed_out"
    assert overdue_turns(r.state, r.now + 1000) == ()


# ---- PLN-7 -------------------------------------------------------------------------


@pytest.mark.rule("PLN-7")
def test_dispatch_only_with_current_decision_id() -> None:
    r = two_step()
    r.turn("reader", "d1")
    stale = r.do(Dispatch(r.eid(), "reader", "d0", "go"))
    assert isinstance(stale, Refused)
    assert (
        stale.reason.render()
        == "decision id 'd0' is not the current decision of role 'reader'; refused as a replay"
    )
    r.ok(Dispatch(r.eid(), "reader", "d1", "go on"))
    replay = r.do(Dispatch(r.eid(), "reader", "d1", "go on"))  # same decision, new event id
    assert (
        isinstance(replay, Refused)
        and "not awaiting a decision (it is queued)" in replay.reason.render()
    )
    r.ok(Launch(r.eid(), "reader"))
    r.ok(TurnStarted(r.eid(), "reader"))
    r.ok(TurnEnded(r.eid(), "reader", "d2"))
    old = r.do(Dispatch(r.eid(), "reader", "d1", "go on"))  # replay of the first decision
    assert isinstance(old, Refused) and "refused as a replay" in old.reason.render()
    assert isinstance(r.do(Finish(r.eid(), "reader", "done", "d1")), Refused)
    assert isinstance(r.do(Dispatch(r.eid(), "reader", "d2", "  ")), Refused)
    assert isinstance(r.do(Finish(r.eid(), "reader", " ", "d2")), Refused)
    r.ok(Finish(r.eid(), "reader", "done", "d2"))


@pytest.mark.rule("PLN-7")
def test_decision_ids_are_never_reused() -> None:
    r = Run(run_of([role_dict("a"), role_dict("b")])).start()
    r.turn("a", "d1")
    r.ok(Launch(r.eid(), "b"))
    r.ok(TurnStarted(r.eid(), "b"))
    again = r.do(TurnEnded(r.eid(), "b", "d1"))
    assert isinstance(again, Refused) and "was issued before" in again.reason.render()
    assert isinstance(r.do(TurnEnded(r.eid(), "b", " ")), Refused)
    r.ok(TurnEnded(r.eid(), "b", "d2"))


@pytest.mark.rule("PLN-7", "PLN-9")
def test_decision_events_of_a_paused_run_are_dropped() -> None:
    r = two_step()
    r.turn("reader", "d1")
    r.ok(Pause(r.eid()))
    for event in [
        Dispatch(r.eid(), "reader", "d1", "go"),
        Finish(r.eid(), "reader", "ok", "d1"),
        DecisionTimeout(r.eid(), "reader", "d1"),
    ]:
        got = r.do(event)
        assert (
            isinstance(got, Dropped)
            and got.reason.render() == "decision event dropped: the run is paused"
        )
        assert event.event_id in r.state.seen_events


@pytest.mark.rule("PLN-7")
def test_resume_issues_new_decision_ids() -> None:
    r = two_step()
    r.turn("reader", "d1")
    r.ok(Pause(r.eid()))
    for ids, fragment in [
        ((), "needs a new decision id for paused role 'reader'"),
        ((("reader", "d1"),), "was issued before"),
        ((("reader", "n1"), ("fixer", "n2")), "role 'fixer' is not paused"),
        ((("reader", "n1"), ("reader", "n2")), "more than one decision id"),
        ((("reader", ""),), "is empty"),
    ]:
        got = r.do(Resume(r.eid(), ids))
        assert isinstance(got, Refused) and fragment in got.reason.render(), (ids, got)
    r.ok(Resume(r.eid(), (("reader", "n1"),)))
    assert r.role("reader").status == "awaiting-decision" and r.role("reader").decision_id == "n1"
    notices = due_notices(r.state, r.now)  # the pause notice, then one for the new decision
    assert [(n.kind, n.role, n.decision_id) for n in notices] == [
        ("paused", None, None),
        ("decision", "reader", "n1"),
    ]
    assert isinstance(r.do(Dispatch(r.eid(), "reader", "d1", "go")), Refused)  # old id: replay
    r.ok(Dispatch(r.eid(), "reader", "n1", "go"))


# ---- PLN-8 -------------------------------------------------------------------------

W = QuotaWindow


@pytest.mark.rule("PLN-8")
@pytest.mark.parametrize(
    ("policy", "windows", "expected"),
    [
        (QuotaPolicy(None), (W(0.0, "codex", 300),), QuotaOk()),
        (QuotaPolicy(25), (W(30, "codex", 300), W(26, "codex", 10080)), QuotaOk()),
        (
            QuotaPolicy(25),
            (W(30, "codex", 300), W(25, "codex", 10080)),
            QuotaStop(W(25, "codex", 10080), 25),
        ),
        (
            QuotaPolicy(25),
            (W(10, "codex", 300), W(5, "other", 10080)),
            QuotaStop(W(5, "other", 10080), 25),
        ),
        (QuotaPolicy(25, "codex"), (W(5, "other", 300), W(30, "codex", 300)), QuotaOk()),
        (
            QuotaPolicy(25, "codex"),
            (W(5, "other", 300), W(20, "codex", 300)),
            QuotaStop(W(20, "codex", 300), 25),
        ),
        (QuotaPolicy(25, None, 10080), (W(5, "codex", 300), W(40, "codex", 10080)), QuotaOk()),
        (
            QuotaPolicy(25, None, 10080),
            (W(40, "codex", 300), W(0, "codex", 10080)),
            QuotaStop(W(0, "codex", 10080), 25),
        ),
        (
            QuotaPolicy(25, "codex", 10080),
            (W(1, "codex", 300), W(1, "x", 10080), W(99, "codex", 10080)),
            QuotaOk(),
        ),
        (QuotaPolicy(0), (W(0, "codex", 300),), QuotaStop(W(0, "codex", 300), 0)),
        (QuotaPolicy(25), (), QuotaUnobserved(None, None)),
        (QuotaPolicy(25, "codex", 10080), (W(1, "codex", 300),), QuotaUnobserved("codex", 10080)),
        (QuotaPolicy(25), (W(float("nan"), "codex", 300),), QuotaUnobserved(None, None)),
    ],
)
def test_quota_verdict(
    policy: QuotaPolicy, windows: tuple[QuotaWindow, ...], expected: object
) -> None:
    assert quota_verdict(policy, windows) == expected


@pytest.mark.rule("PLN-8")
def test_quota_stop_pauses_the_run() -> None:
    r = two_step()
    r.ok(Launch(r.eid(), "reader"))
    r.ok(QuotaObserved(r.eid(), (W(60, "codex", 10080),)))
    assert r.state.status == "running"
    got = r.ok(QuotaObserved(r.eid(), (W(24.5, "codex", 10080), W(90, "codex", 300))))
    assert r.state.status == "paused" and r.state.pause_reason == "quota"
    assert isinstance(got, Applied) and got.note is not None
    assert (
        got.note.render()
        == "quota window (bucket codex, 10080 minutes) has 24.5% left, at or below the stop threshold 25%"
    )
    assert r.role("reader").status == "stopping"


@pytest.mark.rule("PLN-8")
def test_unobserved_quota_window_alerts_once() -> None:
    r = two_step()
    for _ in range(3):
        r.ok(QuotaObserved(r.eid(), (W(5, "other", 300),)))
    alerts = [a for a in r.state.alerts if a.message.key == "plan.quota_unobserved"]
    assert len(alerts) == 1 and r.state.status == "running"
    r.ok(QuotaObserved(r.eid(), (W(50, "codex", 10080),)))
    assert not r.state.quota_unobserved


# ---- PLN-9 -------------------------------------------------------------------------


@pytest.mark.rule("PLN-9")
def test_notification_retry_5s_then_10s_then_pause() -> None:
    r = two_step()
    r.turn("reader", "d1")
    (notice,) = due_notices(r.state, r.now)
    t0 = r.now
    r.ok(NotifyResult(r.eid(), notice.event_id, "failed", "boom"))
    assert due_notices(r.state, t0 + 4.9) == ()
    assert [n.event_id for n in due_notices(r.state, t0 + 5)] == [notice.event_id]
    r.now = t0 + 5
    r.ok(NotifyResult(r.eid(), notice.event_id, "failed", "boom"))
    assert due_notices(r.state, r.now + 9.9) == ()
    assert len(due_notices(r.state, r.now + 10)) == 1
    r.now += 10
    got = r.ok(NotifyResult(r.eid(), notice.event_id, "failed", "connection refused"))
    assert r.state.status == "paused" and r.state.pause_reason == "notify-failures"
    assert isinstance(got, Applied) and got.note is not None
    assert (
        got.note.render()
        == "notification delivery failed 3 times in a row (last error: connection refused); delivery is suspended"
    )
    assert due_notices(r.state, r.now + 3600) == ()  # suspended until the host is back
    assert [n.kind for n in r.state.outbox] == ["paused"]  # the stale decision notice was dropped
    r.ok(HostOnline(r.eid()))
    assert [n.kind for n in due_notices(r.state, r.now)] == ["paused"]
    assert r.state.notify_failures == 0


@pytest.mark.rule("PLN-9")
def test_success_resets_consecutive_failures() -> None:
    r = Run(run_of([role_dict("a"), role_dict("b")])).start()
    r.turn("a", "da")
    r.turn("b", "db")
    na, nb = due_notices(r.state, r.now)
    r.ok(NotifyResult(r.eid(), na.event_id, "failed"))
    r.ok(NotifyResult(r.eid(), nb.event_id, "failed"))
    assert r.state.notify_failures == 2
    r.ok(NotifyResult(r.eid(), nb.event_id, "delivered"))
    assert r.state.notify_failures == 0
    r.now += 5
    r.ok(NotifyResult(r.eid(), na.event_id, "failed"))
    assert r.state.status == "running" and r.state.notify_failures == 1


@pytest.mark.rule("PLN-9")
def test_offline_host_is_not_a_failure_and_event_stays_queued() -> None:
    r = two_step()
    r.turn("reader", "d1")
    (notice,) = due_notices(r.state, r.now)
    for _ in range(10):
        r.ok(NotifyResult(r.eid(), notice.event_id, "offline"))
    assert r.state.status == "running" and r.state.notify_failures == 0
    assert due_notices(r.state, r.now + 10**6) == ()  # waits for the host
    assert [n.event_id for n in r.state.outbox] == [notice.event_id]
    assert due_decision_timeouts(r.state, r.now + 10**6) == ()  # no reminders burnt offline
    r.ok(HostOnline(r.eid()))
    assert [n.event_id for n in due_notices(r.state, r.now)] == [notice.event_id]


@pytest.mark.rule("PLN-9")
def test_duplicate_event_ids_dropped() -> None:
    r = two_step()
    r.ok(Launch("launch-1", "reader"))
    before = r.state
    again = r.do(Launch("launch-1", "reader"))
    assert again == Duplicate("launch-1") and r.state is before
    assert r.state.turns_used == 1
    r.ok(TurnStarted("ts-1", "reader"))
    r.ok(TurnEnded("te-1", "reader", "d1"))
    r.ok(Dispatch("dp-1", "reader", "d1", "go"))
    assert r.do(Dispatch("dp-1", "reader", "d1", "go")) == Duplicate("dp-1")
    assert isinstance(r.do(Launch(" ", "reader")), Refused)


@pytest.mark.rule("PLN-9")
def test_one_pending_decision_notice_per_role_and_stale_ones_dropped() -> None:
    r = two_step(
        supervision={"decisionTimeoutMs": 1000, "maxDecisionRetries": 5, "maxTotalReminders": 30}
    )
    r.turn("reader", "d1")
    r.ok(NotifyResult(r.eid(), r.state.outbox[0].event_id, "offline"))
    r.ok(HostOnline(r.eid()))
    r.deliver_all()
    r.now += 1
    r.ok(DecisionTimeout(r.eid(), "reader", "d1"))
    r.ok(NotifyResult(r.eid(), r.state.outbox[0].event_id, "offline"))
    assert [n.kind for n in r.state.outbox] == ["reminder"]
    r.ok(Dispatch(r.eid(), "reader", "d1", "go"))  # the decision is made: notice is stale
    assert r.state.outbox == ()
    stale = r.do(DecisionTimeout(r.eid(), "reader", "d1"))
    assert isinstance(stale, Dropped) and stale.reason.render().startswith(
        "stale decision event dropped"
    )
    gone = r.do(NotifyResult(r.eid(), "r1:n99", "delivered"))
    assert isinstance(gone, Dropped) and "no longer in the outbox" in gone.reason.render()


@pytest.mark.rule("PLN-9")
def test_due_notices_never_yield_a_stale_decision() -> None:
    r = two_step()
    r.turn("reader", "d1")
    stale_state = attrs.evolve(
        r.state,
        roles=tuple(
            attrs.evolve(x, decision_id="other") if x.name == "reader" else x for x in r.state.roles
        ),
    )
    assert due_notices(stale_state, r.now) == ()
    assert len(due_notices(r.state, r.now)) == 1


# ---- a launch that never started a turn (issue 26 item 9) -----------------------------


@pytest.mark.rule("PLN-6", "DOT-3")
@pytest.mark.parametrize("halted_first", [False, True])
def test_a_launch_that_failed_before_the_turn_gives_the_turn_back(halted_first: bool) -> None:
    from markertools.plans import Halt
    from markertools.text.msg import msg

    run = two_step()
    run.ok(Launch(run.eid(), "reader"))
    assert run.state.turns_used == 1 and run.role("reader").turns == 1
    if halted_first:  # the supervisor pauses the run, then reports the failed turn
        detail = msg("plan.paused.launch_failed", role="reader", detail="boom")
        run.ok(Halt(run.eid(), "launch-failed", detail, "reader"))
    run.ok(TurnEnded(run.eid(), "reader", "d-1", None, "failed", started=False))
    assert run.state.turns_used == 0  # it never ran: maxTurns counts only turns that ran
    assert run.role("reader").turns == 0
    assert run.role("reader").last_outcome == "failed"


@pytest.mark.rule("PLN-6")
def test_a_turn_that_ran_and_failed_still_counts() -> None:
    run = two_step()
    run.ok(Launch(run.eid(), "reader"))
    run.ok(TurnStarted(run.eid(), "reader", "thr"))
    run.ok(TurnEnded(run.eid(), "reader", "d-1", None, "failed"))
    assert run.state.turns_used == 1 and run.role("reader").turns == 1
