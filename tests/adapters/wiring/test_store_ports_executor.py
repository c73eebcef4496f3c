"""Issue 27 item 3: `store_ports` has no default executor. A worker written from the docs
that leaves it out gets a TypeError at wiring time - never a cancel that reports "done"
while nothing was killed - and the one that names NoopExecutor gets a cancel entry that
tells the agent no process was signalled."""

from __future__ import annotations

from typing import Any

import pytest

from markertools import Task, deliver_turn
from markertools.domain.model import PermissionGrant, Project
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.memory import MemoryStore
from markertools_adapters.wiring import NO_EXECUTOR, store_ports
from markertools_adapters.world import World

NOW = 1_800_000_000.0
CANCEL = '```task-cancel\n{"task_id": "t2"}\n```'


def _store() -> MemoryStore:
    return MemoryStore.from_world(
        World(
            now=NOW,
            projects=(Project("p1", "shop"),),
            permissions=(PermissionGrant("u1", "p1", ("read", "create_task")),),
            tasks=(
                Task("t1", "p1", status="running", created_by="u1"),
                Task("t2", "p1", status="running", created_by="u1", parent_task_id="t1"),
            ),
        )
    )


@pytest.mark.rule("CTL-2")
def test_store_ports_without_an_executor_is_refused_before_any_delivery() -> None:
    store = _store()
    wiring: Any = store_ports  # the call a worker written before issue 27 makes
    with pytest.raises(TypeError, match="executor"):
        wiring(store, clock=VirtualClock(NOW), random=SeededRandom(1))
    with pytest.raises(TypeError) as raised:
        wiring(store, clock=VirtualClock(NOW), random=SeededRandom(1), executor=None)
    assert str(raised.value) == NO_EXECUTOR
    assert "pass NoopExecutor() to choose, knowingly" in str(raised.value)
    assert store.get_task("t2").status == "running"  # nothing was delivered


@pytest.mark.rule("CTL-2")
def test_a_cancel_through_the_named_noop_executor_tells_the_agent_nothing_was_killed() -> None:
    store = _store()
    ports = store_ports(
        store, clock=VirtualClock(NOW), random=SeededRandom(1), executor=NoopExecutor()
    )
    report = deliver_turn(CANCEL, sender="t1", outcome="completed", ports=ports)
    (entry,) = report.entries
    assert entry.outcome == "done"
    assert entry.reason.render("en") == (
        "cancelled task t2: it was 'running', now 'interrupted'; nothing was signalled; the"
        " executor said: no executor is configured (noop executor): the task's status"
        " changed, no process was signalled"
    )
    assert store.get_task("t2").status == "interrupted"
    (audit,) = store.audit_records()
    assert "no process was signalled" in audit.reason
