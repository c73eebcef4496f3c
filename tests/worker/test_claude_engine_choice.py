"""ENG-1: choosing the engine. `worker run --engine codex|claude-code` (codex by default):
only the chosen engine's binary must exist (a missing one is one line, exit 2); a host
on Claude Code needs no Codex at all; a task's own `engine` field, when set, wins over the
host's. ENG-3: the fake Messages API's wrapper runs a command against it offline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.claude import claude_settings_for
from support.cli import EXE, cli, one_line_failure
from support.worker import add_task, worker_store

from markertools_adapters.worker import WorkerHost
from markertools_adapters.worker.claude_engine import ClaudeEngine
from markertools_adapters.worker.codex_engine import CodexEngine
from markertools_adapters.worker.run import TaskRun


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli("worker", "run", "--db", str(tmp_path / "w.db"), "--project", "p1", *args)


@pytest.mark.rule("ENG-1")
def test_a_missing_claude_binary_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with worker_store("sqlite", tmp_path):
        pass
    missing = tmp_path / "no-claude"
    done = _run(tmp_path, "--engine", "claude-code", "--claude-bin", str(missing))
    line = one_line_failure(done, "claude binary not found")
    assert line == (
        f"markertools: claude binary not found: {missing} (install the Claude Code CLI: "
        "scripts/install_claude.sh or npm install -g @anthropic-ai/claude-code, or give "
        "--claude-bin)"
    )
    done = _run(tmp_path, "--engine", "gemini")
    assert one_line_failure(done, "--engine") == (
        "markertools: --engine gemini: expected one of codex, claude-code"
    )


@pytest.mark.rule("ENG-1", "ENG-3")
def test_a_claude_code_host_needs_no_codex_and_runs_under_the_fake_wrapper(
    tmp_path: Path,
) -> None:
    from support.claude import claude_bin

    binary = claude_bin()
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-1", "Say hello")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env["MARKERTOOLS_CLAUDE_BIN"] = binary
    wrapper = [sys.executable, "-m", "markertools_adapters.claude.fakemessages"]
    wrapper += ["--home", str(tmp_path / "claude-home"), "--"]
    host = [str(EXE), "worker", "run", "--db", str(tmp_path / "w.db"), "--project", "p1"]
    host += ["--engine", "claude-code", "--codex-bin", str(tmp_path / "no-codex")]
    host += ["--worktrees", str(tmp_path / "worktrees"), "--until-idle", "--no-tools"]
    done = subprocess.run(
        [*wrapper, *host],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1].startswith("markertools worker ")
    with worker_store("sqlite", tmp_path) as store:
        task = store.get_task("t-1")
        assert task.status == "completed"
        assert task.result_text.startswith("(fake model) Done: ")
        sessions = list((tmp_path / "claude-home" / ".claude" / "projects").glob("*/*.jsonl"))
        assert [p.stem for p in sessions] == [task.thread_id]


@pytest.mark.rule("ENG-1")
@pytest.mark.parametrize(
    ("host_engine", "task_engine", "built"),
    [
        ("codex", None, CodexEngine),
        ("codex", "claude-code", ClaudeEngine),
        ("claude-code", None, ClaudeEngine),
        ("claude-code", "codex", CodexEngine),
    ],
)
def test_a_tasks_own_engine_wins_over_the_hosts(
    offline_claude, tmp_path: Path, host_engine: str, task_engine: str | None, built: type
) -> None:
    settings = claude_settings_for(offline_claude, tmp_path, engine=host_engine)
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-1", "one", engine=task_engine)  # the task's own field, stored
        claim = store.claim_task("p1", "h1")
        assert claim.task.engine == task_engine
        run = TaskRun(WorkerHost(settings, store), claim)
        assert type(run._make_engine(None)) is built
