"""A complete worker loop on the in-memory store, using only store methods and library
calls (docs/worker-loop.md).

Set-up uses the incremental writers (put_project, set_permissions, put_quota, insert_task,
insert_automation). The loop then, until nothing is left to do:

1. fires the due automations (`fire_due_automations`: one new task per due slot) and
   requeues the tasks of hosts that died (`expired_leases`, `requeue_expired`),
2. claims the oldest queued task with a lease (`claim_task(..., now=, lease_seconds=)`:
   compare-and-set queued -> running, and in the same transaction the lease, the
   follow-ups queued for it - the reports of its last turn - and what kind of start
   this is: fresh, continuation, retry, resume, checkpoint),
3. builds the turn's input from the claim (`claim_inputs`): a delivery a crash cut off
   is finished first; a continuation sends exactly the claim's follow-ups (the queue is
   the only channel: nothing reaches the agent twice); any other start sends the
   first-turn prompt (which injects the project context on fresh starts only),
4. runs the agent (faked here), delivers the turn's marker blocks (`deliver_turn`, with
   a turn id unique for the task: exactly once; fenced by the claim),
5. finishes the turn (`finish_turn`, one transaction, once per turn id, fenced by the
   claim): completes the task - or queues it again when delivery queued a report (a turn
   with marker blocks), so that report becomes its next turn's input - records the
   turn's cost as the task's next round and charges its creator's quota. A turn without
   any block queues nothing: the task stays completed.

A "lead" task asks for two helpers, waits for them, then converts itself into a goal; a
nightly automation adds a task of its own. Time is virtual, so the wait finishes at once.

Run it:  .venv/bin/python examples/worker_memory.py
"""

from __future__ import annotations

import markertools_adapters
from markertools import (
    Automation,
    Project,
    Quota,
    StartKind,
    Task,
    TurnCost,
    deliver_turn,
    fire_due_automations,
)
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.first_turn import claim_inputs

PROJECT = "shop"
HOST = "worker-1"
NOW = 1_798_333_200.0
# Longer than a turn's longest wait (DEFAULT_DELIVERY_DEADLINE, 600 s): a host that runs
# longer turns renews its leases meanwhile (`renew_leases`, docs/worker.md).
LEASE = 900.0

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
        if turn_input.startswith("/goal") or "\n/goal" in turn_input:
            return "Working towards the goal."
        return LEAD_SECOND_TURN if "markertools report" in turn_input else LEAD_TURN
    return f"finished: {task.prompt.removeprefix('helper: ')}"


class Worker:
    def __init__(self, store: markertools_adapters.Store) -> None:
        self.store, self.ports = store, store.ports
        self.reports: dict[str, list[str]] = {}
        self.inputs: dict[str, list[tuple[str, ...]]] = {}
        self.starts: dict[str, list[StartKind]] = {}

    def step(self) -> bool:
        """One pass of the loop; False when there was nothing to do."""
        store, now = self.store, self.ports.clock.now()
        fire_due_automations(self.ports, now)  # 1.
        for lease in store.expired_leases(now, PROJECT):  # a host that died
            store.requeue_expired(
                lease.task_id, lease.host, now, affinity_seconds=0, reason=f"{lease.host} died"
            )
        claim = store.claim_task(PROJECT, HOST, now=now, lease_seconds=LEASE)  # 2.
        if claim is None:
            return False
        task = claim.task
        self.starts.setdefault(task.id, []).append(claim.start)
        inputs = claim_inputs(claim, store)  # 3.
        self.inputs.setdefault(task.id, []).append(inputs)
        turn = len(self.inputs[task.id])
        answer = fake_agent(task, "\n".join(inputs))  # 4.
        report = deliver_turn(
            answer,
            sender=task.id,
            outcome="completed",
            ports=self.ports,
            turn_id=f"turn-{turn}",
            claim=claim,  # a host that lost the task writes nothing (LeaseLost)
        )
        if report.queued_followups:
            self.reports.setdefault(task.id, []).append(report.message or "")
        store.finish_turn(  # 5. status, cost row (round numbered by the store), quota: once
            task.id,
            f"turn-{turn}",
            outcome="completed",
            result_text=answer,
            cost=TurnCost("0.01", 1200),
            requeue=bool(report.queued_followups),  # its report is the next turn's input
            claim=claim,
        )
        return True

    def run(self, max_steps: int = 50) -> None:
        for _ in range(max_steps):
            if not self.step():
                return


class OtherSlotsClock(VirtualClock):
    """Virtual time in which the worker's other slots keep working whenever time passes -
    so while the lead waits for its helpers, they get claimed and done."""

    worker: Worker

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        self.worker.run()


def main() -> list[str]:
    clock = OtherSlotsClock(NOW)
    store = markertools_adapters.connect(
        "memory:", executor="noop", clock=clock, random=SeededRandom(1)
    )
    store.put_project(Project(PROJECT, "shop"))
    store.set_permissions("alice", PROJECT, ["read", "create_task", "approve_merge"])
    store.put_quota(Quota("alice", total_usd=10.0))
    store.insert_task(
        Task("lead", PROJECT, status="queued", created_by="alice", prompt="lead: release 2.0")
    )
    store.insert_automation(
        Automation(
            "nightly",
            PROJECT,
            "nightly",
            "helper: summarise the day",
            created_by="alice",
            created_at=NOW,
        )
    )
    worker = Worker(store)
    clock.worker = worker
    worker.run()

    first, second = worker.reports["lead"][:2]
    last_input = worker.inputs["lead"][-1][-1]
    starts = ", ".join(worker.starts["lead"])
    return [
        first,
        second,
        "next input queued for lead: " + repr(last_input),
        "the lead's claims: " + starts,
    ]


if __name__ == "__main__":
    for part in main():
        print(part)
        print("-" * 60)
