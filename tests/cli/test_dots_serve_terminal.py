"""The smaller `dots` points of issue 24 as a person meets them: `dots serve` started at a
terminal and stopped with Ctrl-C (exit 130, one line, no traceback, no hang, the host
lock released), its MCP `serverInfo.version` (the markertools version, not empty),
`dots run --help` naming its argument PLAN.json, and the launch confirmation's quota
stop wording, which docs/orchestration.md quotes."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from support.codex import OfflineCodex
from support.dots import Confirm, plan, role, running, workdir
from support.paths import REPO
from support.terminal import markertools

import markertools as package
from markertools_adapters.dots import NotConfirmed
from markertools_adapters.planstore import HostLock

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "a person's host", "version": "1"},
    },
}


@pytest.mark.rule("DOT-13")
def test_server_info_names_the_markertools_version(tmp_path: Path) -> None:
    serve = subprocess.Popen(
        [sys.executable, "-m", "markertools", "dots", "serve", "--state-dir", str(tmp_path / "s")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    out, err = serve.communicate(json.dumps(INITIALIZE) + "\n", timeout=60)
    assert serve.returncode == 0, err
    info = json.loads(out.splitlines()[0])["result"]["serverInfo"]
    assert info == {"name": "markertools-dots", "version": package.__version__}
    assert package.__version__


@pytest.mark.rule("DOT-16", "DOT-1")
def test_ctrl_c_stops_an_idle_server_cleanly(tmp_path: Path) -> None:
    state = tmp_path / "new" / "state"  # first use: created 0700
    term = markertools("dots", "serve", "--state-dir", str(state))
    term.child.setecho(False)
    term.type(json.dumps(INITIALIZE))
    term.wait_for('"serverInfo"')
    term.ctrl_c()
    code = term.exit_code()
    screen = term.screen()
    assert code == 130, screen
    assert screen.endswith(
        "markertools: interrupted; the runs stay in the state directory, paused-safe\n"
    )
    assert "Traceback" not in screen
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    HostLock.acquire(state).release()  # released: another supervisor may take the directory


def test_run_help_names_the_plan_file() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "markertools", "dots", "run", "--help"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "100"},
    )
    assert done.returncode == 0
    assert "Usage: python -m markertools dots run [OPTIONS] [PLAN.json]" in done.stdout
    assert "{plan}" not in done.stdout
    assert "--resume" in done.stdout


@pytest.mark.rule("DOT-14")
@pytest.mark.parametrize(
    ("stop", "shown"),
    [(None, "quota stop: off (stopAtLeftPercent is null)"), (25, "quota stop: at 25% left")],
)
def test_the_launch_confirmation_words_the_quota_stop_as_the_docs_show_it(
    offline_codex: OfflineCodex, tmp_path: Path, stop: int | None, shown: str
) -> None:
    confirm = Confirm("accept", "decline")
    proposal = plan(role("reader", workdir(tmp_path, "a")), quota={"stopAtLeftPercent": stop})

    async def ask() -> None:
        async with running(offline_codex, tmp_path / "state", confirmer=confirm) as sup:
            with pytest.raises(NotConfirmed):
                await sup.start(proposal, owner="terminal")

    asyncio.run(ask())
    limits = confirm.asked[1].text.splitlines()[-1]
    expected = f"limits: maxTurns 12, timeoutMs 600000, maxConcurrent 3, {shown}, allowedModels none"
    assert limits == expected
    docs = (REPO / "docs" / "orchestration.md").read_text()
    assert expected in docs  # both transcripts of docs/orchestration.md say it this way
    assert "none% left" not in docs
