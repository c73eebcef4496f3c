"""A tiny worker that embeds markertools with the in-memory ports.

A "lead" task asks for two helpers, waits for them, then converts itself into a goal.
The agent is faked (a function returning the turn's text); everything else is the real
library: parse the turn, gate, execute through the ports, queue the report as the
sender's next input. Time is virtual, so the wait finishes at once.

Run it:  python examples/worker_memory.py
"""

from __future__ import annotations

from markertools import PermissionGrant, Ports, Task, deliver_turn
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.memory import MemoryStore
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

LEAD_TURN = """I'll split the work.

```task-create
{"name": "api", "prompt": "helper: write the API"}
```

```task-create
{"name": "docs", "prompt": "helper: write the docs"}
```

```wait-threads
{"task_ids": ["@api", "@docs"], "interval_seconds": 10, "timeout_seconds": 600}
```
"""

LEAD_SECOND_TURN = """Both helpers are done. From now on I work as a goal.

```goal-convert
{"goal": "ship the release once the API and the docs are merged"}
```
"""


def fake_agent(task: Task, turn_input: str) -> str:
    """Stands in for the model: the lead plans, helpers just finish their job."""
    if task.prompt.startswith("lead"):
        return LEAD_SECOND_TURN if "markertools report" in turn_input else LEAD_TURN
    return f"finished: {task.prompt.removeprefix('helper: ')}"


def run_turn(store: MemoryStore, ports: Ports, task_id: str, turn_input: str) -> str:
    """One worker slot: claim the task, run the agent, deliver its marker blocks, record
    the answer. Returns the report message queued for the task."""
    task = store.get_task(task_id)
    assert task is not None
    store.transition_task(task_id, task.status, {"status": "running"})
    answer = fake_agent(task, turn_input)
    report = deliver_turn(answer, sender=task_id, outcome="completed", ports=ports)
    store.transition_task(task_id, "running", {"status": "completed", "result_text": answer})
    return report.message or ""


class OtherSlotsClock(VirtualClock):
    """Virtual time in which the worker's other slots run every queued task whenever
    time passes - so while the lead waits, its helpers get done."""

    store: MemoryStore
    ports: Ports

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        for queued in self.store.list_tasks("shop", status="queued", q=None, limit=50).rows:
            run_turn(self.store, self.ports, queued.id, "")


def main() -> list[str]:
    world = World(
        now=1_798_333_200.0,
        permissions=(PermissionGrant("alice", "shop", ("read", "create_task", "approve_merge")),),
        tasks=(
            Task("lead", "shop", status="queued", created_by="alice", prompt="lead: release 2.0"),
        ),
    )
    store = MemoryStore.from_world(world)
    clock = OtherSlotsClock(world.now)
    ports = store_ports(store, clock=clock, random=SeededRandom(1))
    clock.store, clock.ports = store, ports

    transcript = [run_turn(store, ports, "lead", "")]
    # The report is the lead's next input: the lead takes another turn with it.
    store.transition_task("lead", "completed", {"status": "queued"})
    transcript.append(run_turn(store, ports, "lead", store.followups_for("lead")[-1]))
    transcript.append("next input queued for lead: " + repr(store.followups_for("lead")[-1]))
    return transcript


if __name__ == "__main__":
    for part in main():
        print(part)
        print("-" * 60)
