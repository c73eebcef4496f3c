"""`markertools world load`: `--merge` adds records or refuses conflicts and changes
nothing then; a value outside its enumeration is refused before a database is created;
a world file with several problems names them all, on one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import cli, one_line_failure
from typer.testing import CliRunner

from markertools_adapters.cli import app

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


def _world_file(tmp_path: Path, name: str, world: dict[str, object]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(world))
    return path


def test_world_load_merge_adds_and_refuses_conflicts(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    base = _world_file(tmp_path, "base.json", WORLD)
    assert runner.invoke(app, ["world", "load", str(base), "--db", str(db)]).exit_code == 0
    extra = {
        "now": 1,
        "projects": WORLD["projects"],  # identical: kept once
        "tasks": [{"id": "t3", "project_id": "p1", "prompt": "new"}],
        "todos": [{"id": "d1", "project_id": "p1", "title": "x"}],
    }
    added = runner.invoke(app, ["world", "load", "--merge", str(_world_file(tmp_path, "e.json", extra)), "--db", str(db)])
    assert added.exit_code == 0, added.stderr
    assert "added 1 task, 1 todo" in added.stdout
    again = runner.invoke(app, ["world", "load", "--merge", str(tmp_path / "e.json"), "--db", str(db)])
    assert again.exit_code == 0 and "nothing added" in again.stdout
    clash = {"now": 1, "tasks": [{"id": "t1", "project_id": "p1", "prompt": "other"}],
             "projects": [{"id": "p1", "name": "renamed"}]}
    before = runner.invoke(app, ["world", "dump", "--db", str(db)]).stdout
    refused = runner.invoke(app, ["world", "load", "--merge", str(_world_file(tmp_path, "c.json", clash)), "--db", str(db)])
    assert refused.exit_code == 2
    assert "projects p1" in refused.stderr and "tasks t1" in refused.stderr
    dumped = runner.invoke(app, ["world", "dump", "--db", str(db)]).stdout
    assert dumped == before  # nothing changed
    doc = json.loads(dumped)
    assert [t["id"] for t in doc["tasks"]] == ["t1", "t2", "t3"]
    assert doc["now"] == WORLD["now"]  # the database keeps its own time
    reloaded = tmp_path / "again.db"
    assert runner.invoke(app, ["world", "load", str(_world_file(tmp_path, "d.json", doc)), "--db", str(reloaded)]).exit_code == 0


@pytest.mark.parametrize(
    ("record", "path"),
    [
        ({"tasks": [{"id": "t", "project_id": "p", "status": "done"}]}, "tasks[0].status"),
        ({"automations": [{"id": "a", "project_id": "p", "status": "done"}]}, "automations[0].status"),
        ({"automations": [{"id": "a", "project_id": "p", "bind": "hourly"}]}, "automations[0].bind"),
        ({"permissions": [{"user": "u", "project": "p", "grants": ["admin"]}]}, "permissions[0].grants[0]"),
        ({"audit": [{"sender": "t", "kind": "k", "target": None, "outcome": "weird", "reason": "", "time": 1}]}, "audit[0].outcome"),
        ({"attempts": [{"task_id": "t", "attempt_no": 1, "kind": "manual"}]}, "attempts[0].kind"),
    ],
)
def test_values_outside_their_enumeration_are_refused_at_load(
    tmp_path: Path, record: dict[str, object], path: str
) -> None:
    world = _world_file(tmp_path, "bad.json", {"now": 1, **record})
    result = runner.invoke(app, ["world", "load", str(world), "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 2
    assert f"{path}: expected one of" in result.stderr
    assert not (tmp_path / "x.db").exists()


def test_a_world_file_with_several_problems_names_them_all(tmp_path: Path) -> None:
    world = {
        "now": 1,
        "tasks": [
            {"id": "a", "project_id": "p", "status": "done"},
            {"id": "b"},
            {"id": "c", "project_id": "p", "stauts": "running"},
        ],
    }
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(world))
    line = one_line_failure(cli("world", "load", str(path), "--db", "w.db", cwd=tmp_path), "")
    assert "tasks[1].project_id: required field missing (2 more problems: " in line
    assert "tasks[2]: unknown field(s) 'stauts'" in line
    assert "tasks[0].status: expected one of queued, running" in line and 'got "done"' in line
    assert "more problem(s)" not in line
