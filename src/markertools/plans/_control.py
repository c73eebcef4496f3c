# Owns: the run handlers for control and supervision (PLN-6, 8, 9): quota
# observations, pause / resume / cancel, notification delivery results, the host
# coming back online, and the recovery step after a host restart.
#
# Invariants:
#   Rule 1: pure handlers `(state, event, now) -> (state, outcome)`.
#   Rule 2: resuming needs a fresh decision id for exactly the paused roles, is
#           refused while a role is still stopping, and keeps `total_reminders`.
#   Rule 3: after a restart, every role whose turn was live is paused with its
#           instruction kept as `interrupted_instruction`; it is never re-sent.
#   Rule 4: a tune or a budget is refused by one check (`tune_refusal`,
#           `budget_refusal`), which the host also runs before it asks the user
#           (DOT-14): a value that will be refused is refused before anyone is asked.
from __future__ import annotations

import attrs

from markertools.plans import _notify
from markertools.plans._events import (
    Applied,
    Budget,
    Cancel,
    Dropped,
    Halt,
    HostOnline,
    HostRestarted,
    NotifyResult,
    Pause,
    QuotaObserved,
    Refused,
    Resume,
    ThreadSeen,
    Tune,
)
from markertools.plans._fields import first_control_character, quote
from markertools.plans._machines import LIVE_ROLE_STATES, RUN_MACHINE, Illegal, transition
from markertools.plans._model import EFFORTS, RANGES, SANDBOXES, PlanIssue
from markertools.plans._quota import QuotaStop, QuotaUnobserved, quota_verdict
from markertools.plans._runops import (
    ANY_DETAIL,
    Result,
    alert,
    fresh,
    must,
    or_any,
    pause,
    put,
    stop,
)
from markertools.plans._state import MAX_KNOWN_TURNS, RunState
from markertools.text.msg import msg


def quota(state: RunState, ev: QuotaObserved, now: float) -> Result:
    state = attrs.evolve(state, quota_windows=ev.windows)
    verdict = quota_verdict(state.proposal.quota, ev.windows)
    if isinstance(verdict, QuotaUnobserved):
        if not state.quota_unobserved:
            if verdict.bucket is None and verdict.window_minutes is None:
                note = msg("plan.quota_unobserved_any")  # any window would have done
            else:
                note = msg(
                    "plan.quota_unobserved",
                    bucket=or_any(verdict.bucket),
                    window=or_any(verdict.window_minutes),
                )
            state = alert(attrs.evolve(state, quota_unobserved=True), now, note)
        return state, Applied()
    state = attrs.evolve(state, quota_unobserved=False)
    if isinstance(verdict, QuotaStop) and state.status == "running":
        w = verdict.window
        detail = msg(
            "plan.paused.quota",
            bucket=or_any(w.bucket),
            window=or_any(w.window_minutes),
            left=w.left_percent,
            threshold=verdict.threshold,
        )
        return pause(state, "quota", detail, now), Applied(detail)
    return state, Applied()


def pause_ev(state: RunState, ev: Pause, now: float) -> Result:
    step = transition(RUN_MACHINE, state.status, "pause")
    if isinstance(step, Illegal):
        return state, Refused(step.reason)
    return pause(state, "user", msg("plan.paused.user"), now), Applied()


def resume(state: RunState, ev: Resume, now: float) -> Result:
    step = transition(RUN_MACHINE, state.status, "resume")
    if isinstance(step, Illegal):
        return state, Refused(step.reason)
    for r in state.roles:
        if r.status == "stopping":
            return state, Refused(msg("plan.resume_stopping", role=quote(r.name)))
    given = dict(ev.decision_ids)
    need = [r.name for r in state.roles if r.status == "paused"]
    for name in need:
        if name not in given:
            return state, Refused(msg("plan.resume_missing_id", role=quote(name)))
    for name, _ in ev.decision_ids:
        if name not in need:
            return state, Refused(msg("plan.resume_extra_id", role=quote(name)))
    if len(given) != len(ev.decision_ids):
        return state, Refused(msg("plan.resume_twice"))
    bad = fresh(state, [given[n] for n in need])
    if bad is not None:
        return state, bad
    state = attrs.evolve(state, status="running", pause_reason=None)
    state = _notify.wake(state, now)
    for name in need:
        role = state.role(name)
        assert role is not None
        d = given[name]
        role = attrs.evolve(
            must(role, "resume"),
            decision_id=d,
            decision_deadline=None,
            decision_retries=0,
            issued_decision_ids=(*role.issued_decision_ids, d),
        )
        state = _notify.enqueue(put(state, role), "decision", now, role=name, decision_id=d)
    return state, Applied()


