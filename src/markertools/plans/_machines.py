# Owns: the run and role state machines of an orchestration run (PLN-6) as transition
# tables: each event names the states it may leave from and the one state it enters.
# Nothing else decides whether a status may change.
#
# Invariants:
#   Rule 1: a transition not in the table is refused with a reason naming the
#           machine (or role), the from state, the to state and the event.
#   Rule 2: terminal states (`completed`, `cancelled` runs; `completed` roles) have no
#           outgoing transitions.
#   Rule 3: pure data; the tables are the documentation (docs/plans.md copies them and
#           tests check every (state, event) pair against an independent table).
#
# Additions to the spec's prose (listed in docs/plans.md): a paused role is resumed
# into `awaiting-decision` (a fresh decision id is issued, never a re-send, PLN-6/7),
# and a role that is `starting` may be stopped (pause or host restart mid-launch).
from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

import attrs

from markertools.text.msg import Msg, msg

RunStatus = Literal["ready", "running", "paused", "completed", "cancelled"]
RUN_STATES: Final[tuple[RunStatus, ...]] = ("ready", "running", "paused", "completed", "cancelled")
RoleStatus = Literal[
    "queued", "starting", "running", "awaiting-decision", "stopping", "paused", "completed"
]
ROLE_STATES: Final[tuple[RoleStatus, ...]] = (
    "queued",
    "starting",
    "running",
    "awaiting-decision",
    "stopping",
    "paused",
    "completed",
)
LIVE_ROLE_STATES: Final[frozenset[str]] = frozenset({"starting", "running", "stopping"})


@attrs.frozen
class Machine:
    """A transition table: event -> (states it may fire from, state it enters)."""

    name: str
    states: tuple[str, ...]
    table: Mapping[str, tuple[frozenset[str], str]]

    @property
    def events(self) -> tuple[str, ...]:
        return tuple(self.table)

    @property
    def terminal(self) -> frozenset[str]:
        leaving = {s for sources, _ in self.table.values() for s in sources}
        return frozenset(s for s in self.states if s not in leaving)


@attrs.frozen
class Moved:
    """A legal transition, to the state `to`."""

    to: str


@attrs.frozen
class Illegal:
    """A transition the state machine refuses, with the reason."""

    reason: Msg


RUN_MACHINE: Final[Machine] = Machine(
    "run",
    RUN_STATES,
    {
        "start": (frozenset({"ready"}), "running"),
        "complete": (frozenset({"running"}), "completed"),
        "pause": (frozenset({"running"}), "paused"),
        "resume": (frozenset({"paused"}), "running"),
        "cancel": (frozenset({"ready", "running", "paused"}), "cancelled"),
    },
)

ROLE_MACHINE: Final[Machine] = Machine(
    "role",
    ROLE_STATES,
    {
        "launch": (frozenset({"queued"}), "starting"),
        "started": (frozenset({"starting"}), "running"),
        "turn-ended": (frozenset({"running"}), "awaiting-decision"),
        "dispatch": (frozenset({"awaiting-decision"}), "queued"),
        "finish": (frozenset({"awaiting-decision"}), "completed"),
        "stop": (frozenset({"starting", "running", "awaiting-decision"}), "stopping"),
        "stopped": (frozenset({"stopping"}), "paused"),
        "resume": (frozenset({"paused"}), "awaiting-decision"),
    },
)


def transition(
    machine: Machine, state: str, event: str, subject: Msg | None = None
) -> Moved | Illegal:
    """The state `event` leads to from `state`, or the refusal (Rule 1). `subject`
    names what moves in the refusal (default: the machine, e.g. "run")."""
    who = subject if subject is not None else msg("plan.subject", name=machine.name)
    entry = machine.table.get(event)
    if entry is None:
        return Illegal(msg("plan.unknown_event", subject=who, event=f"'{event}'"))
    sources, target = entry
    if state not in sources:
        return Illegal(msg("plan.illegal", subject=who, frm=state, to=target, event=f"'{event}'"))
    return Moved(target)
