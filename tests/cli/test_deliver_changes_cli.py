""""What changed" after `markertools deliver`: with `--db`, from what the delivery touched
(`--json --touched-only` holds only those records and needs `--json`); times a person
reads are ISO 8601, never raw epoch floats (TDU-3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import cli
from support.paths import REPO
from typer.testing import CliRunner

from markertools_adapters.cli import app

SHOP = REPO / "examples" / "worlds" / "shop.json"
runner = CliRunner()


WORLD = {
    "now": 1798333200,
    "projects": [{"id": "p1", "name": "shop"}],
    "permissions": [{"user": "u1", "project": "p1", "grants": ["read", "create_task"]}],
    "tasks": [
        {"id": "t1", "project_id": "p1", "created_by": "u1", "prompt": "lead"},
        {"id": "t2", "project_id": "p1", "created_by": "u1", "parent_task_id": "t1", "prompt": "c"},
    ],
}


TURN = (
    '```task-create\n{"prompt": "run tests"}\n```\n'
    '```task-cancel\n{"task_id": "t2"}\n```\n'
    '```todo-create\n{"title": "write docs"}\n```\n'
)


def _world_file(tmp_path: Path, name: str, world: dict[str, object]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(world))
    return path


def test_deliver_db_reports_what_the_delivery_touched(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    turn = tmp_path / "turn.md"
    turn.write_text(TURN)
    runner.invoke(app, ["world", "load", str(_world_file(tmp_path, "w.json", WORLD)), "--db", str(db)])
    human = runner.invoke(app, ["deliver", str(turn), "--db", str(db), "--sender", "t1"])
    assert human.exit_code == 0, human.stderr
    out = human.stdout
    assert "tasks created:" in out and "tasks changed:" in out and "todos created:" in out
    assert '~ t2: status "running" -> "interrupted"' in out
    assert "audit records written: 3" in out and "follow-ups queued:" in out
    assert "no executor is configured (noop executor)" in out
    touched = runner.invoke(
        app, ["deliver", str(turn), "--db", str(db), "--sender", "t1", "--json", "--touched-only"]
    )
    doc = json.loads(touched.stdout)
    assert doc["world_scope"] == "touched"
    ids = {t["id"] for t in doc["world"]["tasks"]}
    assert "t2" not in ids or all(t["status"] == "interrupted" for t in doc["world"]["tasks"] if t["id"] == "t2")
    assert "t1" not in ids  # the sender was only read
    assert len(doc["world"]["audit"]) == 3 and doc["changes"]
    full = runner.invoke(app, ["deliver", str(turn), "--db", str(db), "--sender", "t1", "--json"])
    assert json.loads(full.stdout)["world_scope"] == "full"
    assert "t1" in {t["id"] for t in json.loads(full.stdout)["world"]["tasks"]}


def test_touched_only_needs_json(tmp_path: Path) -> None:
    result = runner.invoke(app, ["deliver", "-", "--world", "w.json", "--sender", "t1", "--touched-only"])
    assert result.exit_code == 2 and "--touched-only" in result.stderr


@pytest.mark.rule("TDU-3")
def test_what_changed_shows_times_as_iso_8601(tmp_path: Path) -> None:
    turn = tmp_path / "todo.md"
    turn.write_text('```todo-update\n{"id": "d-flaky", "status": "completed"}\n```\n')
    done = cli("deliver", str(turn), "--world", str(SHOP), "--sender", "t-lead")
    assert done.returncode == 0, done.stderr
    # the report the agent reads and the "What changed" a person reads
    assert "completed_at null -> 2026-12-29T09:00:00+08:00" in done.stdout
    assert (
        '~ d-flaky: status "in_progress" -> "completed"; completed_at null -> 2026-12-29T09:00:00+08:00'
        in done.stdout
    )
    assert "1798506000" not in done.stdout
