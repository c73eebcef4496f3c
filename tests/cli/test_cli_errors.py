"""How `markertools` fails: an internal error is one line and exit 3 (the traceback only
with `--debug` or MARKERTOOLS_DEBUG=1), a usage error exit 2; a Codex file of the wrong
format, and a missing `--db` / `--world` / `--keep` path, are one line and exit 2 - or,
where the command creates the database, its directories are created."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support.cli import cli, one_line_failure
from support.paths import REPO
from typer.testing import CliRunner

from markertools_adapters.cli import _app as cli_app
from markertools_adapters.cli import _main as cli_main
from markertools_adapters.cli import app, cmd_parse

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


@pytest.mark.parametrize("option", ["--codex-events", "--codex-rollout"])
def test_a_file_of_the_wrong_format_exits_2_with_the_reason(tmp_path: Path, option: str) -> None:
    wrong = tmp_path / "world.json"
    wrong.write_text(json.dumps(WORLD, indent=2))
    result = runner.invoke(app, ["parse", option, str(wrong)])
    assert result.exit_code == 2
    assert "holds no Codex records" in result.stderr and result.stderr.count("\n") == 1


# ---- missing paths ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["world", "dump", "--db", "nodir/missing.db"],
        ["world", "load", "--merge", str(SHOP), "--db", "nodir/missing.db"],
        ["world", "load", "nodir/missing.json", "--db", "new.db"],
        ["automations", "list", "--db", "nodir/missing.db"],
        ["automations", "fire", "--db", "missing.db"],
        ["automations", "pause", "a-1", "--db", "missing.db"],
        ["prompt", "--db", "nodir/missing.db", "--task", "t-lead"],
        ["prompt", "--world", "nodir/missing.json", "--task", "t-lead"],
        ["deliver", "turn.md", "--db", "nodir/missing.db", "--sender", "t-lead"],
        ["deliver", "turn.md", "--world", "nodir/missing.json", "--sender", "t-lead"],
        ["deliver", "nodir/missing.md", "--world", str(SHOP), "--sender", "t-lead"],
        ["parse", "nodir/missing.md"],
        ["world", "load", str(SHOP), "--db", "afile/w.db"],
        ["demo", "--keep", "afile/k.db"],
    ],
)
def test_a_missing_path_is_one_line_and_exit_2(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "turn.md").write_text("no blocks\n")
    (tmp_path / "afile").write_text("a file where a directory is expected\n")
    path = next(a for a in args if "missing" in a or "afile" in a)
    one_line_failure(cli(*args, cwd=tmp_path), path)


def test_commands_that_create_the_database_create_missing_directories(tmp_path: Path) -> None:
    """Issue 24: `demo --keep new/dir/k.db` was an internal error (FileNotFoundError) and
    `world load --db new/dir/w.db` blamed the world file."""
    kept = cli("demo", "--keep", "new/dir/k.db", cwd=tmp_path)
    assert kept.returncode == 0, kept.stderr
    assert "The database is kept at new/dir/k.db" in kept.stdout
    loaded = cli("world", "load", str(SHOP), "--db", "other/dir/w.db", cwd=tmp_path)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.startswith(f"created other/dir/w.db from {SHOP}: 1 project, 5 tasks")
    for db in ("new/dir/k.db", "other/dir/w.db"):
        dumped = cli("world", "dump", "--db", db, cwd=tmp_path)
        assert dumped.returncode == 0 and '"t-lead"' in dumped.stdout
