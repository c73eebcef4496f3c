# Owns: the run handlers for a role's work cycle (PLN-5..7): start the run, launch a
# queued role, turn started/ended, the main agent's dispatch and finish, and decision
# timeouts (reminders, retry and reminder limits).
#
# Invariants:
#   Rule 1: pure handlers `(state, event, now) -> (state, outcome)`; Refused answers
#           carry the unchanged state.
#   Rule 2: a launch beyond `maxTurns`, a timeout beyond `maxDecisionRetries` or
#           `maxTotalReminders` pauses the run instead (a limit of N allows N).
#   Rule 3: a turn's end issues the decision id it carries (fresh, never reused) and
#           queues one decision notice; the decision clock starts on its delivery.
from __future__ import annotations

import attrs

from markertools.plans import _notify
from markertools.plans._events import (
    Applied,
    DecisionTimeout,
    Dispatch,
    Dropped,
    Finish,
    Launch,
    Refused,
    StartRun,
    TurnEnded,
    TurnStarted,
)
from markertools.plans._fields import quote
from markertools.plans._machines import RUN_MACHINE, Illegal, transition
from markertools.plans._queries import live_turns
from markertools.plans._runops import (
    Result,
    decision_gate,
    fresh,
    lookup,
    moved,
    must,
    pause,
    put,
)
from markertools.plans._state import MAX_KNOWN_TURNS, RoleRun, RunState
from markertools.text.msg import msg


def start(state: RunState, ev: StartRun, now: float) -> Result:
    step = transition(RUN_MACHINE, state.status, "start")
    if isinstance(step, Illegal):
        return state, Refused(step.reason)
    return attrs.evolve(state, status="running"), Applied()


def launch(state: RunState, ev: Launch, now: float) -> Result:
    if state.status != "running":
        return state, Refused(msg("plan.run_not_running", status=state.status))
    role = lookup(state, ev.role)
    if isinstance(role, Refused):
        return state, role
    started = moved(role, "launch")
    if isinstance(started, Illegal):
        return state, Refused(started.reason)
    spec = state.proposal.role(role.name)
    done = {r.name for r in state.roles if r.status == "completed"}
    missing = [d for d in (spec.depends_on if spec else ()) if d not in done]
    if missing:
        return state, Refused(
            msg("plan.deps_unfinished", role=quote(role.name), dep=quote(missing[0]))
        )
    live = live_turns(state)
    if live >= state.max_concurrent:
        return state, Refused(msg("plan.concurrency", n=live, max=state.max_concurrent))
    limit = state.turn_limit
    if state.turns_used >= limit:
        detail = msg("plan.paused.turn_limit", used=state.turns_used, max=limit)
        return pause(state, "turn-limit", detail, now), Applied(detail)
    started = attrs.evolve(
        started,
        turns=role.turns + 1,
        inflight_instruction=role.pending_instruction,
        pending_instruction=None,
        last_instruction=role.pending_instruction,
        turn_started_at=now,
    )
    return attrs.evolve(put(state, started), turns_used=state.turns_used + 1), Applied()


def turn_started(state: RunState, ev: TurnStarted, now: float) -> Result:
    role = lookup(state, ev.role)
    if isinstance(role, Refused):
        return state, role
    thread = ev.thread_id or role.thread_id
    known = role.known_turns
    if ev.turn_id is not None and ev.turn_id not in known:
        known = (*known, ev.turn_id)[-MAX_KNOWN_TURNS:]
    if role.status == "stopping":  # the pause came while it was starting
        moved = attrs.evolve(role, thread_id=thread, known_turns=known, thread_gone=False)
        return put(state, moved), Applied()
    if role.status != "starting":
        return state, Dropped(msg("plan.stale_turn", role=quote(role.name), status=role.status))
    started = attrs.evolve(
        must(role, "started"), thread_id=thread, known_turns=known, thread_gone=False
    )
    return put(state, started), Applied()


def ended(role: RoleRun, ev: TurnEnded) -> RoleRun:
    return attrs.evolve(
        role,
        inflight_instruction=None,
        turn_started_at=None,
        last_reply=ev.reply,
        last_outcome=ev.outcome,
    )


