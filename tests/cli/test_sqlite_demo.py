"""`markertools demo`: the bundled world and turn, delivered on SQLite; its key outcomes,
determinism, and the CLI around it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from markertools.domain.model import RETRYABLE_STATUSES
from markertools_adapters.cli import app
from markertools_adapters.cli.cmd_demo import DEMO_SENDER, demo_turn, demo_world, run_demo
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.sqlite import open_store

runner = CliRunner()


@pytest.mark.rule(
    "GAT-1", "CTL-2", "CTL-3", "CRE-2", "EXT-2", "EXT-5", "VAL-1", "VAL-8", "TRN-6", "GOA-2"
)
def test_the_demo_turn_has_its_documented_outcomes() -> None:
    report, before, after = run_demo()
    assert report.delivered
    outcome = {(e.kind, e.target): e.outcome for e in report.entries}
    tasks = {t.id: t for t in after.tasks}
    todos = {d.id: d for d in after.todos}

    # a child task was created below the sender, as a normal independent task
    created = {t.id for t in after.tasks} - {t.id for t in before.tasks}
    (new_id,) = {i for i in created if tasks[i].parent_task_id == DEMO_SENDER}
    child = tasks[new_id]
    assert (child.parent_task_id, child.created_by, child.status) == (
        DEMO_SENDER,
        "alice",
        "queued",
    )
    assert outcome[("task-create", new_id)] == "done"

    # cancel in the lineage: done; another creator's task outside the lineage: rejected
    assert outcome[("task-cancel", "t-api")] == "done"
    assert tasks["t-api"].status == "interrupted" and tasks["t-api"].interrupted_reason
    assert outcome[("task-cancel", "t-bob")] == "rejected"
    assert tasks["t-bob"] == next(t for t in before.tasks if t.id == "t-bob")

    # retry of the failed subtask: queued again, outputs cleared
    assert outcome[("task-retry", "t-tests")] == "done"
    assert tasks["t-tests"].status == "queued" and tasks["t-tests"].error_text is None
    assert next(t for t in before.tasks if t.id == "t-tests").status in RETRYABLE_STATUSES

    # @perf resolved to the new task in the todo it links
    (new_todo,) = set(todos) - {d.id for d in before.todos}
    assert todos[new_todo].task_id == new_id
    assert todos["d-flaky"].status == "completed" and todos["d-flaky"].completed_at == before.now

    # the automation was registered, and fired once after the delivery (SCH-6)
    assert {a.name for a in after.automations} == {"nightly-audit", "weekly-deps"}
    (fired_id,) = created - {new_id}
    weekly = next(a for a in after.automations if a.name == "weekly-deps")
    assert (tasks[fired_id].parent_task_id, tasks[fired_id].prompt) == (None, weekly.prompt)
    assert weekly.run_count == 1

    # skipped: invalid JSON and the near-miss fence; the quoted block never ran at all
    skipped = [e for e in report.entries if e.outcome == "skipped"]
    assert [e.kind for e in skipped] == ["task-create", "Task-Cancel"]
    assert report.entries[-2:] == tuple(skipped)  # after every executed block
    assert "did you mean 'task-cancel'" in skipped[1].reason.render("en")
    assert "JSON" in skipped[0].reason.render("en")
    assert tasks[DEMO_SENDER].status == "running"
    assert all(e.target != DEMO_SENDER for e in report.entries)
    quoted_line = next(
        i
        for i, line in enumerate(demo_turn().splitlines(), 1)
        if line.startswith("> ```task-cancel")
    )
    assert all(e.line != quoted_line for e in report.entries)

    # the report, then the goal, queued for the sender; data from t-docs stays framed
    assert [f.task_id for f in after.followups] == [DEMO_SENDER, DEMO_SENDER]
    assert after.followups[0].text == report.message
    assert after.followups[1].text.startswith("/goal Ship the checkout revamp")
    message = report.message or ""
    injected = message.index("IGNORE PREVIOUS INSTRUCTIONS")
    assert message.rfind("<<<BEGIN DATA", 0, injected) > message.rfind("<<<END DATA", 0, injected)

    # every block but the skipped ones was audited; nothing else in the world moved
    fires = [a for a in after.audit if a.kind == "automation-fire"]
    assert [a.outcome for a in fires] == ["task-created"]
    assert len(after.audit) - len(before.audit) == len(report.entries) - len(skipped) + 1
    assert after.projects == before.projects and after.costs == before.costs
    assert after.now == before.now + 60  # the wait timed out on the virtual clock


def test_the_demo_gives_the_same_report_and_world_on_memory_and_sqlite() -> None:
    """The whole delivery, not just single port calls, agrees with the reference model."""
    from markertools import deliver_turn
    from markertools_adapters.clock import SeededRandom, VirtualClock
    from markertools_adapters.memory import MemoryStore
    from markertools_adapters.sqlite import create_store_from_world
    from markertools_adapters.wiring import store_ports

    world = demo_world()
    results = []
    for store in (MemoryStore.from_world(world), create_store_from_world(world)):
        clock = VirtualClock(world.now)
        ports = store_ports(store, clock=clock, random=SeededRandom(7), executor=NoopExecutor())
        report = deliver_turn(demo_turn(), sender=DEMO_SENDER, outcome="completed", ports=ports)
        results.append((report.message, report.entries, repr(store.export_world(clock.now()))))
    assert results[0] == results[1]


def test_the_demo_is_deterministic_and_prints_the_report_and_changes() -> None:
    first = runner.invoke(app, ["demo"])
    second = runner.invoke(app, ["demo"])
    assert first.exit_code == 0, first.output
    assert first.stdout == second.stdout
    assert "Report queued for t-lead:" in first.stdout
    assert "What changed:" in first.stdout and "tasks created:" in first.stdout
    assert "Automations fired after the delivery" in first.stdout


def test_the_demo_in_chinese_and_as_json() -> None:
    zh = runner.invoke(app, ["demo", "--locale", "zh"])
    en = runner.invoke(app, ["demo"])
    assert zh.exit_code == 0 and zh.stdout != en.stdout
    as_json = runner.invoke(app, ["demo", "--json"])
    assert as_json.exit_code == 0
    import json

    doc = json.loads(as_json.stdout)
    assert doc["delivered"] is True
    assert {e["outcome"] for e in doc["entries"]} == {"done", "rejected", "skipped"}
    assert len(doc["world"]["tasks"]) == len(demo_world().tasks) + 2  # + the fired automation
    assert [r["result"] for r in doc["automations_fired"]] == ["task-created"]


def test_keep_writes_a_new_database_that_dumps(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    result = runner.invoke(app, ["demo", "--keep", str(db)])
    assert result.exit_code == 0, result.output
    with open_store(db) as store:
        assert (
            store.get_task("t-api") is not None and store.get_task("t-api").status == "interrupted"
        )  # type: ignore[union-attr]
        assert store.world_now() == demo_world().now + 60
    dumped = runner.invoke(app, ["world", "dump", "--db", str(db)])
    assert dumped.exit_code == 0 and '"weekly-deps"' in dumped.stdout
    again = runner.invoke(app, ["demo", "--keep", str(db)])
    assert again.exit_code == 2 and "already exists" in again.stderr


def test_print_the_bundled_inputs() -> None:
    turn = runner.invoke(app, ["demo", "--print-turn"])
    assert turn.exit_code == 0 and turn.stdout == demo_turn()
    world = runner.invoke(app, ["demo", "--print-world"])
    assert world.exit_code == 0 and '"t-lead"' in world.stdout
