"""`markertools demo --live` as a person runs it: in a terminal (pty), on the real pinned
Codex CLI offline, the lead task creates two children, waits for them and completes; the
screen tells the story, then `worker status` and what changed (WRK-1, WRK-4, WRK-10)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from support.codex import codex_bin
from support.terminal import Terminal, markertools


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env


@pytest.mark.rule("WRK-1", "WRK-4", "WRK-10", "APR-3", "APR-4")
def test_demo_live_in_a_terminal_tells_the_root_children_story(tmp_path: Path) -> None:
    binary = codex_bin()
    keep = tmp_path / "kept"
    term = markertools(
        "demo", "--live", "--keep", str(keep), env=_env(MARKERTOOLS_CODEX_BIN=binary)
    )
    term.wait_for("Queued t-lead: [agent:lead] Add a /health endpoint and document it.")
    term.wait_for("markertools worker demo-host:")  # the live view's table
    term.wait_for("t-lead (lead): turn 1 delivered, 2 block(s)")
    # APR-1..4: api asks to leave its sandbox; the lead's wait ends early showing the
    # request, the lead approves it with an approval-answer block, the command runs
    term.wait_for("(api): asks for approval apr-")
    term.wait_for("t-lead (lead): turn 2 delivered, 1 block(s)")  # the wait-threads turn
    term.wait_for("approved by task:t-lead")
    term.wait_for("(api): finished, completed")
    term.wait_for("t-lead (lead): turn 3 delivered, 2 block(s)")  # approval-answer + wait
    term.wait_for("t-lead (lead): finished, completed")
    assert term.exit_code() == 0
    screen = term.screen()
    assert "(docs): finished, completed" in screen
    assert "t-lead result: Both parts are done: the endpoint and its docs. Finished." in screen
    assert "markertools worker status:\n  tasks: completed 3" in screen
    assert "What changed:" in screen and "tasks created:" in screen
    assert "task-create -> t-" in screen and "wait-threads -> t-" in screen
    assert "approval-answer -> apr-" in screen
    assert "Traceback" not in screen
    # --keep: the database is there, with the lead and its two children completed
    with sqlite3.connect(keep / "demo.db") as db:
        rows = db.execute("SELECT id, status, parent_task_id FROM tasks").fetchall()
    assert len(rows) == 3 and {r[1] for r in rows} == {"completed"}
    assert sorted(r[2] or "" for r in rows) == ["", "t-lead", "t-lead"]
    assert len([p for p in (keep / "worktrees" / "demo-host").iterdir() if p.is_dir()]) == 3


@pytest.mark.rule("WRK-10")
def test_demo_live_in_an_80_column_terminal_ends_with_every_task_and_how_it_ended() -> None:
    """Issue 36, item 8: the table's title wrapped ("demo-host: 3 / finished"), the
    children vanished from it and it ended empty. Now its last picture lists the lead and
    both children, by name, completed, under a one-line title."""
    env = {k: v for k, v in _env(MARKERTOOLS_CODEX_BIN=codex_bin()).items() if k != "COLUMNS"}
    term = Terminal(["-m", "markertools", "demo", "--live"], env, columns=80)
    term.wait_for("t-lead (lead): finished, completed")
    assert term.exit_code() == 0
    screen = term.screen()
    last = screen[screen.rindex("markertools worker demo-host:") : screen.index("t-lead result:")]
    lines = [line.strip() for line in last.splitlines() if line.strip()]
    assert lines[0] == "markertools worker demo-host: 0 running, 3 done"  # one line
    assert lines[2].split() == ["┃", "task", "┃", "turn", "┃", "state", "┃", "elapsed", "s", "┃"]
    rows = [line.strip("│ ").split("│") for line in lines if line.startswith("│")]
    shown = sorted((cells[0].strip(), cells[2].strip()) for cells in rows)
    assert [state for _, state in shown] == ["completed"] * 3, shown
    names = sorted(task.split(" ", 1)[-1] for task, _ in shown)
    assert names == ["(api)", "(docs)", "(lead)"], shown
    assert [task for task, _ in shown if task.startswith("t-lead")] == ["t-lead (lead)"]


@pytest.mark.rule("WRK-1")
def test_demo_live_without_a_codex_binary_says_how_to_install_it(tmp_path: Path) -> None:
    env = _env(MARKERTOOLS_CODEX_BIN=str(tmp_path / "no-codex"))
    done = subprocess.run(
        [sys.executable, "-m", "markertools", "demo", "--live"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "demo --live needs the pinned Codex CLI: run `make demo-live` (it installs it with "
        "scripts/install_codex.sh), or pass --codex-bin / set MARKERTOOLS_CODEX_BIN"
    ]


@pytest.mark.rule("WRK-1")
def test_demo_live_keep_refuses_an_existing_directory(tmp_path: Path) -> None:
    env = _env(MARKERTOOLS_CODEX_BIN=codex_bin())
    done = subprocess.run(
        [sys.executable, "-m", "markertools", "demo", "--live", "--keep", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"--keep {tmp_path}: already exists (the demo only writes new files)"
    ]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.rule("WRK-1")
def test_demo_live_refuses_the_canned_demos_options(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "markertools", "demo", "--live", "--json"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "--live: --json, --print-turn and --print-world belong to the canned demo" in (
        done.stderr
    )
