"""Worker processes for the SQLite concurrency tests (imported by spawned children).

A worker opens its own SqliteStore on the shared file and delivers turns (marker texts)
through `deliver_turn`, racing the other workers to cancel / retry the same tasks and to
claim the same automation slots. It returns what it saw; the parent checks the totals.
"""

from __future__ import annotations

import random
import sqlite3
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from markertools import deliver_turn
from markertools.domain.model import Automation, PermissionGrant, Project, Task
from markertools.domain.schedule import next_run_at
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.sqlite import SqliteStore, create_store_from_world
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

PROJECT = "p"
CREATOR = "u"
TARGETS = tuple(f"x{i}" for i in range(4))
AUTOMATIONS = tuple(f"a{i}" for i in range(3))
INTERVAL = 60


def race_world(workers: int) -> World:
    senders = [
        Task(id=f"w{i}", project_id=PROJECT, status="running", created_by=CREATOR, prompt="worker")
        for i in range(workers)
    ]
    targets = [
        Task(id=t, project_id=PROJECT, status="running", created_by=CREATOR, prompt="target")
        for t in TARGETS
    ]
    automations = [
        Automation(
            id=a,
            project_id=PROJECT,
            name=a,
            prompt="tick",
            interval_seconds=INTERVAL,
            first_run_at=0.0,
            created_by=CREATOR,
        )
        for a in AUTOMATIONS
    ]
    return World(
        now=1000.0,
        projects=(Project(id=PROJECT, name="race"),),
        permissions=(PermissionGrant(CREATOR, PROJECT, ("approve_merge", "create_task", "read")),),
        tasks=tuple(senders + targets),
        automations=tuple(automations),
    )


def make_race_db(path: Path, workers: int) -> None:
    create_store_from_world(race_world(workers), path).close()


def turn_text(blocks: list[tuple[str, Mapping[str, str]]]) -> str:
    import json

    parts = ["Turn output."]
    for kind, body in blocks:
        parts.append(f"```{kind}\n{json.dumps(body)}\n```")
    return "\n\n".join(parts) + "\n"


class TrackingStore(SqliteStore):
    """Records every successful compare-and-set this process made."""

    transitions: list[tuple[str, str, str]]

    def transition_task(
        self, task_id: str, expected_status: str, changes: Mapping[str, object]
    ) -> Task | None:
        updated = super().transition_task(task_id, expected_status, changes)
        if updated is not None:
            self.transitions.append((task_id, expected_status, updated.status))
        return updated


def race_worker(path: str, index: int, turns: int) -> dict[str, Any]:
    """Deliver `turns` turns as task w<index>, each cancelling or retrying a random shared
    target, then race to claim the current slot of a random automation."""
    rng = random.Random(index)
    result: dict[str, Any] = {
        "done": {},
        "rejected": {},
        "errors": [],
        "claims": [],
        "claim_losses": 0,
        "transitions": [],
    }
    try:
        store = TrackingStore(path)
        store.transitions = result["transitions"]
        clock = VirtualClock(1000.0)
        ports = store_ports(
            store, clock=clock, random=SeededRandom(f"race-{index}"), executor=NoopExecutor()
        )
        for _ in range(turns):
            blocks: list[tuple[str, Mapping[str, str]]] = []
            for _ in range(rng.randint(1, 3)):
                action = rng.choice(("task-cancel", "task-retry"))
                blocks.append((action, {"task_id": rng.choice(TARGETS)}))
            report = deliver_turn(
                turn_text(blocks), sender=f"w{index}", outcome="completed", ports=ports
            )
            for entry in report.entries:
                reason = entry.reason.render("en")
                bucket = result["done"] if entry.outcome == "done" else result["rejected"]
                key = f"{entry.kind}|{entry.target}"
                bucket[key] = bucket.get(key, 0) + 1
                if (
                    entry.outcome != "done"
                    and "changed meanwhile" not in reason
                    and (
                        "locked" in reason.lower() or "busy" in reason.lower() or "Error" in reason
                    )
                ):
                    result["errors"].append(reason)
            automation_id = rng.choice(AUTOMATIONS)
            current = store.get_automation(automation_id)
            assert current is not None
            slot = next_run_at(current)
            if slot is not None:
                if store.claim_automation(automation_id, slot, slot + 1.0):
                    result["claims"].append((automation_id, slot))
                else:
                    result["claim_losses"] += 1
        store.close()
    except sqlite3.OperationalError as exc:
        result["errors"].append(f"unhandled {type(exc).__name__}: {exc}")
    except Exception:
        result["errors"].append(traceback.format_exc())
    return result


def claim_worker(path: str, rounds: int, barrier: Any, queue: Any) -> None:
    """Round k: wait for every worker, then claim slot 60*k of the first automation."""
    result: dict[str, Any] = {"wins": [], "losses": 0, "errors": []}
    try:
        store = SqliteStore(path)
        for k in range(rounds):
            slot = float(INTERVAL * k)
            barrier.wait(timeout=120)
            if store.claim_automation(AUTOMATIONS[0], slot, slot + 1.0):
                result["wins"].append((AUTOMATIONS[0], slot))
            else:
                result["losses"] += 1
            barrier.wait(timeout=120)  # nobody starts the next slot before all tried this one
        store.close()
    except Exception:
        result["errors"].append(traceback.format_exc())
    queue.put(result)


# ---- the killed worker ---------------------------------------------------------------------


def churn_worker(path: str, seed: int) -> None:
    """Runs until killed: platform requeues, simulated claims, cancel / retry / create
    turns, on the race world's tasks. Every step is one of the store's transactions."""
    rng = random.Random(seed)
    store = SqliteStore(path)
    clock = VirtualClock(5000.0 + seed)
    ports = store_ports(
        store, clock=clock, random=SeededRandom(f"churn-{seed}"), executor=NoopExecutor()
    )
    while True:
        target = rng.choice(TARGETS)
        step = rng.random()
        if step < 0.35:
            task = store.get_task(target)
            if task is not None and task.status == "running":
                store.requeue_platform(target, "running", "platform_fresh", -1, clock.now())
            elif task is not None and task.status == "queued":
                store.transition_task(
                    target,
                    "queued",
                    {
                        "status": "running",
                        "result_text": "partial " * 50,
                        "error_text": "boom",
                        "interrupted_reason": "platform restart",
                    },
                )
        else:
            blocks: list[tuple[str, Mapping[str, str]]] = [
                (rng.choice(("task-cancel", "task-retry")), {"task_id": target}),
            ]
            if rng.random() < 0.3:
                blocks.append(("task-create", {"prompt": "spawned by churn"}))
            deliver_turn(turn_text(blocks), sender=f"w{seed % 2}", outcome="completed", ports=ports)
        clock.advance(1.0)
