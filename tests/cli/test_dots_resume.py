"""The README's `dots run` demo taken back after Ctrl-C, as a person does it (issue 36
item 1): the command Ctrl-C prints is copied and run as it is, in a pseudo-terminal,
under the real pinned Codex and the fake-model wrapper. It used to drop `--codex-bin`
and the wrapper (so it paused again: "no codex executable ... set codexBin"), and the
wrapper's CODEX_HOME was temporary, so run again by hand the thread was gone and every
`r` printed "launch of reader failed" and a traceback. Now the printed command is
complete (the wrapper with its kept home, the program, every option the run needs), the
wrapper keeps its home where a resume finds it by default, and a thread that is gone
anyway is one line saying so and the way forward: resumed, the role starts a new thread
given what the run knows of it."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.codex import codex_bin
from support.terminal import MARKERTOOLS, PLAN, WRAPPER, Terminal

DECISION = "[n]ext instruction, [f]inish with a conclusion, [p]ause, [c]ancel? "
PAUSED = "[r]esume, [c]ancel or [q]uit (the run stays paused)? "
CONFIRM = "Confirm? [y/N] "


def person_env(home: Path) -> dict[str, str]:
    """A person's environment with a HOME of their own (the wrapper keeps its CODEX_HOME
    under it by default)."""
    env = {**os.environ, "HOME": str(home)}
    env.pop("XDG_STATE_HOME", None)
    env.pop("MARKERTOOLS_WRAPPED_BY", None)
    return env


def runs(state: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "markertools", "dots", "status", "--state-dir", str(state), "--json"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["runs"]  # type: ignore[no-any-return]


def demo_then_ctrl_c(env: dict[str, str], state: Path, *wrapper_options: str) -> tuple[str, str, str]:
    """The README demo (with `--poll-ms 5000`, an option the resume must carry) up to
    the first decision, then Ctrl-C. Returns (run id, the printed resume command, the
    reader's first reply)."""
    term = Terminal(
        [*WRAPPER, *wrapper_options, "--", sys.executable, *MARKERTOOLS, "dots", "run", str(PLAN),
         "--codex-bin", codex_bin(), "--state-dir", str(state), "--poll-ms", "5000"],
        env,
    )
    term.answer(CONFIRM, "y")
    term.answer(CONFIRM, "y")
    term.wait_for(DECISION)
    term.ctrl_c()
    code = term.exit_code()
    screen = term.screen()
    assert code == 130, screen[-3000:]
    assert "Traceback" not in screen
    found = re.search(r"paused run ([0-9a-f]{32}); resume it with: (.*)", screen)
    assert found is not None, screen[-3000:]
    return found.group(1), found.group(2), screen


def as_typed(command: str, env: dict[str, str]) -> Terminal:
    """The printed command, pasted into a shell: its words, run as they are."""
    words = shlex.split(command)
    assert words[0] == sys.executable  # the wrapper, run by the same Python
    return Terminal(words[1:], env)


@pytest.mark.rule("DOT-11", "DOT-16")
def test_the_printed_command_takes_the_run_back_with_its_thread(tmp_path: Path) -> None:
    env = person_env(tmp_path / "person")
    state = tmp_path / "state"
    run_id, command, _ = demo_then_ctrl_c(env, state)
    kept = tmp_path / "person" / ".local" / "state" / "markertools" / "fake-codex-home"
    assert command == shlex.join([
        sys.executable, "-m", "markertools_adapters.codex.fakemodel", "--home", str(kept), "--",
        sys.executable, "-m", "markertools", "dots", "run", "--resume", run_id,
        "--state-dir", str(state), "--codex-bin", codex_bin(), "--poll-ms", "5000",
    ])
    assert "codexBin" not in command
    assert list(kept.glob("sessions/**/*.jsonl"))  # the reader's thread is kept
    term = as_typed(command, env)
    term.wait_for(f"resuming run {run_id}")
    term.wait_for("worker reader awaits a decision")
    term.answer(DECISION, "n")
    term.answer("instruction: ", "also list the tests that cover it")
    term.wait_for("reply of reader: (fake model) Done: also list the tests that cover it")
    term.answer(DECISION, "f")
    term.answer("conclusion: ", "parse.py line 3")
    term.wait_for("worker fixer awaits a decision")
    term.answer(DECISION, "f")
    term.answer("conclusion: ", "fixed")
    code = term.exit_code()
    screen = term.screen()
    assert code == 0, screen[-3000:]
    assert "Traceback" not in screen and "launch of reader failed" not in screen
    assert "run paused" not in screen  # it never paused again
    assert f"run {run_id}: completed (3/12 turns)" in screen
    (run,) = runs(state)
    reader = run["workers"][0]
    assert reader["turns"] == 2 and run["state"] == "completed"


@pytest.mark.rule("DOT-11", "DOT-12")
def test_a_thread_that_is_gone_is_one_line_and_a_new_thread_carries_what_the_run_knows(
    tmp_path: Path,
) -> None:
    env = person_env(tmp_path / "person")
    state, home = tmp_path / "state", tmp_path / "codex-home"
    run_id, command, screen = demo_then_ctrl_c(env, state, "--home", str(home))
    thread = runs(state)[0]["workers"][0]["threadId"]
    shutil.rmtree(home)  # the temporary CODEX_HOME: gone, and the thread with it
    term = as_typed(command, env)
    term.wait_for(f"resuming run {run_id}")
    term.answer(DECISION, "n")
    term.answer("instruction: ", "also list the tests that cover it")
    term.wait_for(PAUSED)
    said = term.screen().rsplit("run paused: ", 1)[1].split(PAUSED)[0]
    paused = " ".join(said.split())  # one message, wrapped at the terminal's width
    assert paused == (
        f"role reader: Codex no longer has its thread {thread} (thread not loaded: {thread}); "
        "the Codex home that held it was removed or is another one. Resume to start reader "
        "in a new thread, given what the run knows of it (its first instruction, its last "
        "reply, its predecessors' conclusions), or cancel"
    )
    term.type("r")
    # the fake model echoes what the new thread was sent: the note comes first
    term.wait_for("reply of reader: (fake model) Done: Note: this is a new thread for role reader")
    term.answer(DECISION, "f")
    term.answer("conclusion: ", "parse.py line 3")
    term.wait_for("worker fixer awaits a decision")
    term.answer(DECISION, "f")
    term.answer("conclusion: ", "fixed")
    code = term.exit_code()
    screen = term.screen()
    assert code == 0, screen[-3000:]
    assert "Traceback" not in screen and "launch of reader failed" not in screen
    assert screen.count("run paused: ") == 1  # `r` went on, it did not fail again
    (run,) = runs(state)
    reader = run["workers"][0]
    assert run["state"] == "completed" and reader["threadId"] not in (None, thread)
    # what the new thread was given: a note, the first instruction and the last reply
    # (framed as data), then the instruction - read from the thread Codex recorded
    rollouts = [p.read_text(encoding="utf-8") for p in home.glob("sessions/**/*.jsonl")]
    (new,) = [t for t in rollouts if "this is a new thread for role reader" in t]
    assert "the first instruction role reader was given (in its earlier thread)" in new
    assert "Find the fault and the smallest fix; end the turn when done." in new
    assert "the last reply of role reader (in its earlier thread)" in new
    assert "(fake model) Done: Find the fault and the smallest fix" in new
    assert "also list the tests that cover it" in new


@pytest.mark.rule("DOT-3")
def test_no_codex_is_said_with_the_option_name(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "markertools", "dots", "run", str(PLAN), "--state-dir", str(tmp_path / "s")],
        capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert done.stderr == (
        "markertools: no codex executable: none was given with --codex-bin and there is no "
        "codex on PATH; install @openai/codex, or give --codex-bin PATH\n"
    )
