"""`markertools dots run | status` as a person uses them: the real pinned Codex under the
fake model server (`python -m markertools_adapters.codex.fakemodel -- ...`, the README's
one-liner), the person answering on standard input: two confirmations, then a finish
for each role. The run completes and leaves run-<id>.json and a JSONL holding the
app-server's raw notifications; `dots status --json` prints it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.codex import codex_bin
from support.paths import REPO

PLAN = REPO / "examples" / "plans" / "reader-fixer.json"


def markertools(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "markertools_adapters.codex.fakemodel", "--",
         sys.executable, "-c", "from markertools_adapters.cli import main; main()", *args],
        input=stdin, capture_output=True, text=True, timeout=180, env=env,
    )


@pytest.mark.rule("DOT-2", "DOT-14")
def test_dots_run_completes_both_roles_with_the_person_as_decider(tmp_path: Path) -> None:
    state = tmp_path / "state"
    answers = "y\ny\nf\nthe fault is in parse.py\nf\nfixed\n"
    run = markertools("dots", "run", str(PLAN), "--codex-bin", codex_bin(), "--state-dir", str(state), "--json", stdin=answers)
    assert run.returncode == 0, run.stderr[-2000:]
    out = run.stdout
    assert "== Start this plan?\ngoal:\n  | find the fault in the parser and fix it\n" in out
    assert "== Launch these workers?" in out and "reader: cwd /tmp, sandbox read-only" in out
    assert "reply of reader: (fake model) Done: Find the fault and the smallest fix" in out
    final = json.loads(out[out.index("{\n"):])
    assert final["state"] == "completed"
    assert [w["state"] for w in final["workers"]] == ["completed", "completed"]
    run_id = final["runId"]
    assert (state / f"run-{run_id}.json").is_file()
    methods = [
        json.loads(json.loads(line)["notification"])["method"]
        for line in (state / f"run-{run_id}.jsonl").read_text().splitlines()
        if "notification" in json.loads(line)
    ]
    assert methods.count("turn/completed") == 2
    status = subprocess.run(
        [sys.executable, "-c", "from markertools_adapters.cli import main; main()", "dots", "status", "--state-dir", str(state), "--json"],
        capture_output=True, text=True, timeout=60,
    )
    assert status.returncode == 0
    assert [r["runId"] for r in json.loads(status.stdout)["runs"]] == [run_id]


@pytest.mark.rule("DOT-14")
def test_dots_run_declined_creates_nothing(tmp_path: Path) -> None:
    state = tmp_path / "state"
    run = markertools("dots", "run", str(PLAN), "--codex-bin", codex_bin(), "--state-dir", str(state), stdin="n\n")
    assert run.returncode == 1
    assert "the user did not confirm the plan (decline); nothing was started" in run.stderr
    assert list(state.glob("run-*")) == []


def test_dots_run_refuses_an_invalid_plan_naming_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    body = json.loads(PLAN.read_text())
    body["workers"][1]["dependsOn"] = ["ghost"]
    bad.write_text(json.dumps(body))
    run = markertools("dots", "run", str(bad), "--codex-bin", codex_bin(), "--state-dir", str(tmp_path / "s"))
    assert run.returncode == 1
    assert "$.workers[1].dependsOn[0]: unknown role 'ghost'" in run.stderr


@pytest.mark.rule("DOT-9")
def test_a_refused_answer_is_printed_and_the_prompt_comes_back(tmp_path: Path) -> None:
    state = tmp_path / "state"
    answers = "y\ny\nn\n   \nf\ndone\nf\nfixed\n"  # a blank instruction is refused
    run = markertools("dots", "run", str(PLAN), "--codex-bin", codex_bin(), "--state-dir", str(state), stdin=answers)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "refused: instruction must be a non-empty string" in run.stdout
    assert "completed (2/12 turns)" in run.stdout
