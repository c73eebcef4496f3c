"""Property tests of `apply` over random event sequences: whatever arrives, in any
order, with replays and bogus ids, the run keeps its invariants (PLN-5..9)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.strategies.plans import role_dict, run_of

from markertools.plans import (
    ROLE_MACHINE,
    RUN_MACHINE,
    Applied,
    Cancel,
    DecisionTimeout,
    Dispatch,
    Duplicate,
    Event,
    Finish,
    HostOnline,
    HostRestarted,
    Launch,
    Moved,
    NotifyResult,
    Pause,
    QuotaObserved,
    QuotaWindow,
    Refused,
    Resume,
    RunState,
    StartRun,
    TurnEnded,
    TurnStarted,
    apply,
    decision_ids_needed,
    event_from_json,
    event_to_json,
    launchable,
    run_from_json,
    run_to_json,
    transition,
)
from markertools.plans._machines import LIVE_ROLE_STATES
from markertools.plans._notify import is_current

ROLES = ["a", "b", "c"]
SUP = {"decisionTimeoutMs": 1000, "maxDecisionRetries": 1, "maxTotalReminders": 3}


def reachable(machine: Any, frm: str, to: str, steps: int = 2) -> bool:
    frontier = {frm}
    for _ in range(steps):
        if to in frontier:
            return True
        frontier |= {
            got.to
            for s in frontier
            for e in machine.events
            if isinstance(got := transition(machine, s, e), Moved)
        }
    return to in frontier


def check_invariants(before: RunState, after: RunState, event: Event, outcome: Any) -> None:
    p = after.proposal
    for r in after.roles:
        assert (r.decision_id is not None) == (r.status == "awaiting-decision"), r
        assert (r.inflight_instruction is not None) == (r.status in LIVE_ROLE_STATES), r
        assert r.decision_retries <= p.supervision.max_decision_retries
        assert len(set(r.issued_decision_ids)) == len(r.issued_decision_ids)
        old = before.role(r.name)
        assert old is not None and reachable(ROLE_MACHINE, old.status, r.status), (
            old.status,
            r.status,
            event,
        )
        if r.status == "completed":
            assert r.conclusion
    assert after.turns_used <= p.max_turns
    assert after.total_reminders <= p.supervision.max_total_reminders
    assert sum(r.status in LIVE_ROLE_STATES for r in after.roles) <= after.max_concurrent
    assert reachable(RUN_MACHINE, before.status, after.status, 1)
    if after.status != "running":
        assert (
            all(r.status not in ("starting", "running") for r in after.roles)
            or after.status == "running"
        )
    if after.status == "ready":
        assert all(r.status == "queued" for r in after.roles)
    decision_notices = [n for n in after.outbox if n.kind in ("decision", "reminder")]
    assert all(is_current(after, n) for n in decision_notices)
    assert len({n.role for n in decision_notices}) == len(decision_notices)
    assert len({n.event_id for n in after.outbox}) == len(after.outbox)
    # PLN-7: an accepted dispatch/finish carried the current decision id of a role awaiting one
    if isinstance(event, Dispatch | Finish) and isinstance(outcome, Applied):
        old = before.role(event.role)
        assert before.status == "running" and old is not None and old.status == "awaiting-decision"
        assert event.decision_id in (None, old.decision_id)
        assert event.decision_id is not None or isinstance(event, Finish)
    if isinstance(outcome, Refused | Duplicate):
        assert after is before
    if isinstance(event, Launch) and isinstance(outcome, Applied) and after.status == "running":
        old = before.role(event.role)
        new = after.role(event.role)
        assert (
            old is not None
            and new is not None
            and new.inflight_instruction == old.pending_instruction
        )


def plausible(state: RunState, role_name: str, eid: str, n: int, choice: int) -> Event | None:
    """An event that fits the role's current state (so sequences get somewhere)."""
    role = state.role(role_name)
    assert role is not None
    if state.status == "ready":
        return StartRun(eid)
    if state.status == "paused" and not any(r.status == "stopping" for r in state.roles):
        return Resume(eid, tuple((x, f"r{n}-{x}") for x in decision_ids_needed(state)))
    if role.status == "queued":
        return Launch(eid, role_name)
    if role.status == "starting":
        return TurnStarted(eid, role_name, "thr")
    if role.status in ("running", "stopping"):
        return TurnEnded(eid, role_name, f"fresh-{n}", "reply")
    if role.status == "awaiting-decision" and role.decision_id is not None:
        if choice == 0:
            return Finish(eid, role_name, "accepted", role.decision_id)
        if choice == 1:
            return DecisionTimeout(eid, role_name, role.decision_id)
        notices = [x for x in state.outbox if x.role == role_name]
        if choice == 2 and notices:
            return NotifyResult(eid, notices[0].event_id, "delivered")
        return Dispatch(eid, role_name, role.decision_id, "next")
    return None


