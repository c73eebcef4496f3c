"""Issue 24 (the library half of the newcomer trial), each as the newcomer met it, through
the installed `markertools` console script in a temporary directory:

- `deliver --deadline` defaults to the library's DEFAULT_DELIVERY_DEADLINE (TRN-11);
- `deliver --help` (and every other command's help) wraps its paragraphs cleanly;
- an unknown option suggests only options close to what was typed, on every command;
- a missing `--db` / `--world` / `--keep` path is one line and exit 2, or - where the
  command creates the database - it works;
- a world file with several problems names all of them, on one line;
- "What changed" shows times as ISO 8601, never raw epoch floats;
- Ctrl-C during a `deliver --db` that waits on the real clock: one line, exit 130, and
  the same `--turn-id` finishes the turn exactly once.
"""

from __future__ import annotations

import itertools
import json
import os
import pty
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import typer.main
from repo_paths import REPO
from typer.testing import CliRunner

from markertools import DEFAULT_DELIVERY_DEADLINE
from markertools_adapters.cli import app
from markertools_adapters.cli._app import close_options
from markertools_adapters.cli._main import register

EXE = Path(sys.executable).with_name("markertools")
SHOP = REPO / "examples" / "worlds" / "shop.json"
runner = CliRunner()


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(EXE), *args], capture_output=True, text=True, timeout=120, cwd=cwd, check=False
    )
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    return done


