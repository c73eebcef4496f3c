"""The simplest complete worker (docs/worker-loop.md): claim a task with a lease, run the
agent on it, deliver the turn's marker blocks, finish the turn - until nothing is left to
do. Safe in a fleet: every write carries the claim, a dead host's tasks are requeued, and
a delivery a crash cut off is finished before the task starts again.

Run it from anywhere:  .venv/bin/python examples/simple_worker.py [DATABASE]
(default: sqlite:///simple-worker.db in the current directory; a new database first gets
a demo project with one queued task; postgresql://... and memory: work the same way).
"""

import sys
import time
import uuid

import markertools_adapters
from markertools import Project, Quota, Task, TurnCost, deliver_turn
from markertools_adapters.first_turn import claim_inputs

PROJECT, HOST, LEASE = "p-demo", "worker-1", 60.0  # renew longer turns (worker.md)

PLAN = """I'll split the release: the tests get a task of their own.

```task-create
{"name": "tests", "prompt": "Make the release tests pass."}
```

```todo-create
{"title": "Review the test results", "task_id": "@tests"}
```
"""


def run_agent(task: Task, inputs: tuple[str, ...]) -> tuple[str, str, TurnCost]:
    """Your agent (Codex, ...): the turn's text, the turn's own id and what it cost. This
    stand-in plans on its first turn and is done once it has read the report."""
    turn_id = uuid.uuid4().hex  # Codex: the turn's id - unique per task, kept on a retry
    if task.prompt.startswith("Plan") and "markertools report" not in inputs[0]:
        return PLAN, turn_id, TurnCost("0.012", 1800)
    return f"Done: {task.prompt}", turn_id, TurnCost("0.004", 600)


def add_demo_work(store: markertools_adapters.Store) -> None:
    """Demo only: a project, its user (may create tasks, $10 quota), one queued task."""
    store.put_project(Project(PROJECT, "demo"))
    store.set_permissions("alice", PROJECT, ["read", "create_task"])
    store.put_quota(Quota("alice", total_usd=10))
    store.insert_task(
        Task("t-plan", PROJECT, status="queued", created_by="alice", prompt="Plan the release")
    )


def requeue_dead_hosts_tasks(store: markertools_adapters.Store) -> None:
    """A host that died (kill -9, a lost machine) stops renewing its leases: once one
    expires, its task goes back to the queue, with a ledger row naming why."""
    now = time.time()
    for lease in store.expired_leases(now, PROJECT):
        store.requeue_expired(
            lease.task_id, lease.host, now, affinity_seconds=0, reason=f"{lease.host} died"
        )


def main(database: str) -> None:
    with markertools_adapters.connect(database, executor="local") as store:
        if store.get_project(PROJECT) is None:
            add_demo_work(store)
        while True:
            requeue_dead_hosts_tasks(store)
            claim = store.claim_task(PROJECT, HOST, now=time.time(), lease_seconds=LEASE)
            if claim is None:
                break
            # a crash mid-delivery is finished first; then the prompt or the follow-ups
            inputs = claim_inputs(claim, store)
            text, turn_id, cost = run_agent(claim.task, inputs)
            report = deliver_turn(  # every write fenced: a host that lost the task
                text,  # writes nothing (LeaseLost)
                sender=claim.task.id,
                outcome="completed",
                ports=store.ports,
                turn_id=turn_id,
                claim=claim,
            )
            done = store.finish_turn(  # status, cost and quota in one transaction, once
                claim.task.id,
                turn_id,
                outcome="completed",
                result_text=text,
                cost=cost,
                requeue=bool(report.queued_followups),  # a report to read: run it again
                claim=claim,
            )
            print(f"{claim.task.id} ({claim.start}): {len(report.entries)} block(s) -> {done.status}")
        quota = store.get_quota("alice")
        print(f"nothing queued; alice has spent ${quota.used_usd} of ${quota.total_usd}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sqlite:///simple-worker.db")
