"""The docs/cli.md contracts as an outside checker sees them - through the installed
`markertools` console script, in a temporary directory, with hostile inputs.

Every failure must be exit code 2 with exactly one stderr line and no traceback; every
JSON document must have the documented fields and types.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

EXE = Path(sys.executable).with_name("markertools")

WORLD: dict[str, Any] = {
    "now": "2027-01-01T08:00:00+08:00",
    "permissions": [
        {"user": "u1", "project": "p1", "grants": ["read", "create_task", "approve_merge"]}
    ],
    "tasks": [
        {"id": "t1", "project_id": "p1", "created_by": "u1"},
        {"id": "t2", "project_id": "p1", "created_by": "u1", "parent_task_id": "t1"},
        {"id": "g1", "project_id": "p1", "created_by": "u1", "goal_mode": True},
        {"id": "c1", "project_id": "p1", "created_by": "u1", "is_coordinator": True},
        {"id": "x1", "project_id": "p1", "created_by": "u1", "status": "interrupted"},
    ],
}
TURN = (
    '```task-create\n{"prompt": "child", "name": "kid"}\n```\n'
    '```task-read\n{"task_id": "@kid", "wait_seconds": 90}\n```\n'
    '```task_cancel\n{"to": "t2"}\n```\n'
    "```task-create\nnot json\n```\n"
    "```Task-List\n{}\n```\n"
    '```goal-convert\n{"goal": "ship"}\n```\n'
)


def cli(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> Done:
    raw = subprocess.run([str(EXE), *args], input=stdin or b"", capture_output=True,
                         timeout=120, cwd=cwd)  # fmt: skip
    done = Done(raw.returncode, raw.stdout.decode("utf-8"), raw.stderr.decode("utf-8"))
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    return done


@attrs.frozen
class Done:
    returncode: int
    stdout: str
    stderr: str


def fails_in_one_line(done: Done, needle: str = "") -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("markertools: "), done.stderr
    assert needle in lines[0], done.stderr
    assert "internal error" not in lines[0], done.stderr


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "world.json").write_text(json.dumps(WORLD))
    (tmp_path / "turn.md").write_text(TURN)
    (tmp_path / "binary.md").write_bytes(b"\xff\xfe\x00bad")
    (tmp_path / "empty.md").write_bytes(b"")
    (tmp_path / "dir").mkdir()
    (tmp_path / "notdb.sqlite").write_text("not a database")
    sqlite3.connect(tmp_path / "other.db").execute("CREATE TABLE foo (x)").connection.close()
    return {p.name: p for p in tmp_path.iterdir()}


# ---- parse ------------------------------------------------------------------------------


def test_parse_json_from_stdin_has_the_documented_shape(files):
    done = cli("parse", "-", "--json", stdin=TURN.encode())
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    kinds = [c["kind"] for c in doc["commands"]]
    assert kinds == ["task-create", "task-cancel", "task-poll", "goal-convert"]  # TRN-1
    for command in doc["commands"]:
        assert isinstance(command["line"], int) and isinstance(command["params"], dict)
    poll = doc["commands"][2]["params"]
    assert poll == {"task_id": "@kid", "interval_seconds": 60, "timeout_seconds": 90, "chars": 2000}
    assert doc["commands"][1]["params"] == {"task_id": "t2"}  # `to` -> canonical task_id
    assert [(i["kind"], i["line"], i["outcome"]) for i in doc["issues"]] == [
        ("task-create", 10, "skipped"),
        ("Task-List", 13, "unknown"),
    ]
    assert "did you mean 'task-list'?" in doc["issues"][1]["reason"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["parse", "missing.md"], "missing.md: cannot read"),
        (["parse", "dir"], "dir: cannot read"),
        (["parse", "binary.md", "--json"], "not UTF-8"),
        (["parse", "turn.md", "extra"], "unexpected extra argument"),
        (["parse", "turn.md", "--bogus"], "No such option: --bogus"),
        (["parse"], "missing FILE"),
        (["parse", "turn.md", "--turn", "x"], "--turn needs"),
        (["parse", "--codex-events", "missing.jsonl"], "missing.jsonl"),
        (["parse", "--codex-events", "empty.md", "--turn", "nope"], "holds no Codex records"),
    ],
)
def test_parse_failures_are_one_line(files, args, needle):
    cwd = files["turn.md"].parent
    fails_in_one_line(cli(*args, cwd=cwd), needle)


def test_parse_of_an_empty_file_and_of_invalid_utf8_on_stdin(files):
    done = cli("parse", str(files["empty.md"]), "--json")
    assert done.returncode == 0 and json.loads(done.stdout) == {"commands": [], "issues": []}
    fails_in_one_line(cli("parse", "-", stdin=b"\xff\xfe"), "not UTF-8")


# ---- deliver ----------------------------------------------------------------------------


def test_deliver_json_has_the_documented_shape(files):
    done = cli("deliver", str(files["turn.md"]), "--world", str(files["world.json"]),
               "--sender", "t1", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert {"delivered", "entries", "message", "followups", "world"} <= set(doc)
    assert doc["delivered"] is True and isinstance(doc["message"], str)
    assert doc["followups"] == [doc["message"], "/goal ship"]  # GOA-2
    for entry in doc["entries"]:
        assert set(entry) == {"kind", "line", "outcome", "target", "reason"}
        assert entry["outcome"] in ("done", "rejected", "skipped", "ignored")
        assert isinstance(entry["line"], int) and isinstance(entry["reason"], str)
    # TRN-6: executed in execution order, then skipped/near-miss in order of appearance
    assert [(e["kind"], e["outcome"]) for e in doc["entries"]] == [
        ("task-create", "done"),
        ("task-cancel", "done"),
        ("task-poll", "done"),
        ("goal-convert", "done"),
        ("task-create", "skipped"),
        ("Task-List", "skipped"),
    ]
    created = doc["entries"][0]["target"]
    child = next(t for t in doc["world"]["tasks"] if t["id"] == created)
    assert child["parent_task_id"] == "t1" and child["status"] == "queued"
    assert doc["entries"][2]["target"] == created  # @kid resolved


@pytest.mark.rule("TRN-3", "TRN-4", "TRN-5")
@pytest.mark.parametrize(
    "extra",
    [
        ["--sender", "t1", "--outcome", "failed"],
        ["--sender", "t1", "--outcome", "interrupted"],
        ["--sender", "g1"],
        ["--sender", "c1"],
        ["--sender", "x1"],
    ],
)
def test_nothing_delivered_means_empty_entries(files, extra):
    done = cli("deliver", str(files["turn.md"]), "--world", str(files["world.json"]),
               "--json", *extra)  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["delivered"] is False and doc["entries"] == [] and doc["followups"] == []
    assert [t["id"] for t in doc["world"]["tasks"]] == sorted(t["id"] for t in WORLD["tasks"])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["deliver", "turn.md", "--world", "missing.json", "--sender", "t1"], "missing.json"),
        (["deliver", "turn.md", "--world", "dir", "--sender", "t1"], "dir"),
        (["deliver", "turn.md", "--world", "binary.md", "--sender", "t1"], "not UTF-8"),
        (["deliver", "turn.md", "--world", "turn.md", "--sender", "t1"], "not JSON"),
        (["deliver", "turn.md", "--world", "world.json", "--sender", "ghost"], "no such task"),
        (["deliver", "turn.md", "--db", "notdb.sqlite", "--sender", "t1"], "not a database"),
        (["deliver", "turn.md", "--db", "other.db", "--sender", "t1"], "not a markertools"),
        (["deliver", "turn.md", "--db", "empty.md", "--sender", "t1"], "the file is empty"),
        (["deliver", "turn.md", "--db", "missing.db", "--sender", "t1"], "no such database"),
        (["deliver", "turn.md", "--db", "dir", "--sender", "t1"], "--db dir"),
        (["deliver", "turn.md", "--world", "world.json"], "--sender"),
        (["deliver", "turn.md", "--world", "world.json", "--sender", "t1", "--locale", "fr"], "fr"),
        (["deliver", "--world", "world.json", "--sender", "t1", "--nope"], "No such option"),
        (["deliver", "--codex-rollout", "x", "--world", "world.json"], "No such option"),
    ],
)
def test_deliver_failures_are_one_line(files, args, needle):
    fails_in_one_line(cli(*args, cwd=files["turn.md"].parent), needle)


def test_deliver_db_never_turns_a_foreign_file_into_a_database(files):
    """--db must name an existing markertools database: an empty file (which SQLite would
    happily treat as a new database) is refused and left exactly as it was."""
    for name in ("empty.md", "other.db"):
        before = files[name].read_bytes()
        fails_in_one_line(cli("deliver", str(files["turn.md"]), "--db", str(files[name]),
                              "--sender", "t1"))  # fmt: skip
        fails_in_one_line(cli("world", "dump", "--db", str(files[name])))
        fails_in_one_line(cli("prompt", "--db", str(files[name]), "--task", "t1"))
        assert files[name].read_bytes() == before


# ---- world files -----------------------------------------------------------------------


def test_world_defaults_and_round_trip(files, tmp_path):
    minimal = {
        "now": 1798333200,
        "tasks": [{"id": "t1", "project_id": "p1"}],
        "todos": [{"id": "d1", "project_id": "p1"}],
        "automations": [{"id": "a1", "project_id": "p1"}],
        "costs": [{"task_id": "t1"}],
        "quotas": [{"user": "u1"}],
    }
    (tmp_path / "min.json").write_text(json.dumps(minimal))
    db = tmp_path / "min.db"
    loaded = cli("world", "load", str(tmp_path / "min.json"), "--db", str(db))
    assert loaded.returncode == 0, loaded.stderr
    dumped = cli("world", "dump", "--db", str(db))
    world = json.loads(dumped.stdout)
    assert world["now"] == 1798333200
    t = world["tasks"][0]
    assert (t["status"], t["created_by"], t["goal_mode"], t["created_at"]) == (
        "running", None, False, 1798333200,
    )  # fmt: skip
    d = world["todos"][0]
    assert (d["status"], d["priority"], d["completed_at"]) == ("pending", "medium", None)
    a = world["automations"][0]
    assert (a["status"], a["run_count"], a["run_once"], a["created_at"]) == (
        "active", 0, False, 1798333200,
    )  # fmt: skip
    assert (a["name"], a["prompt"], a["first_run_at"], a["interval_seconds"]) == (
        "",
        "",
        None,
        86400,
    )
    assert world["costs"] == [
        {"task_id": "t1", "round": 0, "usd": None, "tokens": 0, "estimated": False, "priced": True}
    ]
    assert world["quotas"] == [{"user": "u1", "total_usd": None, "used_usd": 0}]
    (tmp_path / "again.json").write_text(dumped.stdout)
    again = cli("world", "load", str(tmp_path / "again.json"), "--db", str(tmp_path / "b.db"))
    assert again.returncode == 0
    assert cli("world", "dump", "--db", str(tmp_path / "b.db")).stdout == dumped.stdout
    fails_in_one_line(cli("world", "load", str(tmp_path / "min.json"), "--db", str(db)),
                      "already exists")  # fmt: skip


@pytest.mark.parametrize(
    ("patch", "needle"),
    [
        ({"now": "2027-01-01T00:00:00"}, "no UTC offset"),
        ({"now": True}, "now:"),
        ({"tasks": [{"id": "t1", "project_id": "p1", "status": "done"}]}, "tasks[0].status"),
        ({"tasks": [{"id": "t1", "project_id": "p1", "goal_mode": "yes"}]}, "tasks[0].goal_mode"),
        ({"tasks": [{"id": "t1", "project_id": "p1", "created_at": "x"}]}, "created_at"),
        ({"tasks": [{"id": "t1"}]}, "tasks[0].project_id"),
        ({"tasks": {"id": "t1"}}, "tasks: expected a list"),
        ({"todos": [{"id": "d1", "project_id": "p1", "priority": 3}]}, "todos[0].priority"),
        ({"costs": [{"task_id": "t1", "round": 1.5}]}, "costs[0].round"),
        ({"quotas": [{"user": "u1", "total_usd": "50"}]}, "quotas[0].total_usd"),
        ({"permissions": [{"user": "u", "project": "p", "grants": ["root"]}]}, "grants[0]"),
        ({"projects": [{"id": "p1", "environment": []}]}, "projects[0].environment"),
        ({"typo": []}, "typo: unknown top-level field"),
    ],
)
def test_an_invalid_world_names_the_bad_field(files, tmp_path, patch, needle):
    (tmp_path / "bad.json").write_text(json.dumps({**WORLD, **patch}))
    done = cli("deliver", str(files["turn.md"]), "--world", str(tmp_path / "bad.json"),
               "--sender", "t1")  # fmt: skip
    fails_in_one_line(done, needle)


# ---- the other commands -------------------------------------------------------------------


def test_bare_and_help_invocations(files):
    assert cli("--help").returncode == 0
    listing = cli("--help").stdout
    # every command's summary is one clean sentence, never broken mid-sentence
    assert "print the report and\n" not in listing and "and │\n│ what changed" not in listing
    assert cli().returncode == 2  # no command: click prints the help, exit 2
    fails_in_one_line(cli("plan", "validate"), "Missing argument")
    fails_in_one_line(cli("world", "dump"), "Missing option '--db'")
    fails_in_one_line(cli("nosuchcommand"), "No such command")


def test_guide_schema_and_plan(files, tmp_path):
    assert cli("guide", "--locale", "zh", "task-poll").returncode == 0
    fails_in_one_line(cli("guide", "nosuchkind"))
    schemas = json.loads(cli("schema").stdout)
    assert "task-create" in schemas and "wait-threads" in schemas
    assert json.loads(cli("schema", "task-poll").stdout)["type"] == "object"
    fails_in_one_line(cli("schema", "nosuchkind"))
    (tmp_path / "plan.json").write_text("{}")
    invalid = cli("plan", "validate", str(tmp_path / "plan.json"), "--json")
    assert invalid.returncode == 1
    doc = json.loads(invalid.stdout)
    assert doc["valid"] is False and all(set(e) == {"path", "message"} for e in doc["errors"])
    fails_in_one_line(cli("plan", "validate", str(files["binary.md"])))
    fails_in_one_line(cli("plan", "validate", str(tmp_path / "missing.json")))


def test_prompt_for_each_start(files):
    for start in ("fresh", "continuation", "checkpoint", "manual"):
        done = cli("prompt", "--world", str(files["world.json"]), "--task", "t1", "--start", start)
        assert done.returncode == 0, done.stderr
    fails_in_one_line(cli("prompt", "--world", str(files["world.json"]), "--task", "nope"))
    fails_in_one_line(
        cli("prompt", "--world", str(files["world.json"]), "--task", "t1", "--start", "x")
    )
