"""`markertools dots run` at a terminal, as a person uses it (issue 24): a pseudo-terminal,
the README's demo (`python -m markertools_adapters.codex.fakemodel -- markertools dots
run ...`, the real pinned Codex under the fake model), the person typing at the prompts
and pressing Ctrl-C. Ctrl-C pauses the run and says how to resume it; running the same
command again offers that run before starting a duplicate; `--resume RUN` takes it
back; the prompts only ever act on the run they belong to; a turn in flight survives a
Ctrl-C as a paused run; and no Ctrl-C ever ends in a traceback."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.codex import OfflineCodex, codex_bin
from support.dots import Confirm, plan, role, running, workdir
from support.terminal import PLAN, dots_run_args, markertools, wrapped

from markertools_adapters.codex.fakemodel import Hang

DECISION = "[n]ext instruction, [f]inish with a conclusion, [p]ause, [c]ancel? "
CONFIRM = "Confirm? [y/N] "


def status(state: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "markertools", "dots", "status", "--state-dir", str(state), "--json"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["runs"]  # type: ignore[no-any-return]


def resume_line(home: Path, run_id: str, state: Path) -> str:
    """The whole command `dots run` prints to take the run back (issue 36): the wrapper
    with its CODEX_HOME, the program, the state directory and `--codex-bin`."""
    return shlex.join([
        sys.executable, "-m", "markertools_adapters.codex.fakemodel", "--home", str(home), "--",
        sys.executable, "-m", "markertools", "dots", "run", "--resume", run_id,
        "--state-dir", str(state), "--codex-bin", codex_bin(),
    ])


def interrupted_run(tmp: Path) -> tuple[Path, Path, str]:
    """The README demo up to the first decision prompt, then Ctrl-C: returns the state
    directory, the CODEX_HOME and the paused run's id."""
    state, home = tmp / "state", tmp / "codex-home"
    term = wrapped(home, *dots_run_args(state, codex_bin(), PLAN))
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
    run_id = found.group(1)
    assert found.group(2) == resume_line(home, run_id, state)
    assert f"run {run_id}: paused (1/12 turns)" in screen
    assert "  paused: paused on request" in screen
    return state, home, run_id


@pytest.mark.rule("DOT-11", "DOT-16")
def test_ctrl_c_then_the_same_command_offers_the_paused_run_and_continues_it(tmp_path: Path) -> None:
    state, home, run_id = interrupted_run(tmp_path)
    term = wrapped(home, *dots_run_args(state, codex_bin(), PLAN))
    term.wait_for(f"this plan already has an unfinished run in {state}:")
    term.wait_for(f"take it back directly with: {resume_line(home, run_id, state)}")
    term.answer(f"[r]esume run {run_id}, start a [n]ew run, or [q]uit? ", "r")
    term.wait_for(f"resuming run {run_id}")
    term.wait_for("worker reader awaits a decision")
    term.answer(DECISION, "f")
    term.answer("conclusion: ", "parse.py line 3 is off by one")
    term.wait_for("worker fixer awaits a decision")
    term.answer(DECISION, "f")
    term.answer("conclusion: ", "fixed")
    code = term.exit_code()
    screen = term.screen()
    assert code == 0, screen[-3000:]
    assert "refused" not in screen and "Traceback" not in screen
    assert "== Start this plan?" not in screen  # nothing new was confirmed or started
    assert f"run {run_id}: completed (2/12 turns)" in screen
    assert [r["runId"] for r in status(state)] == [run_id]
    assert len(list(state.glob("run-*.json"))) == 1
    assert status(state)[0]["state"] == "completed"


@pytest.mark.rule("DOT-11", "DOT-16")
def test_resume_option_takes_the_run_back_and_a_cancel_shows_what_did_not_finish(tmp_path: Path) -> None:
    state, home, run_id = interrupted_run(tmp_path)
    term = wrapped(home, *dots_run_args(state, codex_bin(), "--resume", run_id))
    term.wait_for(f"resuming run {run_id}")
    term.wait_for("reply of reader: (fake model) Done: Find the fault and the smallest fix")
    term.answer(DECISION, "c")
    code = term.exit_code()
    screen = term.screen()
    assert code == 0, screen[-3000:]
    assert f"run {run_id}: cancelled (1/12 turns)" in screen
    assert re.search(r"reader +not finished \(run cancelled\) +turns 1 ", screen)
    assert re.search(r"fixer +not finished \(run cancelled\) +turns 0", screen)
    assert "Traceback" not in screen
    assert [(r["runId"], r["state"]) for r in status(state)] == [(run_id, "cancelled")]


@pytest.mark.rule("DOT-10", "DOT-11")
def test_a_new_run_beside_a_paused_one_acts_only_on_its_own_run(tmp_path: Path) -> None:
    """The issue's trap: the old run's pending "paused" notice reached the new run's
    prompt, whose [r]esume then hit the new run ("illegal transition ... running ->
    running"). Now the old run's notices never drive the new run's prompts."""
    state, home, old = interrupted_run(tmp_path)
    term = wrapped(home, *dots_run_args(state, codex_bin(), PLAN))
    term.answer(f"[r]esume run {old}, start a [n]ew run, or [q]uit? ", "n")
    term.answer(CONFIRM, "y")
    term.answer(CONFIRM, "y")
    term.wait_for("worker reader awaits a decision")
    term.answer(DECISION, "f")
    term.answer("conclusion: ", "found")
    term.wait_for("worker fixer awaits a decision")
    term.answer(DECISION, "f")
    term.answer("conclusion: ", "fixed")
    code = term.exit_code()
    screen = term.screen()
    assert code == 0, screen[-3000:]
    assert "refused" not in screen and "illegal transition" not in screen
    assert "run paused" not in screen  # the old run's notice was not put to the person
    states = {r["runId"]: r["state"] for r in status(state)}
    assert states.pop(old) == "paused"
    assert list(states.values()) == ["completed"]