def _give_back(state: RunState, role: RoleRun, ev: TurnEnded) -> tuple[RunState, RoleRun]:
    """A turn that never started does not count (issue 26)."""
    if ev.started or role.status not in ("starting", "stopping") or role.turns < 1:
        return state, role
    back = attrs.evolve(state, turns_used=max(0, state.turns_used - 1))
    return back, attrs.evolve(role, turns=role.turns - 1)


def turn_ended(state: RunState, ev: TurnEnded, now: float) -> Result:
    role = lookup(state, ev.role)
    if isinstance(role, Refused):
        return state, role
    state, role = _give_back(state, role, ev)
    if role.status == "stopping":
        return put(state, ended(must(role, "stopped"), ev)), Applied()
    if role.status not in ("running", "starting"):  # starting: the start notice was lost
        return state, Dropped(msg("plan.stale_turn", role=quote(role.name), status=role.status))
    bad = fresh(state, [ev.decision_id])
    if bad is not None:
        return state, bad
    events = ("started", "turn-ended") if role.status == "starting" else ("turn-ended",)
    role = attrs.evolve(
        ended(must(role, *events), ev),
        decision_id=ev.decision_id,
        decision_deadline=None,
        decision_retries=0,
        issued_decision_ids=(*role.issued_decision_ids, ev.decision_id),
    )
    state = _notify.enqueue(
        put(state, role), "decision", now, role=role.name, decision_id=ev.decision_id
    )
    return state, Applied()


def dispatch(state: RunState, ev: Dispatch, now: float) -> Result:
    role = decision_gate(state, ev.role, ev.decision_id)
    if not isinstance(role, RoleRun):
        return state, role
    if not ev.instruction.strip():
        return state, Refused(msg("plan.blank_instruction"))
    queued = attrs.evolve(
        must(role, "dispatch"),
        pending_instruction=ev.instruction,
        decision_id=None,
        decision_deadline=None,
    )
    return _notify.drop_role_notices(put(state, queued), role.name), Applied()


def finish(state: RunState, ev: Finish, now: float) -> Result:
    role = decision_gate(state, ev.role, ev.decision_id)
    if not isinstance(role, RoleRun):
        return state, role
    if not ev.conclusion.strip():
        return state, Refused(msg("plan.blank_conclusion"))
    done = attrs.evolve(
        must(role, "finish"), conclusion=ev.conclusion, decision_id=None, decision_deadline=None
    )
    state = _notify.drop_role_notices(put(state, done), role.name)
    if all(r.status == "completed" for r in state.roles):
        state = attrs.evolve(state, status="completed")
        state = _notify.enqueue(state, "completed", now)
    return state, Applied()


def timeout(state: RunState, ev: DecisionTimeout, now: float) -> Result:
    if state.status == "paused":
        return state, Dropped(msg("plan.drop_paused"))
    if state.status != "running":
        return state, Dropped(msg("plan.run_not_running", status=state.status))
    role = lookup(state, ev.role)
    if isinstance(role, Refused):
        return state, role
    if role.status != "awaiting-decision" or role.decision_id != ev.decision_id:
        return state, Dropped(
            msg("plan.stale_decision", got=quote(ev.decision_id), role=quote(role.name))
        )
    if role.decision_deadline is None or now < role.decision_deadline:
        return state, Refused(msg("plan.timeout_not_due", role=quote(role.name)))
    sup = state.proposal.supervision
    if role.decision_retries >= sup.max_decision_retries:
        detail = msg(
            "plan.paused.decision_retries",
            role=quote(role.name),
            n=role.decision_retries,
            max=sup.max_decision_retries,
        )
        return pause(state, "decision-retries", detail, now), Applied(detail)
    if state.total_reminders >= sup.max_total_reminders:
        detail = msg("plan.paused.reminders", n=state.total_reminders, max=sup.max_total_reminders)
        return pause(state, "reminders", detail, now), Applied(detail)
    role = attrs.evolve(role, decision_retries=role.decision_retries + 1, decision_deadline=None)
    state = attrs.evolve(put(state, role), total_reminders=state.total_reminders + 1)
    return _notify.enqueue(
        state, "reminder", now, role=role.name, decision_id=role.decision_id
    ), Applied()
