"""`markertools automations list|fire|pause|resume|update|delete` (docs/cli.md, SCH-6,
SCH-7), on SQLite; two `fire` processes at the same time create each task once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from markertools.deliver.automations_fire import automation_task_id
from markertools.domain.model import Automation, PermissionGrant
from markertools_adapters.cli import app
from markertools_adapters.sqlite import create_store_from_world, open_store
from markertools_adapters.world import World

runner = CliRunner()
NOW = 1_798_333_200.0
CREATED = NOW - 100


def make_db(tmp_path: Path, count: int = 2) -> Path:
    db = tmp_path / "a.db"
    automations = tuple(
        Automation(
            f"a{i:02}",
            "p1",
            f"job-{i}",
            f"do job {i}",
            created_by="u1",
            created_at=CREATED,
        )
        for i in range(count)
    )
    world = World(
        now=NOW,
        permissions=(PermissionGrant("u1", "p1", ("create_task",)),),
        automations=automations,
    )
    create_store_from_world(world, db).close()
    return db


@pytest.mark.rule("SCH-6")
def test_fire_json_lists_what_each_due_automation_became(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    result = runner.invoke(app, ["automations", "fire", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc == {
        "fired": [
            {
                "automation_id": f"a{i:02}",
                "slot": CREATED,
                "result": "task-created",
                "task_id": automation_task_id(f"a{i:02}", CREATED),
                "reason": f"automation 'job-{i}' fired for slot 1798333100 "
                "(2026-12-27T08:58:20+08:00): created task "
                f"{automation_task_id(f'a{i:02}', CREATED)} in project p1",
            }
            for i in range(2)
        ]
    }
    again = runner.invoke(app, ["automations", "fire", "--db", str(db), "--json"])
    assert json.loads(again.stdout) == {"fired": []}
    later = runner.invoke(
        app, ["automations", "fire", "--db", str(db), "--now", "2026-12-28T08:58:20+08:00"]
    )
    assert later.exit_code == 0 and later.stdout.count(": task-created:") == 2


@pytest.mark.rule("SCH-7")
def test_list_pause_resume_update_delete(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    listed = runner.invoke(app, ["automations", "list", "--db", str(db), "--json"])
    rows = json.loads(listed.stdout)["automations"]
    assert [(r["id"], r["status"], r["next_run_at"]) for r in rows] == [
        ("a00", "active", CREATED),
        ("a01", "active", CREATED),
    ]
    paused = runner.invoke(app, ["automations", "pause", "a00", "--db", str(db)])
    assert paused.exit_code == 0
    assert paused.stdout == "paused automation 'a00': it is never due until resumed\n"
    twice = runner.invoke(app, ["automations", "pause", "a00", "--db", str(db)])
    assert twice.exit_code == 2
    assert twice.stderr == "markertools: automation 'a00' is paused, not active; nothing changed\n"
    fired = runner.invoke(app, ["automations", "fire", "--db", str(db), "--json"])
    assert [r["automation_id"] for r in json.loads(fired.stdout)["fired"]] == ["a01"]
    assert runner.invoke(app, ["automations", "resume", "a00", "--db", str(db)]).exit_code == 0
    updated = runner.invoke(
        app,
        ["automations", "update", "a00", "--db", str(db), "--prompt", "new words",
         "--interval-seconds", "3600", "--once"],
    )  # fmt: skip
    assert updated.exit_code == 0, updated.output
    assert updated.stdout.startswith(
        "updated automation 'a00' (interval_seconds, prompt, run_once)"
    )
    bad = runner.invoke(
        app, ["automations", "update", "a00", "--db", str(db), "--interval-seconds", "5"]
    )
    assert bad.exit_code == 2
    assert "interval_seconds must be an integer from 60 to 2592000, not 5" in bad.stderr
    nothing = runner.invoke(app, ["automations", "update", "a00", "--db", str(db)])
    assert nothing.exit_code == 2 and "nothing to update" in nothing.stderr
    assert runner.invoke(app, ["automations", "delete", "a01", "--db", str(db)]).exit_code == 0
    human = runner.invoke(app, ["automations", "list", "--db", str(db)])
    assert human.stdout.startswith("a00  'job-0'  [active]") and "a01" not in human.stdout
    with open_store(db) as store:
        a00 = store.get_automation("a00")
        assert (a00.prompt, a00.interval_seconds, a00.run_once) == ("new words", 3600, True)
        assert store.get_automation("a01").status == "deleted"
    missing = runner.invoke(app, ["automations", "pause", "nope", "--db", str(db)])
    assert missing.exit_code == 2 and "no automation 'nope'" in missing.stderr
    no_db = runner.invoke(app, ["automations", "list", "--db", str(tmp_path / "none.db")])
    assert no_db.exit_code == 2 and "no such database file" in no_db.stderr


def test_a_bad_now_is_a_usage_error(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    result = runner.invoke(app, ["automations", "fire", "--db", str(db), "--now", "tomorrow"])
    assert result.exit_code == 2 and "--now 'tomorrow': expected epoch seconds" in result.stderr


@pytest.mark.rule("SCH-6", "SCH-4")
def test_two_fire_processes_at_the_same_time_create_each_task_once(tmp_path: Path) -> None:
    count = 30
    db = make_db(tmp_path, count)
    code = "from markertools_adapters.cli import main; main()"
    argv = [sys.executable, "-c", code, "automations", "fire", "--db", str(db), "--json"]
    procs = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    fired = [r for out, _ in outputs for r in json.loads(out)["fired"]]
    assert sorted(r["automation_id"] for r in fired) == [f"a{i:02}" for i in range(count)]
    assert {r["result"] for r in fired} == {"task-created"}
    with open_store(db) as store:
        world = store.export_world(NOW)
    assert sorted(t.id for t in world.tasks) == sorted(
        automation_task_id(f"a{i:02}", CREATED) for i in range(count)
    )
    assert all(a.run_count == 1 for a in world.automations)
    assert len([a for a in world.audit if a.kind == "automation-fire"]) == count
