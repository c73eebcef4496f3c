"""FLT-3 for the orchestration supervisor: its store is the state directory, and a
directory that refuses writes for a while - full (ENOSPC, a small tmpfs filled for
real), read-only or immutable - is an outage it rides out, up to
`--store-outage-seconds` (300 by default). Running turns keep running; their events wait
in memory, in order; nothing is launched, no notice goes out and a call that would
change the run is refused ("nothing of this call was recorded or done; try again");
one warning when the outage begins and one when it ends, with the cause; then the run
goes on. Past the budget the runs still waiting stop as before (an alert, a clean stop)
and `dots serve` exits 75. On the real pinned Codex (offline, the fake model); the
directory fills up exactly when the model is asked (from the fake's own callback), so
the turn ends inside the outage without any timing."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.codex import OfflineCodex
from support.dots import OWNER, Confirm, Notices, plan, role, running, until, workdir
from support.statedir import immutable

from markertools.plans import Dispatch, TurnEnded
from markertools_adapters.codex.fakemodel import Text
from markertools_adapters.dots import DotsError
from markertools_adapters.planstore import PlanStore


def decision_notices(notices: Notices, run_id: str) -> list[str]:
    return [n.decision_id or "" for n in notices.seen if n.run_id == run_id and n.kind == "decision"]


@pytest.mark.rule("FLT-3", "DOT-1")
def test_a_state_directory_refusing_writes_mid_turn_is_ridden_out_and_the_run_goes_on(
    offline_codex: OfflineCodex, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The run's log made immutable (`chattr +i`: refused even through the descriptor
    the supervisor holds, even for root) the moment the model is asked; a filled tmpfs
    would not do here, since a log's last page still takes small lines."""
    caplog.set_level(logging.WARNING, logger="markertools.dots")
    state = tmp_path / "state"
    fake = offline_codex.fake
    filler: list[Any] = []

    def full_when_asked(body: Any) -> Text:  # the model is asked: the log takes no line now
        if not filler:
            (log,) = state.glob("run-*.jsonl")
            frozen = immutable(log)
            frozen.__enter__()
            filler.append(frozen)
            return Text("reader: first")
        return Text("reader: second")

    fake.default_reply = None  # every request goes to the callback
    fake.reply_for = full_when_asked
    notices = Notices()
    out: dict[str, Any] = {}

    async def scenario() -> None:
        async with running(offline_codex, state, notifier=notices) as sup:
            run_id = (await sup.start(plan(role("reader", workdir(tmp_path, "a"))), owner=OWNER))["runId"]
            run = sup.sup.runs[run_id]
            await until(lambda: run.journal.pending, 60)  # the turn ended inside the outage
            await until(lambda: run.state.role("reader").status == "awaiting-decision", 60)
            out["live_on"] = run.journal.failed is None and run.state.status == "running"
            out["notices_meanwhile"] = decision_notices(notices, run_id)
            decision = run.state.role("reader").decision_id
            try:
                sup.dispatch(owner=OWNER, run_id=run_id, worker="reader", instruction="go on",
                             decision_id=decision)
            except DotsError as exc:
                out["refused"] = exc.message
            filler[0].__exit__(None, None, None)  # writable again
            await until(lambda: not run.journal.pending, 60)
            await until(lambda: decision in decision_notices(notices, run_id), 60)
            sup.dispatch(owner=OWNER, run_id=run_id, worker="reader", instruction="go on",
                         decision_id=decision)
            await until(lambda: len(decision_notices(notices, run_id)) == 2, 60)
            second = run.state.role("reader").decision_id
            sup.finish(owner=OWNER, run_id=run_id, worker="reader", conclusion="done", decision_id=second)
            out["final"] = sup.status(owner=OWNER, run_id=run_id)[0]
            out["run"] = run_id

    try:
        asyncio.run(scenario())
    finally:
        if filler:
            filler[0].__exit__(None, None, None)
    logged = PlanStore(state, create=False).read_events(out["run"])
    assert out["live_on"]  # not stopped: the outage was ridden out
    assert out["notices_meanwhile"] == []  # nothing went out before the turn's end was durable
    log = state / f"run-{out['run']}.jsonl"
    assert out["refused"].startswith(
        f"run {out['run']} cannot change now: the state directory has refused writes for "
    )
    assert f"({log}: cannot append (Operation not permitted)); nothing of this call was " \
        "recorded or done" in out["refused"]
    assert out["final"]["state"] == "completed"
    assert out["final"]["workers"][0]["turns"] == 2
    kinds = [type(e.event).__name__ for e in logged]
    assert kinds.count(TurnEnded.__name__) == 2 and kinds.count(Dispatch.__name__) == 1
    began = [r.getMessage() for r in caplog.records if "outage began" in r.getMessage()]
    ended = [r.getMessage() for r in caplog.records if "outage ended" in r.getMessage()]
    assert began == [f"state directory {state} outage began: StateDirUnwritable: {log}: cannot "
                     "append (Operation not permitted)"]
    assert len(ended) == 1 and ended[0].startswith(f"state directory {state} outage ended after ")
    assert "(Operation not permitted)" in ended[0]
    assert len(fake.responses_requests()) == 2  # each instruction sent once


INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def tool_call(rid: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}


@pytest.mark.rule("FLT-3", "DOT-16")
def test_dots_serve_stops_cleanly_with_exit_75_past_the_outage_budget(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    """A run of the terminal is taken over by `dots serve --conversation terminal
    --store-outage-seconds 1`; the directory and the run's log turn immutable; the
    dispatch is refused, the outage outlasts its second: the server closes the
    supervisor (children ended, host lock released) and exits 75 with one line saying
    why."""
    state = tmp_path / "state"
    offline_codex.fake.push(Text("reader: first"))

    async def paused_run() -> str:
        async with running(offline_codex, state, confirmer=Confirm()) as sup:
            run_id = (await sup.start(plan(role("reader", workdir(tmp_path, "a"))), owner="terminal"))["runId"]
            await until(lambda: bool(sup.pending_decisions(owner="terminal")), 60)
            await sup.control(owner="terminal", run_id=run_id, action="pause")
            return str(run_id)

    run_id = asyncio.run(paused_run())
    serve = subprocess.Popen(
        [sys.executable, "-m", "markertools", "dots", "serve", "--state-dir", str(state),
         "--codex-bin", offline_codex.binary, "--conversation", "terminal",
         "--store-outage-seconds", "1"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **offline_codex.env},
    )
    assert serve.stdin is not None and serve.stdout is not None

    def send(message: dict[str, Any]) -> dict[str, Any]:
        """Send a request; its answer (notifications in between are skipped)."""
        assert serve.stdin is not None and serve.stdout is not None
        serve.stdin.write(json.dumps(message) + "\n")
        serve.stdin.flush()
        while True:
            answer: dict[str, Any] = json.loads(serve.stdout.readline())
            if answer.get("id") == message["id"]:
                return answer

    send(INITIALIZE)
    serve.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    resumed = send(tool_call(2, "dots_control", {"runId": run_id, "action": "resume"}))
    (pending,) = resumed["result"]["structuredContent"]["pendingDecisions"]
    with immutable(state / f"run-{run_id}.jsonl", state):
        refused = send(tool_call(3, "dots_dispatch", {
            "runId": run_id, "worker": "reader", "decisionId": pending["decisionId"],
            "instruction": "go on",
        }))
        code = serve.wait(timeout=120)  # stdin stays open: only the outage ends it
    err = serve.stderr.read() if serve.stderr else ""
    logged = PlanStore(state, create=False).read_events(run_id)
    assert refused["result"]["isError"] is True
    assert "nothing of this call was recorded or done" in refused["result"]["content"][0]["text"]
    assert code == 75, err
    assert err.count("outage began") == 1 and "Traceback" not in err
    assert err.splitlines()[-1] == (
        f"markertools: state directory {state} refused writes for longer than "
        "--store-outage-seconds (1 s); the runs waiting on it were stopped and the supervisor "
        "closed (exit 75: start it again once the directory takes writes)"
    )
    assert Dispatch.__name__ not in [type(e.event).__name__ for e in logged]  # never happened
