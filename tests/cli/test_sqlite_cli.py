"""`markertools world load / dump` (docs/cli.md): a new database from a world file, printed
back as the same world file; refusals are one stderr line and exit 2."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from support.strategies.sqlite import file_worlds
from typer.testing import CliRunner

from markertools_adapters.cli import app
from markertools_adapters.memory import MemoryStore
from markertools_adapters.sqlite import open_store
from markertools_adapters.world import World, dumps_world, loads_world

runner = CliRunner()

WORLD = {
    "now": "2026-12-29T09:00:00+08:00",
    "projects": [
        {
            "id": "p1",
            "name": "shop",
            "environment": {"name": "dev", "branch": "main", "status": "ready"},
        }
    ],
    "permissions": [
        {"user": "u1", "project": "p1", "grants": ["read", "create_task"]},
        {"user": "u2", "project": "p1", "grants": []},
    ],
    "tasks": [
        {
            "id": "t2",
            "project_id": "p1",
            "parent_task_id": "t1",
            "created_by": "u1",
            "prompt": "child",
        },
        {
            "id": "t1",
            "project_id": "p1",
            "created_by": "u1",
            "prompt": "root",
            "created_at": 1798330000.25,
        },
    ],
    "todos": [{"id": "d1", "project_id": "p1", "title": "write notes", "due_at": -0.0}],
    "automations": [{"id": "a1", "project_id": "p1", "name": "nightly", "prompt": "audit"}],
    "costs": [
        {"task_id": "t1", "round": 2, "usd": 0.1, "tokens": 5},
        {"task_id": "t1", "round": 1, "usd": None, "tokens": 7, "priced": False},
    ],
    "quotas": [{"user": "u1", "total_usd": None, "used_usd": 3.5}],
}


def _write(path: Path, obj: object) -> Path:
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def test_load_then_dump_prints_the_canonical_world(tmp_path: Path) -> None:
    src = _write(tmp_path / "w.json", WORLD)
    db = tmp_path / "w.db"
    loaded = runner.invoke(app, ["world", "load", str(src), "--db", str(db)])
    assert loaded.exit_code == 0, loaded.output
    assert loaded.stdout.startswith(f"created {db} from {src}: 1 project, 2 tasks, 1 todo")
    dumped = runner.invoke(app, ["world", "dump", "--db", str(db)])
    assert dumped.exit_code == 0, dumped.output
    given = loads_world(src.read_text())
    # canonical = what the reference model exports for the same records
    expected = MemoryStore.from_world(given).export_world(given.now)
    assert loads_world(dumped.stdout) == expected
    assert dumped.stdout == dumps_world(expected) + "\n"
    out = json.loads(dumped.stdout)
    assert [t["id"] for t in out["tasks"]] == ["t1", "t2"]  # canonical order
    assert out["permissions"][1] == {"user": "u2", "project": "p1", "grants": []}
    assert out["now"] == expected.now  # the world's virtual time is kept


def test_load_refuses_an_existing_path_and_leaves_it_alone(tmp_path: Path) -> None:
    src = _write(tmp_path / "w.json", WORLD)
    db = tmp_path / "exists.db"
    db.write_bytes(b"not yours")
    result = runner.invoke(app, ["world", "load", str(src), "--db", str(db)])
    assert result.exit_code == 2
    assert "already exists" in result.stderr and result.stderr.count("\n") == 1
    assert db.read_bytes() == b"not yours"


@pytest.mark.parametrize(
    ("world", "message"),
    [
        (
            {"now": 1, "tasks": [{"id": "t", "project_id": "p", "status": "sleeping"}]},
            "tasks[0].status",
        ),
        (
            {"now": 1, "tasks": [{"id": "t", "project_id": "p", "auto_resume_count": 2**70}]},
            "64-bit",
        ),
        ({"tasks": []}, "now"),
    ],
)
def test_load_of_a_bad_world_is_a_usage_error_and_creates_nothing(
    tmp_path: Path, world: dict[str, object], message: str
) -> None:
    src = _write(tmp_path / "bad.json", world)
    db = tmp_path / "bad.db"
    result = runner.invoke(app, ["world", "load", str(src), "--db", str(db)])
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not db.exists()


def test_dump_refuses_a_missing_or_foreign_file(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["world", "dump", "--db", str(tmp_path / "none.db")])
    assert missing.exit_code == 2 and "no such database" in missing.stderr
    assert not (tmp_path / "none.db").exists()
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not sqlite" * 100)
    result = runner.invoke(app, ["world", "dump", "--db", str(garbage)])
    assert result.exit_code == 2 and "cannot open" in result.stderr


@given(world=file_worlds)
@settings(max_examples=25)
def test_any_world_file_round_trips_through_a_database(world: World) -> None:
    text = dumps_world(world)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "w.json"
        src.write_text(text, encoding="utf-8")
        db = Path(tmp) / "w.db"
        assert runner.invoke(app, ["world", "load", str(src), "--db", str(db)]).exit_code == 0
        dumped = runner.invoke(app, ["world", "dump", "--db", str(db)])
        assert dumped.exit_code == 0
        assert dumped.stdout == text + "\n"
        # and the database holds exactly the file's records (floats bit for bit; the file
        # writer spells integral floats as integers, so -0.0 is written as 0)
        in_file = loads_world(text)
        with open_store(db) as store:
            assert repr(store.export_world(in_file.now)) == repr(in_file)


@pytest.mark.rule("TRN-11")
def test_deliver_on_a_loaded_database_runs_on_the_system_clock(tmp_path: Path) -> None:
    """Issue 18 (e): a database made by `world load` keeps the world's `now` for dating
    its records, but a `--db` delivery runs on the system clock: a wait really waits."""
    import time

    src = _write(tmp_path / "w.json", WORLD)
    db = tmp_path / "w.db"
    assert runner.invoke(app, ["world", "load", str(src), "--db", str(db)]).exit_code == 0
    turn = tmp_path / "turn.md"
    turn.write_text(
        'Waiting.\n\n```wait-threads\n{"task_ids": ["t1"], "timeout_seconds": 1}\n```\n\n'
        '```todo-update\n{"id": "d1", "status": "completed"}\n```\n',
        encoding="utf-8",
    )
    before = time.time()
    result = runner.invoke(app, ["deliver", str(turn), "--db", str(db), "--sender", "t2"])
    after = time.time()
    assert result.exit_code == 0, result.output
    assert after - before >= 1.0  # the wait timed out on the real clock
    start = loads_world(src.read_text()).now
    dumped = loads_world(runner.invoke(app, ["world", "dump", "--db", str(db)]).stdout)
    assert dumped.now == start  # the world's own time still dates its records
    (todo,) = dumped.todos
    # todo-update runs before wait-threads (TRN-1), at the system clock's time
    assert todo.status == "completed" and before <= todo.completed_at <= after
    assert [f.task_id for f in dumped.followups] == ["t2"]


def test_deliver_with_a_world_file_runs_on_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from markertools_adapters.cli import cmd_deliver
    from markertools_adapters.sqlite import SqliteStore

    seen: list[object] = []
    original = cmd_deliver.fresh_store

    def spy(world: World) -> object:
        store = original(world)
        seen.append(store)
        return store

    monkeypatch.setattr(cmd_deliver, "fresh_store", spy)
    src = _write(tmp_path / "w.json", WORLD)
    turn = tmp_path / "turn.md"
    turn.write_text("```task-list\n{}\n```\n", encoding="utf-8")
    result = runner.invoke(
        app, ["deliver", str(turn), "--world", str(src), "--sender", "t2", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert len(seen) == 1 and isinstance(seen[0], SqliteStore)
    doc = json.loads(result.stdout)
    assert doc["delivered"] is True and doc["entries"][0]["outcome"] == "done"
    assert not list(tmp_path.glob("*.db"))  # the fresh database lives in memory
