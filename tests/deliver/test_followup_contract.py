"""Issue 27 item 1 in the core: what a delivery queued is `queued_followups`; a turn
without any block queues nothing (TRN-6); the old `report.followups` still answers but
warns that it is not what a worker sends."""

from __future__ import annotations

import pytest

from markertools import Ports, TurnPlan, deliver_turn, parse_turn
from markertools.domain.model import PermissionGrant, Project, Task
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.memory import MemoryStore
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

NOW = 1_800_000_000.0


def _ports() -> tuple[MemoryStore, Ports]:
    store = MemoryStore.from_world(
        World(
            now=NOW,
            projects=(Project("p1", "shop"),),
            permissions=(PermissionGrant("u1", "p1", ("read", "create_task")),),
            tasks=(Task("t1", "p1", status="running", created_by="u1"),),
        )
    )
    return store, store_ports(
        store, clock=VirtualClock(NOW), random=SeededRandom(1), executor=NoopExecutor()
    )


@pytest.mark.rule("TRN-6")
@pytest.mark.parametrize("turn", ["Nothing to ask.", TurnPlan()])
def test_a_turn_without_blocks_queues_nothing(turn: str | TurnPlan) -> None:
    store, ports = _ports()
    report = deliver_turn(turn, sender="t1", outcome="completed", ports=ports)
    assert report.delivered and report.report_queued and report.queued_followups == ()
    assert report.message == "markertools report: 0 block(s) from your last turn ()."
    assert store.followups_for("t1") == ()


@pytest.mark.rule("TRN-6", "GOA-2")
def test_queued_followups_is_what_was_queued_and_the_old_name_warns() -> None:
    store, ports = _ports()
    turn = '```goal-convert\n{"goal": "ship 2.0"}\n```'
    report = deliver_turn(parse_turn(turn), sender="t1", outcome="completed", ports=ports)
    assert report.queued_followups == (report.message, "/goal ship 2.0")
    assert store.followups_for("t1") == report.queued_followups
    with pytest.warns(DeprecationWarning, match="send what take_followups"):
        assert report.followups == report.queued_followups
