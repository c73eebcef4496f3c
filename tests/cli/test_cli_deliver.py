"""`markertools deliver` (docs/cli.md): human output (report + what changed), the `--json`
document, virtual time, and usage errors as one stderr line with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import TESTS
from typer.testing import CliRunner

from markertools_adapters.cli import app
from markertools_adapters.world import world_from_json

WORLD = {
    "now": "2026-12-27T10:00:00+08:00",
    "projects": [{"id": "p1", "name": "shop"}],
    "permissions": [
        {"user": "u1", "project": "p1", "grants": ["read", "create_task", "approve_merge"]}
    ],
    "tasks": [
        {"id": "t1", "project_id": "p1", "created_by": "u1", "prompt": "lead"},
        {
            "id": "t2",
            "project_id": "p1",
            "created_by": "u1",
            "parent_task_id": "t1",
            "result_text": "half done",
        },
        {
            "id": "t3",
            "project_id": "p1",
            "created_by": "u1",
            "status": "failed",
            "error_text": "boom",
        },
    ],
}
TURN = """Working on it.

```task-create
{"name": "docs", "prompt": "write the docs"}
```

```task-cancel
{"task_id": "t2"}
```

```wait-threads
{"task_ids": ["@docs"], "timeout_seconds": 300}
```

```task-retry
{"task_id": "nope"}
```

```goal-convert
{"goal": "finish the release"}
```
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    world = tmp_path / "world.json"
    world.write_text(json.dumps(WORLD), encoding="utf-8")
    turn = tmp_path / "turn.md"
    turn.write_text(TURN, encoding="utf-8")
    return world, turn


def run(*args: str, stdin: str | None = None):
    return CliRunner().invoke(app, ["deliver", *args], input=stdin)


