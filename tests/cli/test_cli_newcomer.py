"""What a newcomer hit (issue 36, item 9), run as they ran it: a `--db` of a scheme
markertools does not read names the scheme and the forms it reads (and creates nothing);
`worker status` of an unknown project says so like `worker run` (exit 2); `worker run`
names a missing database before a missing Codex binary; the top-level help names every
command group; every command's help is whole at 80 columns, none of its options cut."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer.main
from support.cli import EXE, cli, one_line_failure
from support.paths import REPO
from support.terminal import Terminal
from typer.testing import CliRunner

from markertools_adapters.cli import app
from markertools_adapters.cli._main import register

SHOP = REPO / "examples" / "worlds" / "shop.json"
TURN = REPO / "examples" / "transcripts" / "basic.md"
FORMS = "give a SQLite file path, sqlite:///PATH, or a postgresql:// (postgres://) URL"


def _shop(tmp_path: Path) -> Path:
    db = tmp_path / "shop.db"
    assert cli("world", "load", str(SHOP), "--db", str(db)).returncode == 0
    return db


# ---- --db of another scheme ---------------------------------------------------------


@pytest.mark.rule("WRK-1", "WRK-10", "VEW-1")
@pytest.mark.parametrize(
    "args",
    [
        ["deliver", str(TURN), "--sender", "t-lead", "--db"],
        ["view", "--out", "fleet.html", "--db"],
        ["prompt", "--task", "t-lead", "--db"],
        ["world", "load", str(SHOP), "--db"],
        ["world", "load", "--merge", str(SHOP), "--db"],
        ["world", "dump", "--db"],
        ["automations", "list", "--db"],
        ["tools", "token", "--task", "t-lead", "--db"],
        ["worker", "run", "--project", "p-shop", "--db"],
        ["worker", "status", "--db"],
    ],
)
def test_a_db_of_another_scheme_names_the_scheme_and_the_supported_forms(
    tmp_path: Path, args: list[str]
) -> None:
    done = cli(*args, "mysql://x/y", cwd=tmp_path)
    line = one_line_failure(done, "--db mysql://x/y: unsupported database URL scheme 'mysql'")
    assert line.endswith(f"markertools stores its data in SQLite or PostgreSQL: {FORMS}")
    assert "no such database" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no file called mysql:/x/y


@pytest.mark.rule("WRK-10")
def test_a_db_url_hides_its_password_and_memory_is_no_database(tmp_path: Path) -> None:
    line = one_line_failure(
        cli("worker", "status", "--db", "mysql://ana:s3cret@db/fleet", cwd=tmp_path),
        "--db mysql://ana:***@db/fleet: unsupported database URL scheme 'mysql'",
    )
    assert "s3cret" not in line
    one_line_failure(
        cli("view", "--db", "memory:", "--out", "x.html", cwd=tmp_path),
        "--db memory: is an in-memory database: it starts empty and ends with the command",
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.rule("WRK-10")
def test_sqlite_urls_name_the_same_file_for_every_command(tmp_path: Path) -> None:
    assert cli("world", "load", str(SHOP), "--db", "sqlite:///shop.db", cwd=tmp_path).returncode == 0
    assert [p.name for p in tmp_path.iterdir()] == ["shop.db"]  # not sqlite:/shop.db
    status = cli("worker", "status", "--db", "sqlite:///shop.db", "--project", "p-shop", cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith("tasks: ")
    dumped = cli("world", "dump", "--db", "sqlite:///shop.db", cwd=tmp_path)
    assert dumped.returncode == 0 and '"p-shop"' in dumped.stdout


@pytest.mark.rule("WRK-1", "WRK-10")
@pytest.mark.parametrize("content", [b"not a database\n", None])
def test_a_db_that_is_no_database_is_one_line_on_every_command(
    tmp_path: Path, content: bytes | None
) -> None:
    target = tmp_path / "x.db"
    if content is None:
        target.mkdir()
    else:
        target.write_bytes(content)
    for args in (
        ["deliver", str(TURN), "--sender", "t-lead"],
        ["view", "--out", str(tmp_path / "fleet.html")],
        ["worker", "run", "--project", "p-shop", "--codex-bin", "/bin/true"],
        ["worker", "status"],
        ["tools", "token", "--task", "t-lead"],
        ["automations", "list"],
        ["world", "dump"],
    ):
        line = one_line_failure(cli(*args, "--db", str(target)), f"--db {target}")
        assert "internal error" not in line, (args, line)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.db"]


# ---- worker status / worker run -------------------------------------------------------


@pytest.mark.rule("WRK-10")
def test_worker_status_of_an_unknown_project_says_so_like_worker_run(tmp_path: Path) -> None:
    db = _shop(tmp_path)
    status = cli("worker", "status", "--db", str(db), "--project", "nope")
    assert one_line_failure(status, "") == "markertools: --project nope: no such project"
    assert status.stdout == ""
    run = cli(
        "worker", "run", "--db", str(db), "--project", "nope", "--codex-bin", "/bin/true"
    )
    assert one_line_failure(run, "") == "markertools: --project nope: no such project"
    known = cli("worker", "status", "--db", str(db), "--project", "p-shop")
    assert known.returncode == 0 and known.stdout.startswith("tasks: ")


def _without_codex(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "MARKERTOOLS_CODEX_BIN"}
    env["PATH"] = str(tmp_path / "empty-bin")  # no codex anywhere on it
    return env


@pytest.mark.rule("WRK-1")
def test_worker_run_names_a_missing_database_before_a_missing_codex(tmp_path: Path) -> None:
    env = _without_codex(tmp_path)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(EXE), "worker", "run", *args], capture_output=True, text=True, env=env,
            cwd=tmp_path, timeout=60, check=False,
        )

    missing = run("--db", "missing.db", "--project", "p-shop")
    assert one_line_failure(missing, "") == (
        "markertools: --db missing.db: no such database (create one with `world load`)"
    )
    assert not (tmp_path / "worktrees").exists()
    db = _shop(tmp_path)
    no_codex = run("--db", str(db), "--project", "p-shop")
    assert "codex binary not found: codex" in one_line_failure(no_codex, "")


# ---- help ----------------------------------------------------------------------------


GROUPS = ("parse", "deliver", "demo", "tools", "worker", "plan", "dots", "view", "world",
          "automations", "prompt", "guide", "schema", "approvals")


@pytest.mark.rule("WRK-1", "TOL-1", "VEW-1")
def test_the_top_level_help_describes_every_command_group() -> None:
    done = subprocess.run(
        [str(EXE), "--help"], capture_output=True, text=True, timeout=60, check=True,
        env={**os.environ, "COLUMNS": "80"},
    )
    description = " ".join(done.stdout.split("╭")[0].split())
    assert "parse, deliver, prompts, plans" not in description
    assert description.endswith(
        "Marker blocks for LLM-agent workers: parse and deliver an agent turn's blocks "
        "(parse, deliver, demo), serve the same kinds as same-turn MCP tools (tools), run a "
        "project's tasks on Codex (worker), answer their agents' approval requests "
        "(approvals), orchestrate plans on Codex workers (plan, dots), draw the fleet (view), "
        "and manage databases, automations, prompts and the agent guide (world, automations, "
        "prompt, guide, schema)."
    )
    for group in GROUPS:
        assert f"({group}" in description or f" {group}," in description or (
            f" {group})" in description
        ), group


def _every_command() -> list[list[str]]:
    register(None)
    paths: list[list[str]] = []

    def walk(command: Any, path: list[str]) -> None:
        paths.append(path)
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


def _long_options(path: list[str]) -> list[str]:
    import click

    command: Any = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return [
        o
        for p in command.get_params(click.Context(command))
        for o in (*p.opts, *getattr(p, "secondary_opts", ()))
        if o.startswith("--")
    ]


@pytest.mark.rule("WRK-1")
def test_every_commands_help_is_whole_at_80_columns() -> None:
    runner = CliRunner()
    for path in _every_command():
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
        assert result.exit_code == 0, (path, result.output)
        lines = result.stdout.splitlines()
        assert [line for line in lines if "…" in line or len(line) > 80] == [], path
        for option in _long_options(path):
            assert any(option in line.split() for line in lines), (path, option)


@pytest.mark.rule("WRK-1")
def test_worker_run_help_in_an_80_column_terminal_shows_every_option_whole() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    term = Terminal(["-m", "markertools", "worker", "run", "--help"], env, columns=80)
    assert term.exit_code() == 0
    screen = term.screen()
    assert "…" not in screen
    words = screen.split()
    for option in ("--affinity-seconds", "--max-concurrent", "--lease-seconds",
                   "--max-goal-rounds", "--grace-seconds", "--until-idle", "--json-log"):
        assert option in words, option
    text = " ".join(screen.replace("│", " ").split())
    assert "How long a requeued task waits for its old host (at least 0). [default: 300.0]" in (
        text
    )
    assert "INTEGER [1<=x<=16]" not in text and "Tasks at once (1-16)." in text
