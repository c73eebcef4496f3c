"""Worker processes for tests/adapters/sqlite/test_sqlite_automation_race.py (imported by spawned
children). Every worker first reads the project's active automation names, then waits
at a barrier until EVERY worker has read them - so all of them saw the name free - and
only then registers it: the check-then-insert race of two concurrent deliveries, made
certain instead of left to timing."""

from __future__ import annotations

import json
import traceback
from pathlib import Path
from typing import Any

from markertools import deliver_turn
from markertools.domain.model import Automation, PermissionGrant, Project, Task
from markertools.domain.ports import AutomationNameTaken
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.sqlite import SqliteStore, create_store_from_world
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

PROJECT = "p"
CREATOR = "u"
NAME = "nightly"
NOW = 1000.0


def make_db(path: Path, workers: int) -> None:
    senders = tuple(
        Task(id=f"w{i}", project_id=PROJECT, status="running", created_by=CREATOR, prompt="w")
        for i in range(workers)
    )
    world = World(
        now=NOW,
        projects=(Project(id=PROJECT, name="race"),),
        permissions=(PermissionGrant(CREATOR, PROJECT, ("create_task", "read")),),
        tasks=senders,
    )
    create_store_from_world(world, path).close()


class BarrierStore(SqliteStore):
    """Reads the active names, then waits until every worker has read them."""

    barrier: Any = None

    def active_automation_names(self, project_id: str) -> frozenset[str]:
        names = super().active_automation_names(project_id)
        self.barrier.wait(timeout=120)
        return names


def insert_worker(path: str, index: int, barrier: Any, queue: Any) -> None:
    """Store level: check the name, wait for all, insert it. Puts (index, saw_free, outcome)."""
    saw_free, outcome = False, "not run"
    try:
        store = BarrierStore(path)
        store.barrier = barrier
        try:
            saw_free = NAME not in store.active_automation_names(PROJECT)
            store.insert_automation(
                Automation(
                    id=f"a{index}",
                    project_id=PROJECT,
                    name=NAME,
                    prompt="tick",
                    created_by=CREATOR,
                    created_at=NOW,
                )
            )
            outcome = "won"
        except AutomationNameTaken as exc:
            outcome = f"taken {exc.project_id}/{exc.name}"
        finally:
            store.close()
    except Exception:
        outcome = traceback.format_exc()
    queue.put((index, saw_free, outcome))


def deliver_worker(path: str, index: int, barrier: Any, queue: Any) -> None:
    """Delivery level: one automation-create block naming NAME, sent by task w<index>.
    Puts (index, entry outcome, entry reason in English)."""
    try:
        store = BarrierStore(path)
        store.barrier = barrier
        ports = store_ports(
            store,
            clock=VirtualClock(NOW),
            random=SeededRandom(f"name-{index}"),
            executor=NoopExecutor(),
        )
        body = json.dumps({"name": NAME, "prompt": "tick"})
        text = f"Registering.\n\n```automation-create\n{body}\n```\n"
        report = deliver_turn(text, sender=f"w{index}", outcome="completed", ports=ports)
        store.close()
        (entry,) = report.entries
        queue.put((index, entry.outcome, entry.reason.render("en")))
    except Exception:
        queue.put((index, "error", traceback.format_exc()))
