"""The simplest complete worker (docs/worker-loop.md): claim a task, run the agent on it,
deliver the turn's marker blocks, finish the turn - until nothing is left to do.

Run it from anywhere:  .venv/bin/python examples/simple_worker.py [DATABASE]
(default: sqlite:///simple-worker.db in the current directory; a new database first gets
a demo project with one queued task; postgresql://... and memory: work the same way).
"""

import sys
import uuid

import markertools_adapters
from markertools import Project, Quota, StartKind, Task, TurnCost, deliver_turn
from markertools_adapters.first_turn import first_turn_prompt

PROJECT, HOST = "p-demo", "worker-1"

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


def main(database: str) -> None:
    with markertools_adapters.connect(database, executor="local") as store:
        if store.get_project(PROJECT) is None:
            add_demo_work(store)
        while (claim := store.claim_task(PROJECT, HOST)) is not None:
            task = claim.task
            if claim.start is StartKind.CONTINUATION:  # the reports of its earlier turns
                inputs = claim.followups
            else:  # fresh / retry / resume / checkpoint: what the task is told first
                inputs = (first_turn_prompt(task, claim.start, store.ports).prompt,)
            text, turn_id, cost = run_agent(task, inputs)
            report = deliver_turn(
                text, sender=task.id, outcome="completed", ports=store.ports, turn_id=turn_id
            )
            done = store.finish_turn(  # status, cost and quota in one transaction, once
                task.id,
                turn_id,
                outcome="completed",
                result_text=text,
                cost=cost,
                requeue=bool(report.queued_followups),  # a report to read: run it again
            )
            print(f"{task.id} ({claim.start}): {len(report.entries)} block(s) -> {done.status}")
        quota = store.get_quota("alice")
        print(f"nothing queued; alice has spent ${quota.used_usd} of ${quota.total_usd}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sqlite:///simple-worker.db")
