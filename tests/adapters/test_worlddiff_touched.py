"""`deliver --db` tells what changed from what the delivery touched (issue 19): the
TouchRecorder's lines equal the diff of two full exports (worlddiff Rule 3), for the
in-memory and the SQLite store, and it passes every call through unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from markertools import deliver_turn
from markertools.domain.model import PermissionGrant, Project, Task
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.memory import MemoryStore
from markertools_adapters.sqlite import create_store_from_world
from markertools_adapters.wiring import StoragePorts, storage_port_methods, store_ports
from markertools_adapters.world import World
from markertools_adapters.worlddiff import (
    TouchRecorder,
    touched_changes,
    touched_world,
    world_changes,
)

NOW = 1_800_000_000.0
WORLD = World(
    now=NOW,
    projects=(Project("p1", "shop"),),
    permissions=(PermissionGrant("u1", "p1", ("read", "create_task", "approve_merge")),),
    tasks=(
        Task("t1", "p1", created_by="u1", prompt="lead", created_at=NOW),
        Task("t2", "p1", created_by="u1", parent_task_id="t1", prompt="child", created_at=NOW),
        Task("t3", "p1", status="failed", created_by="u1", parent_task_id="t1", prompt="f",
             created_at=NOW),
        Task("bg", "p1", created_by="u2", prompt="unrelated", created_at=NOW),
    ),
)
TURN = "\n".join(
    [
        '```task-create\n{"prompt": "run tests"}\n```',
        '```task-cancel\n{"task_id": "t2"}\n```',
        '```task-retry\n{"task_id": "t3"}\n```',
        '```task-cancel\n{"task_id": "bg"}\n```',
        '```todo-create\n{"title": "docs"}\n```',
        '```automation-create\n{"prompt": "nightly", "interval_seconds": 86400}\n```',
        '```task-poll\n{"task_id": "t2", "wait_seconds": 30}\n```',
        '```task-list\n{}\n```',
    ]
)


def test_the_recorder_implements_every_storage_port_method() -> None:
    missing = {m for m in storage_port_methods() if not callable(getattr(TouchRecorder, m, None))}
    assert missing == set()
    recorder: StoragePorts = TouchRecorder(MemoryStore())  # mypy: a StoragePorts
    assert recorder is not None


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_touched_changes_equal_the_full_diff(tmp_path: Path, kind: str) -> None:
    store = MemoryStore.from_world(WORLD) if kind == "memory" else create_store_from_world(
        WORLD, tmp_path / "w.db"
    )
    clock = VirtualClock(NOW)
    before = store.export_world(NOW)
    recorder = TouchRecorder(store)
    ports = store_ports(recorder, clock=clock, random=SeededRandom(7), executor=NoopExecutor())
    report = deliver_turn(TURN, sender="t1", outcome="completed", ports=ports)
    after = store.export_world(clock.now())
    assert report.delivered
    touched = touched_world(recorder, clock.now())
    assert touched_changes(recorder, NOW, touched) == world_changes(before, after)
    # only what was written: the sender and the unrelated task (cancel rejected) are out
    assert {t.id for t in touched.tasks} == {t.id for t in after.tasks} - {"t1", "bg"}
    assert touched.audit == after.audit[len(before.audit):]
    assert touched.followups == tuple(
        type(f)(f.task_id, f.text) for f in after.followups[len(before.followups):]
    )
    close = getattr(store, "close", None)
    if close:
        close()


def test_a_refused_insert_is_not_created() -> None:
    store = MemoryStore.from_world(WORLD)
    recorder = TouchRecorder(store)
    with pytest.raises(Exception):  # noqa: B017 - whatever the store raises passes through
        recorder.insert_task(Task("t1", "p1"))
    assert recorder.tasks_before == {}
