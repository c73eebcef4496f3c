"""A supervisor killed (SIGKILL) in the middle of a turn, then started again on the
same state directory: the host lock refused a second supervisor while the first lived;
the run comes back paused, the live role paused with its instruction kept, and nothing
is sent again - not on reload, not on resume (DOT-11, PLN-6)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.codex import OfflineCodex
from support.dots import OWNER, plan, role, running, workdir, worker
from support.paths import TESTS

from markertools_adapters.codex.fakemodel import Hang
from markertools_adapters.dots import DotsError, Supervisor


@pytest.mark.rule("DOT-1", "DOT-11", "PLN-6")
def test_killed_mid_turn_then_restarted_the_run_is_paused_and_nothing_is_resent(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    fake = offline_codex.fake
    fake.push(Hang())
    state = tmp_path / "state"
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan(role("reader", workdir(tmp_path, "a")))))
    env = {**offline_codex.env, "PYTHONPATH": os.pathsep.join(sys.path)}
    host = subprocess.Popen(
        [sys.executable, str(TESTS / "support" / "dots_host.py"), str(state), offline_codex.binary, str(plan_file)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = host.stdout.readline() if host.stdout else ""
        assert line.startswith("RUN "), host.stderr.read() if host.stderr else line
        run_id = line.split()[1]
        deadline = time.monotonic() + 30
        while not fake.hanging.is_set():  # the turn reached the model
            assert time.monotonic() < deadline and host.poll() is None
            time.sleep(0.05)

        async def second_host() -> str:
            with pytest.raises(DotsError) as held:
                await Supervisor(state, codex_bin=offline_codex.binary).open()
            return held.value.message

        refused = asyncio.run(second_host())
        assert f"pid {host.pid}" in refused or str(host.pid) in refused
        host.send_signal(signal.SIGKILL)
        host.wait(10)
    finally:
        if host.poll() is None:
            host.kill()
    assert len(fake.responses_requests()) == 1

    async def restarted() -> tuple[dict, dict, dict]:
        async with running(offline_codex, state) as sup:
            (view,) = sup.status(owner=OWNER, run_id=run_id)
            await asyncio.sleep(0.5)  # several ticks: nothing launches
            after_ticks = sup.status(owner=OWNER, run_id=run_id)[0]
            resumed = await sup.control(owner=OWNER, run_id=run_id, action="resume")
            await asyncio.sleep(0.5)
            return view, after_ticks, resumed

    view, after_ticks, resumed = asyncio.run(restarted())
    assert view["state"] == "paused" and view["pauseReason"] == "host-restart"
    reader = worker(view, "reader")
    assert reader["state"] == "paused"
    assert reader["interruptedInstructionHead"] == "reader: do your part"
    assert view["alerts"][-1]["message"].startswith("the host restarted")
    assert after_ticks["state"] == "paused"
    # resuming asks the decider again (a fresh decision id); the instruction is not re-sent
    assert worker(resumed, "reader")["state"] == "awaiting-decision"
    assert worker(resumed, "reader")["decision"]["id"]
    assert len(fake.responses_requests()) == 1
