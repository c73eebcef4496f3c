"""Faults the real Codex binary can't produce on demand, through a scripted fake
app-server (tests/support/fake_appserver.py) that speaks only what the pinned binary's
schema allows: a crash mid-turn pauses the role and the supervisor lives on; a child
that hangs (ignoring turn/interrupt) is ended after the timeout; a garbage line is
skipped and the turn still completes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.dots import (
    FAKE,
    OWNER,
    Confirm,
    JsonSupervisor,
    Notices,
    fake_bin,
    plan,
    role,
    until,
    workdir,
    worker,
)

from markertools.plans import HostSettings
from markertools_adapters.dots import Supervisor


async def _run(
    tmp: Path, mode: str, body: dict[str, Any], until_pred: Any, after: Any = None, **kw: Any
) -> Any:
    sup = JsonSupervisor(Supervisor(
        tmp / "state",
        codex_bin=fake_bin(tmp, mode),
        confirmer=Confirm(),
        notifier=Notices(),
        settings=HostSettings(max_concurrent=3, poll_ms=60_000),
        tick_seconds=0.05,
        request_timeout=10.0,
        **kw,
    ))
    await sup.open()
    try:
        view = await sup.start(body, owner=OWNER)
        await until(lambda: until_pred(sup.status(owner=OWNER, run_id=view["runId"])[0]), 20)
        result = sup.status(owner=OWNER, run_id=view["runId"])[0]
        later = await after(sup, view["runId"]) if after is not None else None
        return result, later
    finally:
        await sup.close()


@pytest.mark.rule("DOT-3")
def test_a_worker_crashing_mid_turn_pauses_its_role_and_not_the_supervisor(tmp_path: Path) -> None:
    body = plan(role("reader", workdir(tmp_path, "a")))
    async def resume(sup: Supervisor, run_id: str) -> dict[str, Any]:
        return await sup.control(owner=OWNER, run_id=run_id, action="resume")

    view, resumed = asyncio.run(
        _run(tmp_path, "crash", body, lambda v: v["state"] == "paused", after=resume)
    )
    reader = worker(view, "reader")
    assert view["pauseReason"] == "worker-exit"
    assert reader["state"] == "paused" and reader["lastOutcome"] == "failed"
    alert = view["alerts"][-1]["message"]
    assert "role reader: the codex app-server stopped (exit code 17" in alert
    # the supervisor lived on: the run resumes and the role awaits a decision again
    assert resumed["state"] == "running"
    assert worker(resumed, "reader")["state"] == "awaiting-decision"


@pytest.mark.rule("DOT-3", "DOT-4")
def test_a_hung_worker_is_interrupted_then_ended_and_the_run_pauses(tmp_path: Path) -> None:
    body = plan(role("reader", workdir(tmp_path, "a")), timeoutMs=300)
    view, _ = asyncio.run(
        _run(tmp_path, "hang", body, lambda v: worker(v, "reader")["state"] == "paused", interrupt_grace=0.5)
    )
    assert view["state"] == "paused" and view["pauseReason"] == "timeout"
    assert worker(view, "reader")["lastOutcome"] == "timed_out"
    assert "role reader: the turn ran past timeoutMs (300 ms) and was interrupted" in view["alerts"][-1]["message"]


@pytest.mark.rule("DOT-3")
def test_a_garbage_line_is_skipped_and_the_turn_completes(tmp_path: Path) -> None:
    body = plan(role("reader", workdir(tmp_path, "a")))
    view, _ = asyncio.run(
        _run(tmp_path, "garbage", body, lambda v: worker(v, "reader")["state"] == "awaiting-decision")
    )
    reader = worker(view, "reader")
    assert reader["lastReplyHead"] == "fake app-server reply"
    assert reader["decision"]["id"]


def test_the_fake_speaks_only_what_the_real_schema_allows(codex_schema: Path, tmp_path: Path) -> None:
    """Every line the fake sends validates against the pinned binary's schema."""
    import jsonschema

    script = [
        {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "t", "version": "0"}}},
        {"method": "initialized"},
        {"id": 2, "method": "thread/start", "params": {"cwd": str(tmp_path)}},
        {"id": 3, "method": "turn/start", "params": {"threadId": "x", "input": []}},
    ]
    stdin = "".join(json.dumps(m) + "\n" for m in script)
    out = subprocess.run(
        [sys.executable, str(FAKE), "ok"], input=stdin, capture_output=True, text=True, timeout=30
    ).stdout
    v2 = codex_schema / "v2"
    responses = {1: "InitializeResponse", 2: "ThreadStartResponse", 3: "TurnStartResponse"}
    notification = json.loads((codex_schema / "ServerNotification.json").read_text())
    checked = 0
    for line in out.splitlines():
        msg = json.loads(line)
        if "id" in msg:
            name = responses[msg["id"]]
            (path,) = [p for p in (v2 / f"{name}.json", codex_schema / "v1" / f"{name}.json") if p.exists()]
            jsonschema.validate(msg["result"], json.loads(path.read_text()))
        else:
            body = {k: v for k, v in msg.items() if k != "emittedAtMs"}
            jsonschema.validate(body, notification)
        checked += 1
    assert checked == 7  # 3 responses, thread/started, turn/started, item/completed, turn/completed
