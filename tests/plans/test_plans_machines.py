"""The run and role state machines (PLN-6): every (state, event) pair of both tables
either reaches the documented state or is refused with the documented reason."""

from __future__ import annotations

import pytest

from markertools.plans import (
    ROLE_MACHINE,
    ROLE_STATES,
    RUN_MACHINE,
    RUN_STATES,
    Illegal,
    Moved,
    transition,
)
from markertools.plans._machines import LIVE_ROLE_STATES
from markertools.text.msg import msg

# Written from PLN-6 (plus the two documented additions: paused -> awaiting-decision
# on resume, starting -> stopping), independently of the module's tables.
RUN_EXPECTED: dict[tuple[str, str], str] = {
    ("ready", "start"): "running",
    ("running", "complete"): "completed",
    ("running", "pause"): "paused",
    ("paused", "resume"): "running",
    ("ready", "cancel"): "cancelled",
    ("running", "cancel"): "cancelled",
    ("paused", "cancel"): "cancelled",
}
RUN_TARGET = {
    "start": "running",
    "complete": "completed",
    "pause": "paused",
    "resume": "running",
    "cancel": "cancelled",
}

ROLE_EXPECTED: dict[tuple[str, str], str] = {
    ("queued", "launch"): "starting",
    ("starting", "started"): "running",
    ("running", "turn-ended"): "awaiting-decision",
    ("awaiting-decision", "dispatch"): "queued",
    ("awaiting-decision", "finish"): "completed",
    ("running", "stop"): "stopping",
    ("awaiting-decision", "stop"): "stopping",
    ("starting", "stop"): "stopping",
    ("stopping", "stopped"): "paused",
    ("paused", "resume"): "awaiting-decision",
}
ROLE_TARGET = {
    "launch": "starting",
    "started": "running",
    "turn-ended": "awaiting-decision",
    "dispatch": "queued",
    "finish": "completed",
    "stop": "stopping",
    "stopped": "paused",
    "resume": "awaiting-decision",
}


def test_state_and_event_sets() -> None:
    assert set(RUN_STATES) == {"ready", "running", "paused", "completed", "cancelled"}
    assert set(ROLE_STATES) == {
        "queued",
        "starting",
        "running",
        "awaiting-decision",
        "stopping",
        "paused",
        "completed",
    }
    assert set(RUN_MACHINE.events) == set(RUN_TARGET)
    assert set(ROLE_MACHINE.events) == set(ROLE_TARGET)
    assert RUN_MACHINE.terminal == {"completed", "cancelled"}
    assert ROLE_MACHINE.terminal == {"completed"}
    assert {"starting", "running", "stopping"} == LIVE_ROLE_STATES


@pytest.mark.rule("PLN-6")
@pytest.mark.parametrize("state", RUN_STATES)
@pytest.mark.parametrize("event", sorted(RUN_TARGET))
def test_run_table_exhaustive(state: str, event: str) -> None:
    got = transition(RUN_MACHINE, state, event)
    if (state, event) in RUN_EXPECTED:
        assert got == Moved(RUN_EXPECTED[(state, event)])
    else:
        assert isinstance(got, Illegal)
        assert (
            got.reason.render()
            == f"illegal transition of run: {state} -> {RUN_TARGET[event]} (event '{event}')"
        )
        assert state in got.reason.render("zh") and RUN_TARGET[event] in got.reason.render("zh")


@pytest.mark.rule("PLN-6")
@pytest.mark.parametrize("state", ROLE_STATES)
@pytest.mark.parametrize("event", sorted(ROLE_TARGET))
def test_role_table_exhaustive(state: str, event: str) -> None:
    from markertools import msg

    got = transition(ROLE_MACHINE, state, event, msg("plan.subject_role", name="'fixer'"))
    if (state, event) in ROLE_EXPECTED:
        assert got == Moved(ROLE_EXPECTED[(state, event)])
    else:
        assert isinstance(got, Illegal)
        assert got.reason.render() == (
            f"illegal transition of role 'fixer': {state} -> {ROLE_TARGET[event]} (event '{event}')"
        )


@pytest.mark.rule("PLN-6")
@pytest.mark.parametrize("machine", [RUN_MACHINE, ROLE_MACHINE])
def test_unknown_events_refused(machine: object) -> None:
    from markertools.plans import Machine

    assert isinstance(machine, Machine)
    got = transition(machine, machine.states[0], "explode")
    assert isinstance(got, Illegal)
    assert got.reason.render() == f"{machine.name} has no event 'explode'"
    named = transition(
        machine, machine.states[0], "explode", msg("plan.subject_role", name="'fixer'")
    )
    assert isinstance(named, Illegal)
    assert named.reason.render() == "role 'fixer' has no event 'explode'"


@pytest.mark.rule("PLN-6")
def test_spec_paths_are_walkable() -> None:
    """ready -> running -> completed; running <-> paused; roles through a full cycle."""
    path = [("ready", "start"), ("running", "pause"), ("paused", "resume"), ("running", "complete")]
    for state, event in path:
        assert isinstance(transition(RUN_MACHINE, state, event), Moved)
    role = "queued"
    for event in [
        "launch",
        "started",
        "turn-ended",
        "dispatch",
        "launch",
        "started",
        "turn-ended",
        "stop",
        "stopped",
        "resume",
        "finish",
    ]:
        got = transition(ROLE_MACHINE, role, event)
        assert isinstance(got, Moved), (role, event)
        role = got.to
    assert role == "completed"
