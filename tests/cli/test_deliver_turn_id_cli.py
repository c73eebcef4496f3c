"""`markertools deliver --db ... --turn-id ID` as a person runs it (issue 27 item 2): the
same turn id with the same file again is a replay; with another file it is one line on
stderr naming the turn id and both digests' heads, exit 2, and nothing is delivered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import cli, one_line_failure

from markertools import turn_digest

WORLD = {
    "now": 1798333200,
    "projects": [{"id": "p1", "name": "shop"}],
    "permissions": [{"user": "u1", "project": "p1", "grants": ["read", "create_task"]}],
    "tasks": [{"id": "t1", "project_id": "p1", "created_by": "u1", "prompt": "lead"}],
}
FIRST = '```todo-create\n{"title": "write docs"}\n```\n'
OTHER = '```todo-create\n{"title": "a todo that must never exist"}\n```\n'


@pytest.mark.rule("TRN-9")
def test_a_reused_turn_id_with_another_file_is_one_line_and_changes_nothing(
    tmp_path: Path,
) -> None:
    world, db = tmp_path / "w.json", tmp_path / "w.db"
    world.write_text(json.dumps(WORLD))
    assert cli("world", "load", str(world), "--db", str(db)).returncode == 0
    first, other = tmp_path / "first.md", tmp_path / "other.md"
    first.write_text(FIRST)
    other.write_text(OTHER)
    args = ("--db", str(db), "--sender", "t1", "--turn-id", "turn-7", "--json")
    done = cli("deliver", str(first), *args)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["replayed"] is False
    again = cli("deliver", str(first), *args)
    assert json.loads(again.stdout)["replayed"] is True
    refused = cli("deliver", str(other), *args)
    line = one_line_failure(refused, "turn id 'turn-7' of sender 't1'")
    assert turn_digest(FIRST)[:17] in line and turn_digest(OTHER)[:17] in line
    assert refused.stdout == ""
    dumped = json.loads(cli("world", "dump", "--db", str(db)).stdout)
    assert [t["title"] for t in dumped["todos"]] == ["write docs"]