@st.composite
def events(draw: st.DrawFn, state: RunState, used_ids: list[str], counter: list[int]) -> Event:
    counter[0] += 1
    fresh = f"e{counter[0]}"
    eid = draw(st.sampled_from(used_ids)) if used_ids and draw(st.integers(0, 9)) == 0 else fresh
    role = draw(st.sampled_from([*ROLES, "ghost"]))
    if role != "ghost" and draw(st.integers(0, 9)) < 7:
        event = plausible(state, role, eid, counter[0], draw(st.integers(0, 4)))
        if event is not None:
            return event
    did = draw(
        st.sampled_from([f"d{i}" for i in range(8)] + [r.decision_id or "" for r in state.roles])
    )
    kind = draw(st.integers(0, 13))
    if kind == 0:
        return StartRun(eid)
    if kind == 1:
        return Launch(eid, draw(st.sampled_from([*launchable(state), *ROLES])))
    if kind == 2:
        return TurnStarted(eid, role, draw(st.none() | st.just("thr")))
    if kind == 3:
        return TurnEnded(
            eid,
            role,
            f"fresh-{counter[0]}" if draw(st.booleans()) else did,
            "reply",
            draw(st.sampled_from(["completed", "failed", "timed_out"])),
        )
    if kind == 4:
        return Dispatch(eid, role, did, draw(st.sampled_from(["next", " "])))
    if kind == 5:
        return Finish(
            eid, role, draw(st.sampled_from(["done", ""])), draw(st.none() | st.just(did))
        )
    if kind == 6:
        return DecisionTimeout(eid, role, did)
    if kind == 7:
        return QuotaObserved(
            eid, (QuotaWindow(draw(st.sampled_from([90.0, 50.0, 25.0, 3.0])), "codex", 10080),)
        )
    if kind == 8:
        return Pause(eid)
    if kind == 9:
        needed = decision_ids_needed(state)
        ids = tuple((n, f"r{counter[0]}-{n}") for n in needed)
        return Resume(eid, draw(st.sampled_from([ids, ids[:-1], (*ids, ("ghost", "x"))])))
    if kind == 10 and draw(st.integers(0, 5)) == 0:  # rare: a cancelled run refuses the rest
        return Cancel(eid)
    if kind == 11:
        notice = draw(st.sampled_from([n.event_id for n in state.outbox] or ["r1:n0"]))
        return NotifyResult(eid, notice, draw(st.sampled_from(["delivered", "failed", "offline"])))
    if kind == 12:
        return HostOnline(eid)
    return HostRestarted(eid)


@pytest.mark.rule("PLN-5", "PLN-6", "PLN-7", "PLN-8", "PLN-9")
@settings(max_examples=40)
@given(st.data(), st.integers(1, 3), st.integers(1, 6))
def test_random_event_sequences_keep_invariants(
    data: st.DataObject, max_concurrent: int, max_turns: int
) -> None:
    workers = [role_dict("a"), role_dict("b", ["a"]), role_dict("c")]
    state = run_of(workers, max_concurrent=max_concurrent, maxTurns=max_turns, supervision=SUP)
    now = 1000.0
    used: list[str] = []
    counter = [0]
    for _ in range(data.draw(st.integers(10, 80))):
        event = data.draw(events(state, used, counter))
        now += data.draw(st.sampled_from([0.0, 0.5, 1.0, 5.0, 10.0]))
        step = apply(state, event, now)
        check_invariants(state, step.state, event, step.outcome)
        if event.event_id in used and event.event_id in state.seen_events:
            assert isinstance(step.outcome, Duplicate)
        if not isinstance(step.outcome, Refused | Duplicate):
            used.append(event.event_id)
        assert event_from_json(json.loads(json.dumps(event_to_json(event)))) == event
        state = step.state
    assert run_from_json(json.loads(json.dumps(run_to_json(state)))) == state
