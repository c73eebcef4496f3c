"""Shared by the exactly-once tests (TRN-9): a turn with effect blocks and reads, its
sender's world, a store wrapper that crashes at a chosen write, and a comparable
snapshot of a store."""

from __future__ import annotations

from typing import Any

import attrs

from markertools import deliver_turn
from markertools.domain.model import PermissionGrant, Project, Task
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

NOW = 1_800_000_000.0
TURN = """Plan:

```task-create
{"name": "a", "prompt": "first child"}
```

```todo-create
{"title": "track a", "task_id": "@a"}
```

```task-poll
{"task_id": "t-old"}
```

```task-create
{"prompt": "second child"}
```

```task-cancel
{"task_id": "t-run"}
```

```goal-convert
{"goal": "ship it"}
```
"""
EFFECT_BLOCKS = 4  # two creates, the todo and the cancel (the poll and goal-convert re-run)


def world() -> World:
    def task(tid: str, status: str, **kw: Any) -> Task:
        return Task(id=tid, project_id="p", status=status, created_by="u", created_at=NOW - 60, prompt=tid, **kw)

    return World(
        now=NOW,
        projects=(Project(id="p", name="shop"),),
        permissions=(PermissionGrant("u", "p", ("read", "create_task", "approve_merge")),),
        tasks=(
            task("t-s", "running"),
            task("t-old", "completed", parent_task_id="t-s", result_text="done"),
            task("t-run", "running", parent_task_id="t-s"),
        ),
    )


class Crash(BaseException):
    """What a killed process does to a delivery: nothing after it runs."""


@attrs.define
class Crashing:
    """A store wrapper that raises Crash at its `at`-th write call."""

    store: Any
    at: int
    calls: int = 0
    WRITES = ("insert_task", "insert_todo", "transition_task", "record_audit", "enqueue_followup", "record_block")

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.store, name)
        if name in self.WRITES:
            def counted(*args: Any, **kw: Any) -> Any:
                self.calls += 1
                if self.calls == self.at:
                    raise Crash(name)
                return value(*args, **kw)

            return counted
        return value


def ports_for(store: Any, clock: VirtualClock | None = None) -> Any:
    return store_ports(
        store, clock=clock or VirtualClock(NOW), random=SeededRandom(7), executor=NoopExecutor()
    )


def snapshot(store: Any) -> dict[str, Any]:
    w = store.export_world(NOW)
    return {
        "tasks": sorted((t.id, t.status, str(t.parent_task_id), t.prompt) for t in w.tasks),
        "todos": sorted((t.id, t.title, str(t.task_id)) for t in w.todos),
        "followups": sorted((f.task_id, f.text) for f in w.followups),
        "audit": sorted((a.kind, str(a.target), a.outcome) for a in w.audit),
    }


def deliver(store: Any, turn_id: str | None = "turn-1", **kw: Any) -> Any:
    return deliver_turn(TURN, sender="t-s", outcome="completed", ports=ports_for(store), turn_id=turn_id, **kw)
