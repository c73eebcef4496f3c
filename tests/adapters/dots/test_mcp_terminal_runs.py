"""docs/orchestration.md "Runs started at the terminal": the runs `dots run` starts belong
to the conversation "terminal", so `dots serve --conversation terminal` (on the same state
directory, once `dots run` has ended) sees them and drives them with the ordinary tools.
Here: a person starts the plan at a terminal (a pseudo-terminal, the real pinned Codex
under the fake model), presses Ctrl-C at the first decision; an MCP host then resumes the
run and finishes both roles over stdio; a server without that conversation sees nothing."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from support.codex import OfflineCodex
from support.dots import plan, role, workdir
from support.terminal import dots_run_args, markertools
from test_mcp_support import LEGACY, Answers, call, ok

from markertools_adapters.codex.fakemodel import Text

MARKERTOOLS = str(Path(sys.executable).parent / "markertools")


@pytest.mark.rule("DOT-15", "DOT-11")
def test_dots_serve_as_the_terminal_conversation_drives_a_run_dots_run_started(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    offline_codex.fake.push(Text("reader: parse.py:3"), Text("fixer: fixed"))
    state = tmp_path / "state"
    plan_file = tmp_path / "plan.json"
    body = plan(role("reader", workdir(tmp_path, "a")), role("fixer", workdir(tmp_path, "b"), dependsOn=["reader"]))
    plan_file.write_text(json.dumps(body))
    env = {**os.environ, **offline_codex.env}
    term = markertools(*dots_run_args(state, offline_codex.binary, plan_file), env=env)
    term.answer("Confirm? [y/N] ", "y")
    term.answer("Confirm? [y/N] ", "y")
    term.wait_for("[n]ext instruction, [f]inish with a conclusion, [p]ause, [c]ancel? ")
    term.ctrl_c()
    assert term.exit_code() == 130
    found = re.search(r"paused run ([0-9a-f]{32});", term.screen())
    assert found is not None
    run_id = found.group(1)

    def server(*extra: str) -> Client:
        args = ["dots", "serve", "--state-dir", str(state), "--codex-bin", offline_codex.binary, *extra]
        params = StdioServerParameters(command=MARKERTOOLS, args=args, env=env)
        return Client(params, mode=LEGACY, elicitation_callback=Answers(), read_timeout_seconds=60)

    async def scenario() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with server() as c:  # a fresh conversation: the terminal's runs are not its own
            out["stranger"] = ok(await call(c, "dots_status"))["runs"]
        async with server("--conversation", "terminal") as c:
            (out["seen"],) = ok(await call(c, "dots_status"))["runs"]
            ok(await call(c, "dots_control", {"runId": run_id, "action": "resume"}))
            for name, conclusion in (("reader", "parse.py:3"), ("fixer", "fixed")):
                (pending,) = ok(await call(c, "dots_status", {"waitMs": 30_000}))["pendingDecisions"]
                assert pending["worker"] == name
                args = {"runId": run_id, "worker": name, "decisionId": pending["decisionId"], "conclusion": conclusion}
                out["final"] = ok(await call(c, "dots_finish", args))
        return out

    out = asyncio.run(scenario())
    assert out["stranger"] == []
    assert (out["seen"]["runId"], out["seen"]["state"]) == (run_id, "paused")
    assert out["seen"]["pauseDetail"] == "paused on request"
    assert out["final"]["state"] == "completed"
    assert [w["state"] for w in out["final"]["workers"]] == ["completed", "completed"]
