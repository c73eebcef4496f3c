"""`markertools demo --live --engine claude-code` as a person runs it: in a terminal (pty),
on the real pinned Claude Code CLI offline against the bundled fake Messages API, the
same story as the Codex demo - the lead creates two children, waits for them and
completes; then `worker status` and what changed (ENG-3). Without the CLI it says how to
install it."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from support.claude import claude_bin
from support.terminal import markertools


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env.update(extra)
    return env


@pytest.mark.rule("ENG-3")
def test_demo_live_on_claude_code_tells_the_same_story(tmp_path: Path) -> None:
    binary = claude_bin()
    keep = tmp_path / "kept"
    term = markertools(
        "demo",
        "--live",
        "--engine",
        "claude-code",
        "--keep",
        str(keep),
        env=_env(MARKERTOOLS_CLAUDE_BIN=binary),
    )
    term.wait_for(f"the real Claude Code CLI ({binary}) runs offline against the bundled")
    term.wait_for("t-lead (lead): turn 1 started on claude")
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
    assert "task-create -> t-" in screen and "wait-threads -> t-" in screen
    assert "Traceback" not in screen
    with sqlite3.connect(keep / "demo.db") as db:
        rows = db.execute("SELECT status, thread_id FROM tasks").fetchall()
    assert len(rows) == 3 and {r[0] for r in rows} == {"completed"}
    sessions = {p.stem for p in (keep / "claude-home" / ".claude" / "projects").glob("*/*.jsonl")}
    assert sessions == {r[1] for r in rows}  # each task's thread is its Claude Code session


@pytest.mark.rule("ENG-3")
def test_demo_live_on_claude_code_without_the_cli_says_how_to_install_it(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "markertools", "demo", "--live", "--engine", "claude-code"]
    done = subprocess.run(
        [*argv, "--claude-bin", str(tmp_path / "no-claude")],
        env=_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "demo --live --engine claude-code needs the pinned Claude Code CLI: run `make "
        "demo-live ENGINE=claude-code` (it installs it with scripts/install_claude.sh), or "
        "pass --claude-bin / set MARKERTOOLS_CLAUDE_BIN"
    ]
