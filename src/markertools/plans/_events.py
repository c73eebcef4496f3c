# Owns: the inputs of an orchestration run (every one carries an `event_id` used for
# de-duplication, PLN-9) and the outcomes `apply` answers with. Decision ids and
# thread ids arrive inside events: the core never invents an id or reads a clock.
#
# Invariants:
#   Rule 1: events are plain frozen values that round-trip through JSON (the store's
#           event log) with their `type` tag (`_codec.py`).
#   Rule 2: an outcome is one of Applied / Duplicate / Dropped / Refused; only Applied
#           and Dropped change the state (Dropped only records the event id).
from __future__ import annotations

from typing import Literal

import attrs

from markertools.plans._quota import QuotaWindow
from markertools.text.msg import Msg

TurnOutcome = Literal["completed", "failed", "interrupted", "timed_out"]
NotifyOutcome = Literal["delivered", "failed", "offline"]


@attrs.frozen
class StartRun:
    """Event: start the confirmed run."""

    event_id: str


@attrs.frozen
class Launch:
    """The host is about to send a queued role's pending instruction (PLN-5, PLN-10)."""

    event_id: str
    role: str


@attrs.frozen
class TurnStarted:
    """Event: a role's turn started on the backend (thread and turn ids when known)."""

    event_id: str
    role: str
    thread_id: str | None = None
    turn_id: str | None = None  # the backend's id of the turn (DOT-12: a turn we started)


@attrs.frozen
class TurnEnded:
    """A role's turn ended; `decision_id` is the fresh id of the decision it awaits.
    `started` False: the launch failed before Codex started the turn, so it does not
    count against `maxTurns` (the turn it was going to be is given back)."""

    event_id: str
    role: str
    decision_id: str
    reply: str | None = None
    outcome: TurnOutcome = "completed"
    started: bool = True


@attrs.frozen
class Dispatch:
    """The main agent's next instruction for a role (dots_dispatch, PLN-7)."""

    event_id: str
    role: str
    decision_id: str
    instruction: str


@attrs.frozen
class Finish:
    """The main agent accepts a role's result (dots_finish, PLN-5)."""

    event_id: str
    role: str
    conclusion: str
    decision_id: str | None = None


@attrs.frozen
class DecisionTimeout:
    """Event: a pending decision of `role` waited too long (a reminder is due)."""

    event_id: str
    role: str
    decision_id: str


@attrs.frozen
class QuotaObserved:
    """Event: the backend's rate-limit windows as last observed."""

    event_id: str
    windows: tuple[QuotaWindow, ...] = ()


@attrs.frozen
class Pause:
    """Event: pause the run (live turns end first; nothing new starts)."""

    event_id: str


@attrs.frozen
class Resume:
    """`decision_ids`: a fresh decision id for every paused role (PLN-7)."""

    event_id: str
    decision_ids: tuple[tuple[str, str], ...] = ()


@attrs.frozen
class Cancel:
    """Event: cancel the run (every live role is stopped)."""

    event_id: str


@attrs.frozen
class NotifyResult:
    """What happened when the host tried to deliver outbox notice `notice_id`."""

    event_id: str
    notice_id: str
    result: NotifyOutcome
    error: str | None = None


@attrs.frozen
class HostOnline:
    """The main conversation is resident again: offline notices become due."""

    event_id: str


HaltKind = Literal[
    "timeout",
    "approval",
    "model",
    "worker-exit",
    "external-turn",
    "launch-failed",
    "thread-gone",
    "internal-error",
]


@attrs.frozen
class Halt:
    """The host saw something that stops the run (DOT-3/4/5/7/12): a turn past its
    timeout, an approval request, a model not offered, a worker that died, a turn it
    did not start, a launch that failed, a role's thread that Codex no longer has
    (`thread-gone`: the role's next turn starts a new thread), or a fault of the host's
    own background work (`internal-error`: the host failed, not the run). The run pauses with `detail` as the alert;
    live turns end as `stopping` -> `paused` when their end is reported."""

    event_id: str
    kind: HaltKind
    detail: Msg
    role: str | None = None


@attrs.frozen
class Tune:
    """dots_tune: overrides for a role's next turns (None keeps the current value);
    `allow_models` adds to the run's allowed models (after a user confirmation)."""

    event_id: str
    role: str
    model: str | None = None
    effort: str | None = None
    timeout_ms: int | None = None
    sandbox: str | None = None
    allow_models: tuple[str, ...] = ()


@attrs.frozen
class Budget:
    """dots_control budget: the run's new turn limit (maxTurns)."""

    event_id: str
    max_turns: int


@attrs.frozen
class ThreadSeen:
    """The turn ids a role's thread held when the host read its head (DOT-12)."""

    event_id: str
    role: str
    turn_ids: tuple[str, ...] = ()


@attrs.frozen
class HostRestarted:
    """Applied once after a host (re)loads a run from its store (PLN-6 last sentence)."""

    event_id: str


Event = (
    StartRun
    | Launch
    | TurnStarted
    | TurnEnded
    | Dispatch
    | Finish
    | DecisionTimeout
    | QuotaObserved
    | Pause
    | Resume
    | Cancel
    | NotifyResult
    | HostOnline
    | HostRestarted
    | Halt
    | Tune
    | Budget
    | ThreadSeen
)


@attrs.frozen
class Applied:
    """Outcome: the event changed the run (`note` says more when it matters)."""

    note: Msg | None = None  # e.g. "the run paused: turn limit reached"


@attrs.frozen
class Duplicate:
    """Outcome: an event with this id was applied before; nothing changed."""

    event_id: str


@attrs.frozen
class Dropped:
    """Outcome: the event no longer applies (e.g. for a role that finished) and was dropped."""

    reason: Msg


@attrs.frozen
class Refused:
    """Outcome: the event is not allowed in this state; `reason` says why."""

    reason: Msg


Outcome = Applied | Duplicate | Dropped | Refused
