"""Issue 24: a report showed "current time 1796187694.9828212" - the system clock's raw
float. Every time a person or an agent reads is ISO 8601 with its offset, to the second
(`shanghai_iso`), beside whole epoch seconds only where the agent may write a time back.
The clock here is virtual but, like the system clock, never on a whole second."""

from __future__ import annotations

import re

import pytest

from markertools import deliver_turn, fire_due_automations
from markertools.domain.model import PermissionGrant, Task, Todo
from markertools.domain.schedule import shanghai_iso, whole_seconds
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.memory import MemoryStore
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

NOW = 1_798_333_200.0  # 2026-12-27T09:00:00+08:00
FRACTION = 0.9828212
RAW_EPOCH_FLOAT = re.compile(r"\b1\d{9}\.\d")


def rig() -> tuple[MemoryStore, VirtualClock]:
    world = World(
        now=NOW,
        permissions=(PermissionGrant("u1", "p1", ("read", "create_task", "approve_merge")),),
        tasks=(Task("t1", "p1", created_by="u1"),),
        todos=(Todo("d1", "p1", "write the notes", status="in_progress", created_at=NOW - 60),),
    )
    return MemoryStore.from_world(world), VirtualClock(NOW + FRACTION)


def deliver(store: MemoryStore, clock: VirtualClock, text: str) -> str:
    ports = store_ports(store, clock=clock, random=SeededRandom(3), executor=NoopExecutor())
    report = deliver_turn(text, sender="t1", outcome="completed", ports=ports)
    assert report.message is not None
    return report.message


def test_the_shared_formatter_is_to_the_second() -> None:
    assert shanghai_iso(NOW + FRACTION) == "2026-12-27T09:00:00+08:00"
    assert whole_seconds(NOW + FRACTION) == 1_798_333_200
    assert isinstance(whole_seconds(NOW + FRACTION), int)


@pytest.mark.rule("AUT-2")
def test_a_past_first_run_at_names_the_current_time_to_the_second() -> None:
    store, clock = rig()
    message = deliver(
        store,
        clock,
        '```automation-create\n{"prompt": "p", "interval_seconds": 3600, '
        '"first_run_at": 1798333100.25}\n```\n',
    )
    assert (
        "refused: first_run_at 1798333100 (2026-12-27T08:58:20+08:00) is before the current "
        "time 1798333200 (2026-12-27T09:00:00+08:00); give a later time"
    ) in message
    assert not RAW_EPOCH_FLOAT.search(message), message


@pytest.mark.rule("TDU-3")
def test_a_completed_todo_shows_completed_at_as_iso() -> None:
    store, clock = rig()
    message = deliver(store, clock, '```todo-update\n{"id": "d1", "status": "completed"}\n```\n')
    assert (
        'updated todo d1: status "in_progress" -> "completed", completed_at null -> '
        "2026-12-27T09:00:00+08:00"
    ) in message
    assert not RAW_EPOCH_FLOAT.search(message), message


@pytest.mark.rule("SCH-6", "AUT-1")
def test_a_registered_and_fired_automation_shows_its_times_to_the_second() -> None:
    store, clock = rig()
    message = deliver(
        store, clock, '```automation-create\n{"name": "now", "prompt": "p", "once": true}\n```\n'
    )
    assert "runs once, as soon as it is registered (2026-12-27T09:00:00+08:00)" in message
    ports = store_ports(store, clock=clock, random=SeededRandom(3), executor=NoopExecutor())
    (fired,) = fire_due_automations(ports, clock.now())
    reason = fired.reason.render("en")
    assert reason.startswith(
        "automation 'now' fired for slot 1798333200 (2026-12-27T09:00:00+08:00): created task"
    )
    assert fired.slot == NOW + FRACTION  # the slot itself keeps its exact value
    assert not RAW_EPOCH_FLOAT.search(reason), reason


def test_the_demo_turn_on_an_off_the_second_clock_shows_no_raw_time() -> None:
    """Every text of a delivery touching every kind, and of the fire after it."""
    from markertools_adapters.cli.cmd_demo import DEMO_SENDER, demo_turn, demo_world

    world = demo_world()
    store = MemoryStore.from_world(world)
    clock = VirtualClock(world.now + FRACTION)
    ports = store_ports(store, clock=clock, random=SeededRandom(3), executor=NoopExecutor())
    report = deliver_turn(demo_turn(), sender=DEMO_SENDER, outcome="completed", ports=ports)
    fired = fire_due_automations(ports, clock.now())
    texts = [report.message or "", *(run.reason.render("en") for run in fired)]
    texts += [record.reason for record in store.audit_records()]
    for text in texts:
        assert not RAW_EPOCH_FLOAT.search(text), text
