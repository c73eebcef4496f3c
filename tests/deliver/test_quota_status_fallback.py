"""quota-status of a task without a creator falls back to its parent's creator, with the
real SQLite permission table (QUO-1, QUO-2), and that creator still needs `read`."""

from __future__ import annotations

import pytest

from markertools import deliver_turn
from markertools.domain.model import PermissionGrant, Quota, Task
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.sqlite import create_store_from_world
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

NOW = 1_798_333_200.0
FENCE = "```"


def block(kind: str, body: str) -> str:
    return f"{FENCE}{kind}\n{body}\n{FENCE}\n"


def quota_world(parent_grants: tuple[str, ...]) -> World:
    return World(
        now=NOW,
        permissions=(PermissionGrant("owner", "p1", parent_grants),),
        tasks=(
            Task("parent", "p1", status="running", created_by="owner"),
            Task("orphan", "p1", status="running", created_by=None, parent_task_id="parent"),
        ),
        quotas=(Quota("owner", 50.0, 12.5),),
    )


@pytest.mark.rule("QUO-1", "QUO-2")
def test_quota_status_falls_back_to_the_parents_creator_with_the_permission_table() -> None:
    with create_store_from_world(quota_world(("read",))) as store:  # SqlitePermissions
        ports = store_ports(
            store, clock=VirtualClock(NOW), random=SeededRandom(1), executor=NoopExecutor()
        )
        report = deliver_turn(
            block("quota-status", "{}"), sender="orphan", outcome="completed", ports=ports
        )
    (entry,) = report.entries
    assert entry.outcome == "done", entry.reason.render("en")
    text = entry.reason.render("en")
    assert "owner" in text and "$50.00" in text and "$12.50" in text


@pytest.mark.rule("QUO-1")
def test_the_fallback_creator_still_needs_read() -> None:
    with create_store_from_world(quota_world(("create_task",))) as store:
        ports = store_ports(
            store, clock=VirtualClock(NOW), random=SeededRandom(1), executor=NoopExecutor()
        )
        report = deliver_turn(
            block("quota-status", "{}"), sender="orphan", outcome="completed", ports=ports
        )
    (entry,) = report.entries
    assert entry.outcome == "rejected"
    assert "owner" in entry.reason.render("en") and "'read'" in entry.reason.render("en")