def cancel(state: RunState, ev: Cancel, now: float) -> Result:
    step = transition(RUN_MACHINE, state.status, "cancel")
    if isinstance(step, Illegal):
        return state, Refused(step.reason)
    state = attrs.evolve(state, status="cancelled", roles=tuple(stop(r) for r in state.roles))
    state = _notify.drop_stale(state)
    return _notify.enqueue(state, "cancelled", now), Applied()


def notify_result(state: RunState, ev: NotifyResult, now: float) -> Result:
    notice = next((n for n in state.outbox if n.event_id == ev.notice_id), None)
    if notice is None:
        return state, Dropped(msg("plan.notice_gone", notice=quote(ev.notice_id)))
    if ev.result == "delivered":
        state = _notify.delivered(state, notice)
        role = state.role(notice.role or "")
        if _notify.is_current(state, notice) and role is not None:
            deadline = now + state.proposal.supervision.decision_timeout_ms / 1000.0
            state = put(state, attrs.evolve(role, decision_deadline=deadline))
        return state, Applied()
    if ev.result == "offline":
        return _notify.offline(state, notice), Applied()
    state, exhausted = _notify.failed(state, notice, now)
    if not exhausted:
        return state, Applied()
    detail = msg("plan.paused.notify", n=state.notify_failures, error=ev.error or ANY_DETAIL)
    return _notify.suspend(pause(state, "notify-failures", detail, now)), Applied(detail)


def host_online(state: RunState, ev: HostOnline, now: float) -> Result:
    return _notify.wake(state, now), Applied()


def host_restarted(state: RunState, ev: HostRestarted, now: float) -> Result:
    live = [r for r in state.roles if r.status in LIVE_ROLE_STATES]
    if not live:
        return state, Applied()
    for r in live:
        stopped = must(r, "stopped") if r.status == "stopping" else must(r, "stop", "stopped")
        state = put(
            state,
            attrs.evolve(
                stopped,
                interrupted_instruction=r.inflight_instruction,
                inflight_instruction=None,
                turn_started_at=None,
            ),
        )
    detail = msg("plan.paused.host_restart", roles=tuple(quote(r.name) for r in live))
    return pause(state, "host-restart", detail, now), Applied(detail)


def halt(state: RunState, ev: Halt, now: float) -> Result:
    """DOT-3/4/5/7/12: pause the run with the host's alert. On a run that is not
    running (already paused, or finished) only the alert is recorded."""
    role = state.role(ev.role) if ev.role is not None else None
    if ev.role is not None and role is None:
        return state, Refused(msg("plan.no_such_role", name=quote(ev.role)))
    if ev.kind == "thread-gone" and role is not None:
        state = put(state, attrs.evolve(role, thread_gone=True, thread_id=None))
    return pause(state, ev.kind, ev.detail, now), Applied(ev.detail)