def test_json_document_has_the_documented_shape(files):
    world, turn = files
    result = run(str(turn), "--world", str(world), "--sender", "t1", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    # the documented keys, plus additive ones (docs/cli.md: shapes only ever grow)
    assert set(doc) >= {"delivered", "entries", "message", "followups", "world"}
    assert doc["world_scope"] == "full" and isinstance(doc["changes"], list)
    assert doc["delivered"] is True
    assert [(e["kind"], e["outcome"]) for e in doc["entries"]] == [
        ("task-create", "done"),
        ("task-cancel", "done"),
        ("task-retry", "rejected"),
        ("wait-threads", "done"),
        ("goal-convert", "done"),
    ]
    for entry in doc["entries"]:
        assert set(entry) == {"kind", "line", "outcome", "target", "reason"}
    assert doc["entries"][2]["target"] == "nope" and "does not exist" in doc["entries"][2]["reason"]
    assert doc["followups"] == [doc["message"], "/goal finish the release"]
    after = world_from_json(doc["world"])
    created = [t for t in after.tasks if t.id not in {"t1", "t2", "t3"}]
    assert len(created) == 1 and created[0].parent_task_id == "t1" and created[0].status == "queued"
    assert {t.id: t.status for t in after.tasks}["t2"] == "interrupted"
    # time is virtual: the 300-second wait finished at once and moved `now`
    assert after.now == world_from_json(WORLD).now + 300


def test_human_output_shows_the_report_and_what_changed(files):
    world, turn = files
    result = run(str(turn), "--world", str(world), "--sender", "t1")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.startswith("Report queued for t1:")
    assert "markertools report: 5 block(s)" in out
    assert "What changed:" in out
    assert "tasks created:" in out and 'prompt "write the docs"' in out
    assert '~ t2: status "running" -> "interrupted"' in out
    assert "follow-ups queued:" in out and '"/goal finish the release"' in out
    assert "virtual time passed: 300 s" in out


@pytest.mark.rule("TRN-3")
def test_a_failed_turn_is_not_delivered(files):
    world, turn = files
    result = run(
        str(turn), "--world", str(world), "--sender", "t1", "--outcome", "failed", "--json"
    )
    doc = json.loads(result.stdout)
    assert (doc["delivered"], doc["entries"], doc["message"], doc["followups"]) == (
        False,
        [],
        None,
        [],
    )
    human = run(str(turn), "--world", str(world), "--sender", "t1", "--outcome", "timed_out")
    assert human.exit_code == 0
    assert human.stdout.startswith("Not delivered: turn not delivered: the turn ended 'timed_out'")


@pytest.mark.rule("INJ-6")
def test_chinese_report_and_stdin(files):
    world, _turn = files
    result = run(
        "-", "--world", str(world), "--sender", "t1", "--locale", "zh", "--json", stdin=TURN
    )
    doc = json.loads(result.stdout)
    assert "markertools 报告" in doc["message"]
    assert "不存在" in doc["entries"][2]["reason"]


@pytest.mark.parametrize(
    "args,needle",
    [
        (["TURN", "--world", "WORLD"], "--sender ID is required"),
        (["TURN", "--sender", "t1"], "exactly one of --world"),
        (["TURN", "--world", "WORLD", "--db", "x.db", "--sender", "t1"], "exactly one of --world"),
        (["TURN", "--world", "WORLD", "--sender", "t1", "--outcome", "done"], "--outcome 'done'"),
        (["TURN", "--world", "WORLD", "--sender", "t1", "--locale", "fr"], "--locale 'fr'"),
        (["--world", "WORLD", "--sender", "t1"], "transcript FILE"),
        (["missing.md", "--world", "WORLD", "--sender", "t1"], "missing.md: cannot read"),
        (["TURN", "--world", "WORLD", "--sender", "t9"], "--sender t9: no such task"),
        (
            ["TURN", "--world", "WORLD", "--sender", "t1", "--turn", "x"],
            "--turn needs --codex-events",
        ),
        (["TURN", "--world", "WORLD", "--sender", "t1", "--executor", "bogus"], "--executor bogus"),
        (
            ["TURN", "--world", "WORLD", "--sender", "t1", "--worktrees", "/no/such/dir"],
            "not a directory",
        ),
        (["TURN", "--db", "/no/such.db", "--sender", "t1"], "no such database"),
        (["TURN", "--world", "BADWORLD", "--sender", "t1"], "tasks[0].status: expected one of"),
        (["TURN", "--world", "NOOFFSET", "--sender", "t1"], "has no UTC offset"),
        (["BINARY", "--world", "WORLD", "--sender", "t1"], "not UTF-8"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(files, tmp_path, args, needle):
    world, turn = files
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps({"now": 1, "tasks": [{"id": "t1", "project_id": "p", "status": "done"}]})
    )
    no_offset = tmp_path / "nooffset.json"
    no_offset.write_text(json.dumps({**WORLD, "now": "2026-12-27T10:00:00"}))
    binary = tmp_path / "binary.md"
    binary.write_bytes(b"\xff\xfe\x00bad")
    names = {"TURN": turn, "WORLD": world, "BADWORLD": bad, "NOOFFSET": no_offset, "BINARY": binary}
    result = run(*(str(names.get(a, a)) for a in args))
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("markertools: ") and needle in lines[0], (
        result.stderr
    )


def test_the_installed_command_exits_2_without_a_traceback(files, tmp_path):
    world, turn = files
    exe = Path(sys.executable).with_name("markertools")
    ok = subprocess.run(
        [str(exe), "deliver", str(turn), "--world", str(world), "--sender", "t1", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0 and json.loads(ok.stdout)["delivered"] is True
    bad = subprocess.run(
        [str(exe), "deliver", str(turn), "--world", str(world), "--sender", "ghost"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


CODEX = TESTS / "fixtures" / "codex" / "appserver_stream.jsonl"


@pytest.mark.rule("TRN-3")
def test_codex_events_deliver_the_last_completed_turn_and_use_its_status(files):
    world, _turn = files
    last = run("--codex-events", str(CODEX), "--world", str(world), "--sender", "t1", "--json")
    assert last.exit_code == 0, last.stderr
    assert json.loads(last.stdout)["delivered"] is True
    failed = run(
        "--codex-events",
        str(CODEX),
        "--turn",
        "turn_a3",
        "--world",
        str(world),
        "--sender",
        "t1",
        "--json",
    )
    assert failed.exit_code == 0, failed.stderr
    assert json.loads(failed.stdout)["delivered"] is False


@pytest.mark.parametrize(
    "extra,needle",
    [(["TURN"], "not both"), (["--outcome", "completed"], "--outcome cannot be combined")],
)
def test_codex_events_option_conflicts(files, extra, needle):
    world, turn = files
    args = [str(turn) if a == "TURN" else a for a in extra]
    result = run(*args, "--codex-events", str(CODEX), "--world", str(world), "--sender", "t1")
    assert result.exit_code == 2 and needle in result.stderr