def test_quit_at_the_offer_changes_nothing(tmp_path: Path) -> None:
    state, home, run_id = interrupted_run(tmp_path)
    term = wrapped(home, *dots_run_args(state, codex_bin(), PLAN))
    term.answer(f"[r]esume run {run_id}, start a [n]ew run, or [q]uit? ", "q")
    assert term.exit_code() == 0
    assert [(r["runId"], r["state"]) for r in status(state)] == [(run_id, "paused")]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "markertools", *args], capture_output=True, text=True, timeout=120, env=env
    )


@pytest.mark.rule("DOT-15")
def test_resume_refuses_unknown_finished_and_foreign_runs_in_one_line(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    import asyncio

    state = tmp_path / "state"
    env = {**os.environ, **offline_codex.env}
    proposal = plan(role("reader", workdir(tmp_path, "a")))

    async def foreign_and_finished() -> tuple[str, str]:
        async with running(offline_codex, state, confirmer=Confirm()) as sup:
            foreign = (await sup.start(proposal, owner="conversation-1"))["runId"]
            mine = (await sup.start(proposal, owner="terminal"))["runId"]
            await sup.control(owner="terminal", run_id=mine, action="cancel")
            await sup.control(owner="conversation-1", run_id=foreign, action="pause")
            return foreign, mine

    foreign, cancelled = asyncio.run(foreign_and_finished())
    base = ["dots", "run", "--codex-bin", offline_codex.binary, "--state-dir", str(state)]
    for run_id, reason in (
        ("0123abcd", f"markertools: --resume: no run '0123abcd' started by `dots run` in {state}"),
        (foreign, f"markertools: --resume: no run '{foreign}' started by `dots run` in {state}"),
        (cancelled, f"markertools: --resume: run {cancelled} is cancelled; nothing to resume"),
    ):
        done = cli(*base, "--resume", run_id, env=env)
        assert done.returncode == 2, done.stderr
        assert done.stderr == reason + "\n"
    both = cli(*base, str(PLAN), "--resume", foreign, env=env)
    assert (both.returncode, both.stderr) == (
        2, "markertools: --resume: give either PLAN.json or --resume RUN, not both\n"
    )
    neither = cli(*base, env=env)
    assert (neither.returncode, neither.stderr) == (
        2, "markertools: give PLAN.json to start a run, or --resume RUN to take back a paused one\n"
    )


@pytest.mark.rule("DOT-16")
def test_ctrl_c_while_a_turn_runs_pauses_the_run(offline_codex: OfflineCodex, tmp_path: Path) -> None:
    offline_codex.fake.push(Hang())
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan(role("reader", workdir(tmp_path, "a")))))
    state = tmp_path / "state"
    term = markertools(
        *dots_run_args(state, offline_codex.binary, plan_file), env={**os.environ, **offline_codex.env}
    )
    term.answer(CONFIRM, "y")
    term.wait_for("quota stop: off (stopAtLeftPercent is null), allowedModels none")
    term.answer(CONFIRM, "y")
    term.wait_for_pattern(r"reader +running +turns 1")
    term.ctrl_c()
    code = term.exit_code()
    screen = term.screen()
    assert code == 130, screen[-3000:]
    assert "Traceback" not in screen
    (run,) = status(state)
    assert f"paused run {run['runId']}; resume it with: {sys.executable} -m markertools dots run --resume" in screen
    assert run["state"] == "paused"
    # taken back: the cut turn is reported (DOT-11), never re-sent, and the person decides
    asked = len(offline_codex.fake.requests)
    term = markertools(
        *dots_run_args(state, offline_codex.binary, "--resume", run["runId"]),
        env={**os.environ, **offline_codex.env},
    )
    term.wait_for(f"resuming run {run['runId']}")
    term.wait_for("reply of reader: (no reply)")
    term.answer(DECISION, "c")
    code = term.exit_code()
    screen = term.screen()
    assert code == 0, screen[-3000:]
    assert "the host restarted while turns were unfinished ('reader'); they are not re-sent" in screen
    assert len(offline_codex.fake.requests) == asked


def test_ctrl_c_at_the_first_confirmation_starts_nothing(tmp_path: Path) -> None:
    state = tmp_path / "state"
    term = wrapped(tmp_path / "home", *dots_run_args(state, codex_bin(), PLAN))
    term.wait_for(CONFIRM)
    term.ctrl_c()
    code = term.exit_code()
    screen = term.screen()
    assert code == 130, screen[-3000:]
    assert "interrupted; no run was started or resumed" in screen
    assert "Traceback" not in screen
    assert list(state.glob("run-*")) == []
