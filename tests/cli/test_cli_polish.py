"""CLI polish (issue 19): exit codes 0/1/2/3, internal errors as one line (the traceback
only when asked for), help that names value types in words, typer's shell completion,
a Codex file of the wrong format, `world load --merge`, `deliver --db` from what the
delivery touched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from markertools_adapters.cli import _app as cli_app
from markertools_adapters.cli import _main as cli_main
from markertools_adapters.cli import app, cmd_parse

MARKERTOOLS = str(Path(sys.executable).with_name("markertools"))
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


def _run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *argv: str
) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["markertools", *argv])
    monkeypatch.setitem(cli_app._STATE, "debug", False)  # --debug of an earlier run
    with pytest.raises(SystemExit) as exit_info:
        cli_main.run()
    return int(exit_info.value.code or 0), capsys.readouterr().err


def _boom(text: str) -> object:
    raise RuntimeError("a bug")


def test_an_internal_error_exits_3_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    turn = tmp_path / "t.md"
    turn.write_text("hi")
    monkeypatch.delenv("MARKERTOOLS_DEBUG", raising=False)
    monkeypatch.setattr(cmd_parse, "parse_turn", _boom)
    code, err = _run(monkeypatch, capsys, "parse", str(turn))
    assert code == 3
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("markertools: internal error: RuntimeError: a bug; please report")
    assert "--debug" in err


@pytest.mark.parametrize("how", ["flag", "env"])
def test_debug_shows_the_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    turn = tmp_path / "t.md"
    turn.write_text("hi")
    monkeypatch.setattr(cmd_parse, "parse_turn", _boom)
    if how == "env":
        monkeypatch.setenv("MARKERTOOLS_DEBUG", "1")
        code, err = _run(monkeypatch, capsys, "parse", str(turn))
    else:
        monkeypatch.delenv("MARKERTOOLS_DEBUG", raising=False)
        code, err = _run(monkeypatch, capsys, "--debug", "parse", str(turn))
    assert code == 3
    assert "internal error: RuntimeError: a bug" in err and "Traceback" in err


def test_usage_errors_still_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _run(monkeypatch, capsys, "parse", "--no-such-option")
    assert code == 2 and err.count("\n") == 1


@pytest.mark.parametrize(
    "command",
    [[], ["deliver"], ["parse"], ["world", "load"], ["world", "dump"], ["plan", "validate"],
     ["prompt"], ["demo"], ["guide"], ["dots", "run"], ["dots", "serve"]],
)
def test_help_names_value_types_in_words(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    for bracketed in ("<str>", "<bool>", "<path>", "<int>", "<float>"):
        assert bracketed not in result.stdout, (command, bracketed)


def test_deliver_help_agrees_with_the_readme_on_executors() -> None:
    text = " ".join(runner.invoke(app, ["deliver", "--help"]).stdout.split())
    assert "noop|local|docker" in text
    for name in ("noop", "local", "docker"):
        assert name in text


def test_shell_completion_works() -> None:
    env = dict(
        os.environ,
        _MARKERTOOLS_COMPLETE="complete_bash",
        COMP_WORDS="markertools del",
        COMP_CWORD="1",
    )
    run = subprocess.run([MARKERTOOLS], env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert "deliver" in run.stdout.split()


@pytest.mark.parametrize("option", ["--codex-events", "--codex-rollout"])
def test_a_file_of_the_wrong_format_exits_2_with_the_reason(tmp_path: Path, option: str) -> None:
    wrong = tmp_path / "world.json"
    wrong.write_text(json.dumps(WORLD, indent=2))
    result = runner.invoke(app, ["parse", option, str(wrong)])
    assert result.exit_code == 2
    assert "holds no Codex records" in result.stderr and result.stderr.count("\n") == 1


# ---- world load --merge and enumerations ------------------------------------------


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


# ---- deliver --db from what the delivery touched -----------------------------------


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
    assert "not signalled (noop executor)" in out
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
