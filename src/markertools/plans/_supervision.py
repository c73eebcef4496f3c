# Owns: `apply(state, event, now)`, the one entry point that advances an orchestration
# run (PLN-5..9): launches and turns, decisions guarded by decision ids, reminders and
# count limits, quota stops, pause / resume / cancel, notification results, and the
# recovery step a host applies after reloading a run.
#
# Invariants:
#   Rule 1: pure: the answer depends only on (state, event, now); ids and times come
#           in the event; nothing raises for a well-typed event.
#   Rule 2: every status change goes through the transition tables (`_machines.py`).
#   Rule 3: an event id seen before is a Duplicate and changes nothing; a Refused
#           event changes nothing (not even the seen ids); a Dropped one only
#           records its id.
#   Rule 4: reaching a count limit (turns, decision retries, reminders), a quota stop,
#           three consecutive notification failures and a restart with unfinished
#           turns pause the run; a restarted host never re-sends an instruction that
#           was unfinished when it stopped (it is kept as `interrupted_instruction`).
#   Rule 5: a dispatch/finish is accepted only with the role's current decision id
#           while it awaits a decision; decision ids are never reused; resuming
#           issues fresh ids and keeps `total_reminders` (PLN-7).
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import attrs

from markertools.plans import _control, _turns
from markertools.plans._events import (
    Budget,
    Cancel,
    DecisionTimeout,
    Dispatch,
    Duplicate,
    Event,
    Finish,
    Halt,
    HostOnline,
    HostRestarted,
    Launch,
    NotifyResult,
    Outcome,
    Pause,
    QuotaObserved,
    Refused,
    Resume,
    StartRun,
    ThreadSeen,
    Tune,
    TurnEnded,
    TurnStarted,
)
from markertools.plans._runops import Result
from markertools.plans._state import SEEN_WINDOW, RunState
from markertools.text.msg import msg


@attrs.frozen
class Step:
    """What `apply` returns: the new run state and the event's outcome."""

    state: RunState
    outcome: Outcome


def apply(state: RunState, event: Event, now: float) -> Step:
    """Advance `state` by `event` at time `now` (Rules 1-5)."""
    if not isinstance(event.event_id, str) or not event.event_id.strip():
        return Step(state, Refused(msg("plan.event_id_blank")))
    if event.event_id in state.seen_events:
        return Step(state, Duplicate(event.event_id))
    handler = _HANDLERS[type(event)]
    new, outcome = handler(state, event, now)
    if isinstance(outcome, Refused):
        return Step(state, outcome)
    seen = (*state.seen_events, event.event_id)[-SEEN_WINDOW:]
    return Step(attrs.evolve(new, seen_events=seen, updated_at=now), outcome)


_HANDLERS: Final[dict[type, Callable[[RunState, Any, float], Result]]] = {
    StartRun: _turns.start,
    Launch: _turns.launch,
    TurnStarted: _turns.turn_started,
    TurnEnded: _turns.turn_ended,
    Dispatch: _turns.dispatch,
    Finish: _turns.finish,
    DecisionTimeout: _turns.timeout,
    QuotaObserved: _control.quota,
    Pause: _control.pause_ev,
    Resume: _control.resume,
    Cancel: _control.cancel,
    NotifyResult: _control.notify_result,
    HostOnline: _control.host_online,
    HostRestarted: _control.host_restarted,
    Halt: _control.halt,
    Tune: _control.tune,
    Budget: _control.budget,
    ThreadSeen: _control.thread_seen,
}
