"""Quickstart: deliver one agent turn against the example world and print what happened.

Run it from anywhere (or paste it into a file):  .venv/bin/python examples/quickstart.py
"""

import markertools_adapters
from markertools import deliver_turn, parse_turn
from markertools_adapters.world import example_world

# The turn task t-lead of the example world just finished (any text with marker blocks).
TURN = """Split off the load test and check what t-docs wrote.

```task-create
{"name": "load-test", "prompt": "Run the checkout load test and report p95 latency."}
```

```todo-create
{"title": "Review the load test results", "task_id": "@load-test", "priority": "high"}
```

```task-poll
{"task_id": "t-docs", "chars": 300}
```
"""

plan = parse_turn(TURN)  # pure: TurnPlan(commands, issues), never raises
print(f"{len(plan.commands)} block(s) to run, {len(plan.issues)} issue(s)")

# The example world (examples/worlds/shop.json, what `markertools demo --print-world`
# prints) goes into a fresh in-memory SQLite database here; a worker connects to its own
# database the same way: "sqlite:///markertools.db", "postgresql://...". executor: what a
# task-cancel block stops (required; "noop" signals nothing, and the report says so).
with markertools_adapters.connect("sqlite:///:memory:", executor="noop") as store:
    store.load_world(example_world())
    report = deliver_turn(
        TURN,
        sender="t-lead",  # a task that exists in the world: the one whose turn this is
        outcome="completed",  # only a completed turn is delivered
        ports=store.ports,  # the ports the store carries (clock, random source, executor)
        locale="en",
        deadline=30.0,  # seconds all polls and waits of the turn may take together (default 600)
    )

print("delivered:", report.delivered)
if report.not_delivered is not None:  # why nothing ran, e.g. unknown-sender
    print("not delivered:", report.not_delivered.code, "-", report.not_delivered.reason.render())
for entry in report.entries:  # one per block: done / rejected / skipped / ignored
    print(f"  {entry.kind} (line {entry.line}) -> {entry.target or '-'}: {entry.outcome}")
print()
print(report.message or "(no report: nothing was delivered)")  # queued as t-lead's next input
