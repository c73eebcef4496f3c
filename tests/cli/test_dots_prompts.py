"""The prompts of `markertools dots run` take only their exact answers (issue 35 item 5),
as a person meets them in a pseudo-terminal, on the README's demo (the real pinned Codex
under the fake model): "continue please" at the decision prompt used to cancel the whole
run (its first letter, `c`, was taken), "please pause" paused it. Now an answer acts
only when it is one of the prompt's words (`n`/`next`, `f`/`finish`, `p`/`pause`,
`c`/`cancel`; on a pause `r`/`resume`, `c`/`cancel`, `q`/`quit`; at a confirmation
`y`/`yes`, `n`/`no`, Enter), case and surrounding spaces aside; anything else is asked
again, naming the accepted answers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.codex import codex_bin
from support.terminal import PLAN, dots_run_args, wrapped

DECISION = "[n]ext instruction, [f]inish with a conclusion, [p]ause, [c]ancel? "
PAUSED = "[r]esume, [c]ancel or [q]uit (the run stays paused)? "
CONFIRM = "Confirm? [y/N] "
AGAIN_DECISION = "answer n or next, f or finish, p or pause, c or cancel"


def runs(state: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "markertools", "dots", "status", "--state-dir", str(state), "--json"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["runs"]  # type: ignore[no-any-return]


@pytest.mark.rule("DOT-14", "DOT-9")
def test_only_the_exact_answers_act_and_anything_else_is_asked_again(tmp_path: Path) -> None:
    state = tmp_path / "state"
    term = wrapped(tmp_path / "home", *dots_run_args(state, codex_bin(), PLAN))
    term.answer(CONFIRM, "yep")  # not an answer: asked again, nothing declined
    term.wait_for('"yep" is not one of the answers; answer y or yes, Enter or n or no')
    term.answer(CONFIRM, " Y ")
    term.answer(CONFIRM, "yes")
    term.wait_for("worker reader awaits a decision")
    term.answer(DECISION, "continue please")  # began with "c": it used to cancel the run
    term.wait_for(f'"continue please" is not one of the answers; {AGAIN_DECISION}')
    term.answer(DECISION, "please pause")  # ended in a choice's word: still no answer
    term.wait_for(f'"please pause" is not one of the answers; {AGAIN_DECISION}')
    term.answer(DECISION, "cancle")  # a typo of the destructive answer
    term.wait_for(f'"cancle" is not one of the answers; {AGAIN_DECISION}')
    assert [r["state"] for r in runs(state)] == ["running"]
    term.answer(DECISION, "  PAUSE ")  # the word, in capitals, with spaces: pauses
    term.answer(PAUSED, "cancel it")
    term.wait_for('"cancel it" is not one of the answers; answer r or resume, c or cancel, q or quit')
    term.answer(PAUSED, "Resume")
    term.wait_for("worker reader awaits a decision")
    # issue 37 item 6 at the decision prompt: the reply (the fake echoes the
    # instruction) carries a tag character and a zero-width space, shown escaped
    term.answer(DECISION, "n")
    term.answer("instruction: ", "list them\U000e0041\u200b")
    term.wait_for("reply of reader: (fake model) Done: list them\\U000e0041\\u200b")
    term.answer(DECISION, "F")
    term.answer("conclusion: ", "parse.py line 3")
    term.wait_for("worker fixer awaits a decision")
    term.answer(DECISION, "finish")
    term.answer("conclusion: ", "fixed")
    code = term.exit_code()
    screen = term.screen()
    assert code == 0, screen[-3000:]
    assert "Traceback" not in screen and "refused" not in screen
    assert "\U000e0041" not in screen.split("instruction: ", 1)[1].split("\n", 1)[1]
    (run,) = runs(state)
    assert run["state"] == "completed"
    assert [w["state"] for w in run["workers"]] == ["completed", "completed"]
