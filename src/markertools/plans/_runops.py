# Owns: the small state operations every run handler shares: replacing a role,
# recording an alert, moving a role through the role table, stopping roles for a
# pause/cancel, pausing the run, the decision-id gate (PLN-7/9) and the fresh-id check.
#
# Invariants:
#   Rule 1: pure; every status change goes through `_machines.transition`.
#   Rule 2: `pause` stops live turns (they end in `stopping` -> `paused`), pauses roles
#           awaiting a decision at once (their decision id is void), drops decision
#           notices and queues one `paused` notice; on a run that is not running it
#           only records an alert.
#   Rule 3: decision ids are never reused within a run (`fresh`).
from __future__ import annotations

from typing import Final

import attrs

from markertools.plans import _notify
from markertools.plans._events import Dropped, Outcome, Refused
from markertools.plans._fields import quote
from markertools.plans._machines import ROLE_MACHINE, RUN_MACHINE, Illegal, transition
from markertools.plans._state import MAX_ALERTS, Alert, PauseReason, RoleRun, RunState
from markertools.text.msg import Msg, msg

Result = tuple[RunState, Outcome]

ANY_DETAIL: Final[Msg] = msg("plan.no_detail")


def or_any(value: str | int | None) -> str | int | Msg:
    return msg("plan.any") if value is None else value


def who(name: str) -> Msg:
    return msg("plan.subject_role", name=quote(name))


def put(state: RunState, role: RoleRun) -> RunState:
    return attrs.evolve(state, roles=tuple(role if r.name == role.name else r for r in state.roles))


def alert(state: RunState, now: float, message: Msg) -> RunState:
    return attrs.evolve(state, alerts=(*state.alerts, Alert(now, message))[-MAX_ALERTS:])


def moved(role: RoleRun, event: str) -> RoleRun | Illegal:
    step = transition(ROLE_MACHINE, role.status, event, who(role.name))
    if isinstance(step, Illegal):
        return step
    return attrs.evolve(role, status=step.to)  # type: ignore[arg-type]


def must(role: RoleRun, *events: str) -> RoleRun:
    """Apply legal-by-construction role events in order (asserts Rule 2)."""
    for event in events:
        got = moved(role, event)
        assert not isinstance(got, Illegal), got.reason
        role = got
    return role


def stop(role: RoleRun) -> RoleRun:
    """Stop a role for a pause/cancel: live turns go to `stopping` (they end later);
    a role awaiting a decision has no turn to wait for and is `paused` at once."""
    if role.status in ("starting", "running"):
        return must(role, "stop")
    if role.status == "awaiting-decision":
        paused = must(role, "stop", "stopped")
        return attrs.evolve(paused, decision_id=None, decision_deadline=None)
    return role


def pause(state: RunState, reason: PauseReason, detail: Msg, now: float) -> RunState:
    step = transition(RUN_MACHINE, state.status, "pause")
    if isinstance(step, Illegal):  # already paused or terminal: just record it
        return alert(state, now, detail)
    state = attrs.evolve(
        state,
        status="paused",
        pause_reason=reason,
        roles=tuple(stop(r) for r in state.roles),
    )
    state = _notify.drop_stale(state)
    state = _notify.enqueue(state, "paused", now, detail=detail)
    return alert(state, now, detail)


def lookup(state: RunState, name: str) -> RoleRun | Refused:
    role = state.role(name)
    return role if role is not None else Refused(msg("plan.no_such_role", name=quote(name)))


def decision_gate(state: RunState, name: str, decision_id: str | None) -> RoleRun | Outcome:
    """PLN-7/PLN-9 gate shared by dispatch and finish."""
    if state.status == "paused":
        return Dropped(msg("plan.drop_paused"))
    if state.status != "running":
        return Refused(msg("plan.run_not_running", status=state.status))
    role = lookup(state, name)
    if isinstance(role, Refused):
        return role
    if role.status != "awaiting-decision":
        return Refused(msg("plan.not_awaiting", role=quote(name), status=role.status))
    if decision_id is not None and decision_id != role.decision_id:
        return Refused(msg("plan.decision_replay", got=quote(decision_id), role=quote(name)))
    return role


def fresh(state: RunState, ids: list[str]) -> Refused | None:
    used = {d for r in state.roles for d in r.issued_decision_ids}
    seen: set[str] = set()
    for d in ids:
        if not d.strip() or d in used or d in seen:
            return Refused(msg("plan.decision_not_fresh", got=quote(d)))
        seen.add(d)
    return None