def tune_refusal(state: RunState, ev: Tune) -> PlanIssue | None:
    """Why this tune would be refused (Rule 4), at the dots_tune argument it concerns
    (`runId`, `worker`, `changes.<field>`), or None. A model outside allowedModels is
    refused unless `ev.allow_models` adds it (the user confirmed it)."""
    if state.status in ("completed", "cancelled"):
        return PlanIssue("runId", msg("plan.run_not_running", status=state.status))
    role = state.role(ev.role)
    if role is None:
        return PlanIssue("worker", msg("plan.no_such_role", name=quote(ev.role)))
    if role.status == "completed":
        return PlanIssue("worker", msg("plan.tune_finished_role", role=quote(ev.role)))
    at = first_control_character(ev.model) if ev.model is not None else None
    if ev.model is not None and at is not None:
        char = f"U+{ord(ev.model[at]):04X}"
        return PlanIssue(
            "changes.model", msg("plan.tune_control", field="model", char=char, index=at + 1)
        )
    for field, value, choices in (
        ("effort", ev.effort, EFFORTS),
        ("sandbox", ev.sandbox, SANDBOXES),
    ):
        if value is not None and value not in choices:
            allowed = tuple(quote(c) for c in choices)
            return PlanIssue(
                f"changes.{field}",
                msg("plan.tune_bad", field=field, allowed=allowed, value=quote(value)),
            )
    low, high = RANGES["timeoutMs"]
    if ev.timeout_ms is not None and not low <= ev.timeout_ms <= (high or ev.timeout_ms):
        return PlanIssue(
            "changes.timeoutMs",
            msg("plan.tune_range", field="timeoutMs", lo=low, hi=high, value=ev.timeout_ms),
        )
    spec = state.proposal.role(ev.role)
    planned = spec.model if spec is not None else None
    if (
        ev.model is not None
        and ev.model != planned
        and ev.model not in (*state.models_allowed, *ev.allow_models)
    ):
        return PlanIssue("changes.model", msg("plan.tune_model_not_allowed", model=quote(ev.model)))
    return None


def tune(state: RunState, ev: Tune, now: float) -> Result:
    """dots_tune (DOT-13): overrides for the role's next turns. The host asked the
    user first where the change widens anything (DOT-14); here it is only checked."""
    refusal = tune_refusal(state, ev)
    if refusal is not None:
        return state, Refused(refusal.message)
    role = state.role(ev.role)
    assert role is not None  # tune_refusal checked it
    allowed = (
        *state.allowed_models,
        *(m for m in ev.allow_models if m not in state.models_allowed),
    )
    tuned = attrs.evolve(
        role,
        model=ev.model if ev.model is not None else role.model,
        effort=ev.effort if ev.effort is not None else role.effort,
        timeout_ms=ev.timeout_ms if ev.timeout_ms is not None else role.timeout_ms,
        sandbox=ev.sandbox if ev.sandbox is not None else role.sandbox,
    )
    return attrs.evolve(put(state, tuned), allowed_models=allowed), Applied()


def budget_refusal(state: RunState, max_turns: int) -> PlanIssue | None:
    """Why a new turn limit would be refused (Rule 4): a finished run, a value outside
    PLN-1's maxTurns range, or below the turns already used; None when it is fine."""
    if state.status in ("completed", "cancelled"):
        return PlanIssue("runId", msg("plan.run_not_running", status=state.status))
    low, high = RANGES["maxTurns"]
    if not low <= max_turns <= (high or max_turns):
        return PlanIssue("budget", msg("plan.budget_range", lo=low, hi=high or 0, value=max_turns))
    if max_turns < state.turns_used:
        return PlanIssue(
            "budget",
            msg("plan.budget_bad", value=max_turns, used=state.turns_used, max=high or 0),
        )
    return None


def budget(state: RunState, ev: Budget, now: float) -> Result:
    """dots_control budget: a new turn limit within PLN-1's range, never below the
    turns already used."""
    refusal = budget_refusal(state, ev.max_turns)
    if refusal is not None:
        return state, Refused(refusal.message)
    return attrs.evolve(state, max_turns=ev.max_turns), Applied()


def thread_seen(state: RunState, ev: ThreadSeen, now: float) -> Result:
    """DOT-12: the turn ids a role's thread held when the host read it; they are the
    turns the host knows (later a turn outside them is an external turn)."""
    role = state.role(ev.role)
    if role is None:
        return state, Refused(msg("plan.no_such_role", name=quote(ev.role)))
    known = (*role.known_turns, *(t for t in ev.turn_ids if t not in role.known_turns))
    return put(state, attrs.evolve(role, known_turns=known[-MAX_KNOWN_TURNS:])), Applied()
