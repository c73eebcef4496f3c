"""Issue 26, item 2: a call that returned an error took effect later. `markertools dots
serve` over stdio (the MCP SDK client), the real pinned Codex under the fake model, and
a state directory that stops taking writes mid-run - for real, also for root: the
directory and its files made immutable (`chattr +i`), which refuses even the log
descriptor the server opened before.

- The journal takes nothing: `dots_dispatch` is a structured tool error naming the
  cause; the run waits out the outage (FLT-3); nothing is appended or logged again while
  it lasts (lines counted over 10 s without client activity); writable again, the server
  says the outage ended and goes on: the refused dispatch did not happen (no event, no
  turn), and a new dispatch runs.
- The journal takes lines but no record can be saved (only the directory and the record
  immutable, the open log still writable): every call that succeeds is durable in the
  log, the failed checkpoint is one warning and is not retried in a loop (lines counted
  over 10 s), and a restart replays the run from its log."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from support.codex import OfflineCodex
from support.dots import plan, role, workdir
from support.statedir import immutable
from test_mcp_support import LEGACY, Answers, call, ok, refused

from markertools.plans import Dispatch
from markertools_adapters.codex.fakemodel import Text
from markertools_adapters.planstore import PlanStore

MARKERTOOLS = str(Path(sys.executable).parent / "markertools")
KEY = "chat-26"
QUIET_SECONDS = 10  # no client activity: what the server does on its own is counted


@asynccontextmanager
async def served(codex: OfflineCodex, state: Path, errors: Path) -> AsyncIterator[Client]:
    args = ["dots", "serve", "--state-dir", str(state), "--codex-bin", codex.binary]
    args += ["--poll-ms", "1000"]
    env = {**codex.env, "PYTHONPATH": os.pathsep.join(sys.path)}  # this checkout's code
    params = StdioServerParameters(command=MARKERTOOLS, args=args, env=env)
    with open(errors, "a") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog), mode=LEGACY, elicitation_callback=Answers(),
            read_timeout_seconds=60,
        ) as c:
            yield c


def lines(path: Path) -> int:
    return len(path.read_bytes().splitlines())


def events(state: Path, run_id: str) -> list[str]:
    return [type(e.event).__name__ for e in PlanStore(state, create=False).read_events(run_id)]


async def first_decision(c: Client, tmp: Path) -> tuple[str, dict[str, Any]]:
    proposal = plan(role("reader", workdir(tmp, "work")))
    run_id = ok(await call(c, "dots_start", {"proposal": proposal}, KEY))["runId"]
    (pending,) = ok(await call(c, "dots_status", {"waitMs": 30_000}, KEY))["pendingDecisions"]
    return run_id, pending


def dispatch_args(run_id: str, pending: dict[str, Any], text: str) -> dict[str, Any]:
    return {
        "runId": run_id,
        "worker": "reader",
        "decisionId": pending["decisionId"],
        "instruction": text,
    }


@pytest.mark.rule("DOT-1", "DOT-11", "DOT-13", "FLT-3")
def test_a_dispatch_that_cannot_be_recorded_fails_and_never_happens_later(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    """Since FLT-3 (turn 5) a directory that refuses writes is an outage the server
    rides out (up to --store-outage-seconds, 300 by default) rather than the end of
    the run; what issue 26 asked still holds: a refused call records nothing and never
    happens later, and nothing is retried in a way anyone sees (one line when the
    outage begins, one when it ends; no line appended while it lasts)."""
    fake = offline_codex.fake
    fake.push(Text("reader: first"), Text("reader: second"))
    state = tmp_path / "state"
    errors = tmp_path / "serve.stderr"
    out: dict[str, Any] = {}

    async def scenario() -> None:
        async with served(offline_codex, state, errors) as c:
            run_id, pending = await first_decision(c, tmp_path)
            out["run"], out["pending"] = run_id, pending
            log = state / f"run-{run_id}.jsonl"
            files = [p for p in state.iterdir() if p.is_file()]
            with immutable(state, *files):
                out["lines"] = lines(log)
                out["refused"] = refused(
                    await call(c, "dots_dispatch", dispatch_args(run_id, pending, "go on"), KEY)
                )
                out["status"] = ok(await call(c, "dots_status", {}, KEY))
                out["again"] = refused(
                    await call(c, "dots_dispatch", dispatch_args(run_id, pending, "retry"), KEY)
                )
                said = errors.read_text()
                time.sleep(QUIET_SECONDS)  # the whole event loop of the test waits too
                out["quiet_lines"] = lines(log)
                out["quiet_said"] = errors.read_text()[len(said):]
                out["said"] = said
            # writable again: the same server goes on once its retry gets through
            while "outage ended" not in errors.read_text():
                await asyncio.sleep(0.1)
            ok(await call(c, "dots_dispatch", dispatch_args(run_id, pending, "go on"), KEY))
            (second,) = ok(await call(c, "dots_status", {"waitMs": 30_000}, KEY))[
                "pendingDecisions"
            ]
            out["second"] = second

    asyncio.run(scenario())
    run_id = out["run"]
    log = state / f"run-{run_id}.jsonl"
    text, field = out["refused"]
    why = f"{log}: cannot append (Operation not permitted)"
    assert field == "runId"
    assert text.startswith(
        f"dots_dispatch: runId: run {run_id} cannot change now: the state directory has "
        f"refused writes for "
    )
    assert text.endswith(
        f" s ({why}); nothing of this call was recorded or done. Try again once it takes "
        "writes: the supervisor keeps retrying for up to 300 s (--store-outage-seconds)"
    )
    assert out["again"][1] == "runId" and "nothing of this call was recorded" in out["again"][0]
    (view,) = out["status"]["runs"]
    assert view["state"] == "running"  # not stopped: the outage is ridden out
    assert out["status"]["pendingDecisions"][0]["decisionId"] == out["pending"]["decisionId"]
    # nothing appended, no retry anyone sees: the log and the server's words stay still
    assert out["quiet_lines"] == out["lines"]
    assert out["quiet_said"] == ""
    assert out["said"].count("outage began") == 1
    assert f"state directory {state} outage began: StateDirUnwritable: {why}" in out["said"]
    said = errors.read_text()
    assert said.count("outage ended") == 1 and "Traceback" not in said
    # the refused dispatches never happened; the one answered did, and the run went on
    assert out["second"]["replyHead"] == "reader: second"
    assert len(fake.responses_requests()) == 2
    assert events(state, run_id).count(Dispatch.__name__) == 1
    dispatched = [e.event for e in PlanStore(state, create=False).read_events(run_id)
                  if isinstance(e.event, Dispatch)]
    assert [d.instruction for d in dispatched] == ["go on"]
    assert PlanStore(state, create=False).read_raw(run_id, "outage") == [{"cause": why}]


@pytest.mark.rule("DOT-1", "DOT-11", "DOT-10")
def test_a_record_that_cannot_be_saved_costs_one_warning_and_no_loop(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    fake = offline_codex.fake
    fake.push(Text("reader: first"), Text("reader: second"))
    state = tmp_path / "state"
    errors = tmp_path / "serve.stderr"
    out: dict[str, Any] = {}

    async def scenario() -> None:
        async with served(offline_codex, state, errors) as c:
            run_id, pending = await first_decision(c, tmp_path)
            out["run"] = run_id
            record, log = state / f"run-{run_id}.json", state / f"run-{run_id}.jsonl"
            with immutable(state, record):  # the log, opened already, still takes lines
                ok(await call(c, "dots_dispatch", dispatch_args(run_id, pending, "go on"), KEY))
                (out["second"],) = ok(await call(c, "dots_status", {"waitMs": 30_000}, KEY))[
                    "pendingDecisions"
                ]
                finish = {"runId": run_id, "conclusion": "done: reader: second"}
                out["finished"] = ok(await call(c, "dots_finish", finish, KEY))
                await call(c, "dots_status", {"waitMs": 2_000}, KEY)  # the end notice out
                out["lines"] = lines(log)
                time.sleep(QUIET_SECONDS)
                out["quiet_lines"] = lines(log)
                out["said"] = errors.read_text()
                out["record_status"] = PlanStore(state, create=False).load(run_id).status
        async with served(offline_codex, state, errors) as c:  # writable again
            out["restarted"] = ok(await call(c, "dots_status", {}, KEY))

    asyncio.run(scenario())
    assert out["second"]["replyHead"] == "reader: second"  # the dispatch answered ran
    assert out["finished"]["state"] == "completed"
    assert out["quiet_lines"] == out["lines"]
    record = state / f"run-{out['run']}.json"
    warning = (
        f"run {out['run']}: the record could not be saved ({record}: cannot be saved "
        "(Operation not permitted)); its log holds every event, the save is tried again after "
        "64 more events"
    )
    assert out["said"].count(warning) == 1, out["said"]
    assert "Traceback" not in out["said"]
    assert out["record_status"] == "ready"  # as created: everything since is in the log only
    (after,) = out["restarted"]["runs"]
    assert after["state"] == "completed"  # the log held it all
    assert [w["turns"] for w in after["workers"]] == [2]
    assert len(fake.responses_requests()) == 2
