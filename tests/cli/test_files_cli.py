"""`markertools deliver --worktrees DIR [--host NAME]`: task-files from the CLI, reading
a real worktree (FIL-1..5), and `--executor` choices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.strategies.files import SECRET, make_root, make_worktree
from typer.testing import CliRunner

from markertools_adapters.cli import app

WORLD = {
    "now": 1798333200,
    "projects": [{"id": "p1", "name": "shop"}],
    "permissions": [
        {"user": "u1", "project": "p1", "grants": ["read", "create_task", "approve_merge"]}
    ],
    "tasks": [
        {"id": "t1", "project_id": "p1", "created_by": "u1"},
        {"id": "t2", "project_id": "p1", "created_by": "u1", "parent_task_id": "t1"},
        {"id": "far", "project_id": "p1", "created_by": "u1", "host": "elsewhere"},
    ],
}

TURN = """Let me look at what t2 wrote.

```task-files
{"task_id": "t2", "path": "notes/plan.md"}
```

```task-files
{"task_id": "t2"}
```

```task-files
{"task_id": "t2", "path": "leak.txt"}
```

```task-files
{"task_id": "far"}
```
"""


def _setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    root, outside = make_root(tmp_path)
    wt = make_worktree(root, "t2")
    (wt / "notes").mkdir()
    (wt / "notes" / "plan.md").write_text("# Plan\n1. ship it\n")
    (wt / "leak.txt").symlink_to(outside / "secret.txt")
    world = tmp_path / "world.json"
    world.write_text(json.dumps(WORLD))
    turn = tmp_path / "turn.md"
    turn.write_text(TURN)
    return root, world, turn


@pytest.mark.rule("FIL-1", "FIL-2", "FIL-3", "FIL-4")
def test_deliver_reads_files_from_the_worktree_root(tmp_path: Path) -> None:
    root, world, turn = _setup(tmp_path)
    result = CliRunner().invoke(
        app,
        [
            "deliver",
            str(turn),
            "--world",
            str(world),
            "--sender",
            "t1",
            "--worktrees",
            str(root),
            "--host",
            "h1",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    entries = out["entries"]
    assert [(e["kind"], e["outcome"], e["target"]) for e in entries] == [
        ("task-files", "done", "t2"),
        ("task-files", "done", "t2"),
        ("task-files", "rejected", "t2"),
        ("task-files", "rejected", "far"),
    ]
    assert "# Plan\n1. ship it\n" in entries[0]["reason"]
    assert "leak.txt" in entries[1]["reason"] and "notes/" in entries[1]["reason"]
    assert "outside the task's worktree" in entries[2]["reason"]
    assert "elsewhere" in entries[3]["reason"]
    assert SECRET not in result.stdout


def test_deliver_without_worktrees_reports_no_resolver(tmp_path: Path) -> None:
    _, world, turn = _setup(tmp_path)
    result = CliRunner().invoke(
        app, ["deliver", str(turn), "--world", str(world), "--sender", "t1", "--json"]
    )
    assert result.exit_code == 0, result.output
    reasons = [e["reason"] for e in json.loads(result.stdout)["entries"]]
    assert all("no worktree resolver is configured" in r for r in reasons[:3])


def test_deliver_with_a_missing_worktree_root_is_a_usage_error(tmp_path: Path) -> None:
    _, world, turn = _setup(tmp_path)
    result = CliRunner().invoke(
        app,
        [
            "deliver",
            str(turn),
            "--world",
            str(world),
            "--sender",
            "t1",
            "--worktrees",
            str(tmp_path / "nope"),
        ],
    )
    assert result.exit_code == 2
    assert "--worktrees" in result.output
