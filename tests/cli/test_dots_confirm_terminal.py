"""`markertools dots run` at a terminal against spoofed confirmations (issue 26 item 3),
as a person meets them: a pseudo-terminal, the real pinned Codex (offline), the person
typing at the prompts. A plan whose free text draws a fake `== Launch these workers?`
header and a fake `limits:` line (newlines, an ESC sequence that moves the cursor up
and erases a line, a bidi override) is shown with that text fenced off, so the screen's
only lines starting with "==" are the two real questions and its only line starting
with "limits:" is the real one; a plan with a role named across two lines is refused
before any question, naming the field."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.codex import OfflineCodex
from support.dots import plan, role, workdir
from support.terminal import dots_run_args, markertools

CONFIRM = "Confirm? [y/N] "
FAKE_LIMITS = "limits: maxTurns 1, timeoutMs 1000 (SAFE)"
FAKE_HEADER = "== Launch these workers?"


def plan_file(tmp: Path, body: dict[str, object]) -> Path:
    path = tmp / "plan.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


@pytest.mark.rule("DOT-14")
def test_a_spoofing_plan_shows_only_the_real_headers_and_limits(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    body = plan(
        role(
            "reader",
            workdir(tmp_path, "a"),
            instruction=f"look\n\x1b[1A\x1b[2K{FAKE_LIMITS}",
            role=f"reads\r{FAKE_HEADER}",
        ),
        goal=f"fix it\n{FAKE_HEADER}\n{FAKE_LIMITS}",
        plan=f"read, then fix \u202e{FAKE_LIMITS}",
    )
    state = tmp_path / "state"
    term = markertools(
        *dots_run_args(state, offline_codex.binary, plan_file(tmp_path, body)),
        env={**os.environ, **offline_codex.env},
    )
    term.answer(CONFIRM, "y")
    term.wait_for("limits: maxTurns 12, timeoutMs 600000")
    term.answer(CONFIRM, "n")
    code = term.exit_code()
    screen = term.screen()
    assert code == 1, screen[-3000:]
    assert "the user did not confirm the launch (decline); nothing was started" in screen
    lines = screen.splitlines()
    assert [x for x in lines if x.startswith("==")] == [
        "== Start this plan?",
        "== Launch these workers?",
    ]
    assert [x for x in lines if x.startswith("limits:")] == [
        "limits: maxTurns 12, timeoutMs 600000, maxConcurrent 3, quota stop: off "
        "(stopAtLeftPercent is null), allowedModels none"
    ]
    assert f"  | {FAKE_HEADER}\n  | {FAKE_LIMITS}\n" in screen
    assert f"      | reads\\r{FAKE_HEADER}\n" in screen
    assert f"      | \\x1b[1A\\x1b[2K{FAKE_LIMITS}\n" in screen
    assert f"  | read, then fix \\u202e{FAKE_LIMITS}\n" in screen
    assert "Traceback" not in screen
    assert list(state.glob("run-*")) == []


@pytest.mark.rule("DOT-14", "PLN-2")
def test_a_role_named_across_two_lines_is_refused_before_any_question(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    hostile = {**role("reader", workdir(tmp_path, "a")), "name": f"reader\n{FAKE_LIMITS}"}
    state = tmp_path / "state"
    term = markertools(
        *dots_run_args(state, offline_codex.binary, plan_file(tmp_path, plan(hostile))),
        env={**os.environ, **offline_codex.env},
    )
    code = term.exit_code()
    screen = term.screen()
    assert code == 1, screen[-3000:]
    assert screen.splitlines() == [
        "markertools: $.workers[0].name: must not contain control characters (line breaks, "
        "tabs, escapes, bidi controls): found U+000A at character 7"
    ]
    assert list(state.glob("run-*")) == []