def one_line_failure(done: subprocess.CompletedProcess[str], needle: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("markertools: "), done.stderr
    assert "internal error" not in lines[0]
    assert needle in lines[0], lines[0]
    return lines[0]


# ---- --deadline follows the library's default ---------------------------------------


POLL_900 = (
    '```task-poll\n{"task_id": "t-api", "timeout_seconds": 900, "interval_seconds": 60}\n```\n'
)


@pytest.mark.rule("TRN-11")
@pytest.mark.parametrize(
    ("extra", "waited", "says"),
    [
        ((), 600, "because the delivery's deadline passed (600 s from its start"),
        (
            ("--deadline", "700"),
            700,
            "because the delivery's deadline passed (700 s from its start",
        ),
        (("--deadline", "none"), 900, "NOT finished: timed out after 900 s"),
    ],
)
def test_deliver_deadline_defaults_to_the_library_default(
    tmp_path: Path, extra: tuple[str, ...], waited: int, says: str
) -> None:
    assert DEFAULT_DELIVERY_DEADLINE == 600
    turn = tmp_path / "poll.md"
    turn.write_text(POLL_900)
    done = cli("deliver", str(turn), "--world", str(SHOP), "--sender", "t-lead", *extra)
    assert done.returncode == 0, done.stderr
    assert says in done.stdout
    assert f"virtual time passed: {waited} s" in done.stdout


def test_deliver_help_names_the_deadline_default() -> None:
    result = runner.invoke(app, ["deliver", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert f"default {DEFAULT_DELIVERY_DEADLINE:g}, the library's default; none = no bound" in text


# ---- help text wraps cleanly --------------------------------------------------------


def every_command() -> list[list[str]]:
    register(None)
    paths: list[list[str]] = []

    def walk(command: Any, path: list[str]) -> None:
        paths.append(path)
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


def broken_wraps(help_text: str, width: int) -> list[tuple[str, str]]:
    """Pairs of lines of the description (above the first box) where the next line's
    first word would have fitted on the line before: a line break in mid-sentence."""
    description = help_text.split("╭")[0].splitlines()
    pairs = []
    for line, after in itertools.pairwise(description):
        if (
            line.strip()
            and after.strip()
            and not line.lstrip().startswith("Usage:")
            and len(line.strip()) + 1 + len(after.split()[0]) <= width - 4
        ):
            pairs.append((line.strip(), after.strip()))
    return pairs


def test_deliver_help_has_no_line_break_in_mid_sentence() -> None:
    """Issue 24: the second paragraph broke after "(with --json," at any width."""
    done = subprocess.run(
        [str(EXE), "deliver", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        check=True,
    )
    assert broken_wraps(done.stdout, 80) == []
    text = " ".join(done.stdout.split())
    assert "(with --json, the `deliver --json` document of docs/cli.md)" in text


@pytest.mark.parametrize("width", [80, 120])
def test_no_command_help_breaks_a_line_in_mid_sentence(width: int) -> None:
    for path in every_command():
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": str(width)})
        assert result.exit_code == 0, (path, result.output)
        assert broken_wraps(result.stdout, width) == [], path


# ---- unknown options ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [
        ("--jsn", "(Possible options: --json)"),
        ("--jason", "(Possible options: --json)"),
        ("--locle", "(Possible options: --locale)"),
        ("--codex", "(Possible options: --codex-events, --codex-rollout)"),
        ("--rollout", "(Possible options: --codex-rollout)"),
        ("--keep", None),  # click offered --help
        ("--version", None),  # click offered --json
        ("--codex-bin", None),  # click offered --codex-events, --codex-rollout
        ("--turn-id", None),  # click offered --turn, another option altogether
    ],
)
def test_an_unknown_option_on_parse_suggests_only_close_options(
    tmp_path: Path, typed: str, suggested: str | None
) -> None:
    turn = tmp_path / "t.md"
    turn.write_text("no blocks\n")
    line = one_line_failure(cli("parse", typed, str(turn)), f"No such option: {typed}")
    if suggested is None:
        assert "Possible options" not in line
    else:
        assert suggested in line


def test_every_command_suggests_its_own_misspelt_options_and_nothing_unrelated() -> None:
    import click

    for path in every_command():
        command = typer.main.get_command(app)
        for name in path:
            command = command.commands[name]  # type: ignore[attr-defined]
        options = [
            o
            for p in command.get_params(click.Context(command))
            for o in p.opts
            if o.startswith("--") and len(o) > 6
        ]
        for option in options:
            typo = option[:3] + option[4:]  # one letter dropped
            assert option in close_options(typo, options), (path, typo)
        assert close_options("--zqxjvw", options) == [], path


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


# ---- a world file's problems, all named -------------------------------------------------


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


# ---- times a person reads ---------------------------------------------------------------


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


# ---- Ctrl-C during a delivery that waits on the real clock ------------------------------


WAITING_TURN = (
    '```task-create\n{"name": "probe", "prompt": "Probe the checkout latency."}\n```\n\n'
    '```task-poll\n{"task_id": "t-api", "timeout_seconds": 3600, "interval_seconds": 60}\n```\n'
)


def tasks_with_prompt(db: Path, prompt: str) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        (count,) = conn.execute("SELECT count(*) FROM tasks WHERE prompt = ?", (prompt,)).fetchone()
    return int(count)


def run_in_a_pty(args: list[str], db: Path, prompt: str) -> tuple[int, str]:
    """Run the command on a new pseudo-terminal (its controlling terminal, the command the
    foreground process group); once its task-create is in the database - it is polling
    then - type Ctrl-C. Returns (exit status, everything the terminal showed)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: exec the command on the pty
        os.execv(str(EXE), [str(EXE), *args])
    shown = b""
    try:
        give_up = time.monotonic() + 60
        while tasks_with_prompt(db, prompt) == 0:
            assert time.monotonic() < give_up, "the delivery never created its task"
            time.sleep(0.05)
        os.write(fd, b"\x03")  # Ctrl-C: the terminal sends SIGINT to the foreground group
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), shown.decode("utf-8", "replace")


@pytest.mark.rule("TRN-9")
def test_ctrl_c_while_a_db_delivery_waits_is_one_line_and_the_turn_id_finishes_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "shop.db"
    assert cli("world", "load", str(SHOP), "--db", str(db)).returncode == 0
    turn = tmp_path / "turn.md"
    turn.write_text(WAITING_TURN)
    args = ["deliver", str(turn), "--db", str(db), "--sender", "t-lead", "--turn-id", "turn-1"]
    code, shown = run_in_a_pty(args, db, "Probe the checkout latency.")
    assert code == 130, shown
    assert "Traceback" not in shown
    lines = [line for line in shown.replace("^C", "").splitlines() if line.strip()]
    assert lines == [
        "markertools: interrupted: the turn was not delivered completely and no report was "
        "queued; blocks that finished before Ctrl-C stay applied; deliver again with "
        "--turn-id turn-1 to apply the rest exactly once"
    ], shown
    # the same turn id finishes the turn: the task it created is not created again
    again = cli(*args, "--deadline", "0", "--json")
    assert again.returncode == 0, again.stderr
    doc = json.loads(again.stdout)
    assert [(e["kind"], e["outcome"]) for e in doc["entries"]] == [
        ("task-create", "done"),
        ("task-poll", "done"),
    ]
    assert "because the delivery's deadline passed (0 s" in doc["entries"][1]["reason"]
    assert doc["report_queued"] is True
    assert tasks_with_prompt(db, "Probe the checkout latency.") == 1


def test_help_paragraphs_are_joined_but_a_b_marked_one_is_kept() -> None:
    from markertools_adapters.cli._app import reflowed

    text = "Summary line.\n\nA paragraph that\nwas wrapped by hand.\n\n\bkept\n  as written"
    assert reflowed(text) == (
        "Summary line.\n\nA paragraph that was wrapped by hand.\n\n\bkept\n  as written"
    )
    assert reflowed(None) is None
