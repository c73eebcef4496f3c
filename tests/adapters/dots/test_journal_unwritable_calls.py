"""Issue 26, item 2, in the supervisor's own calls (the real pinned Codex under the fake
model, an immutable state directory: writes fail for root too): a run whose journal
fails during a live turn is stopped - the turn interrupted, its app-server ended, the
run paused in memory - and the caller still reads its status; a budget raise or a tune
on it is refused before anybody is asked; a start whose record cannot be written creates
nothing; after a restart the run is as its journal holds it (the live turn paused,
never re-sent: DOT-11). And a dispatch whose fsync fails (a real I/O error) is refused."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from support.codex import OfflineCodex
from support.dots import OWNER, Confirm, plan, role, running, until, workdir, worker
from support.statedir import failing_disk, immutable

from markertools_adapters.codex.fakemodel import Hang, Text
from markertools_adapters.dots import DotsError, NotConfirmed


@pytest.mark.rule("DOT-1", "DOT-11", "DOT-14", "FLT-3")
def test_a_journal_that_fails_during_a_turn_stops_the_run_and_its_worker(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    fake = offline_codex.fake
    fake.push(Hang())
    state = tmp_path / "state"
    confirm = Confirm()
    out: dict[str, Any] = {}

    async def refused(call: Any) -> DotsError:
        try:
            await call
        except DotsError as exc:
            return exc
        raise AssertionError("the call was not refused")

    async def scenario() -> None:
        # FLT-3: the outage is ridden out for 1 s here (300 by default), then the run stops
        async with running(offline_codex, state, confirmer=confirm, store_outage_seconds=1) as sup:
            run_id = (await sup.start(plan(role("reader", workdir(tmp_path, "a"))), owner=OWNER))[
                "runId"
            ]
            out["run"] = run_id
            await until(fake.hanging.is_set)  # the turn is live at the model
            run = sup.runs[run_id]
            files = [p for p in state.iterdir() if p.is_file()]
            with immutable(state, *files):
                # a pause asked while the turn is live is the first write the journal
                # cannot take: refused, recording nothing; the outage is ridden out for
                # 1 s, then the run stops
                out["pause"] = await refused(sup.control(owner=OWNER, run_id=run_id, action="pause"))
                await until(lambda: run.journal.failed is not None)
                await until(lambda: not run.workers)  # interrupted, its app-server ended
                (out["view"],) = sup.status(owner=OWNER)
                asked = len(confirm.asked)
                out["budget"] = await refused(
                    sup.control(owner=OWNER, run_id=run_id, action="budget", budget=20)
                )
                out["tune"] = await refused(
                    sup.tune(owner=OWNER, run_id=run_id, worker="reader",
                             changes={"sandbox": "workspace-write"})
                )
                out["asked_meanwhile"] = len(confirm.asked) - asked
                before = sorted(p.name for p in state.iterdir())
                out["start"] = await refused(
                    sup.start(plan(role("other", workdir(tmp_path, "b"))), owner=OWNER)
                )
                out["new_files"] = sorted(p.name for p in state.iterdir()) != before
        async with running(offline_codex, state) as sup:
            (out["restarted"],) = sup.status(owner=OWNER, run_id=out["run"])
            out["requests"] = len(fake.responses_requests())

    asyncio.run(scenario())
    run_id = out["run"]
    view = out["view"]
    assert view["state"] == "paused" and view["pauseReason"] == "internal-error"
    assert view["pauseDetail"].startswith(f"the run's journal cannot be written (state directory {state} was unavailable for ")
    assert (
        " s, longer than the outage budget of 1 s (--store-outage-seconds); last error: "
        f"StateDirUnwritable: {state}/run-{run_id}.jsonl: cannot append (Operation not "
        "permitted)); the supervisor stopped the run"
    ) in view["pauseDetail"]
    assert out["pause"].message.startswith(f"run {run_id} cannot change now: the state directory")
    for exc in (out["budget"], out["tune"]):
        assert exc.field == "runId" and not isinstance(exc, NotConfirmed)
        assert exc.message.startswith(f"run {run_id} cannot change: its journal cannot be written")
    assert out["asked_meanwhile"] == 0  # nobody was asked about a change that cannot happen
    assert out["start"].message.startswith(f"the run could not be created: {state}/run-")
    assert out["start"].message.endswith(
        ".json: cannot be written (Operation not permitted); nothing was started"
    )
    assert not out["new_files"]
    restarted = out["restarted"]
    assert restarted["state"] == "paused" and restarted["pauseReason"] == "host-restart"
    reader = worker(restarted, "reader")
    assert reader["state"] == "paused"
    assert reader["interruptedInstructionHead"] == "reader: do your part"
    assert out["requests"] == 1  # the instruction was sent once, never again


@pytest.mark.rule("DOT-1", "DOT-13")
def test_a_dispatch_whose_fsync_fails_is_refused(offline_codex: OfflineCodex, tmp_path: Path) -> None:
    """`durable()` failing makes the call fail: the state directory on a disk whose
    fsync answers an I/O error (ext4 on a loop device whose backing store is full). The
    dispatch's line is written, its fsync fails and the file system refuses the cut, so
    the answer says the line may still apply after a restart; the run is stopped."""
    fake = offline_codex.fake
    fake.push(Text("reader: first"))
    out: dict[str, Any] = {}

    async def scenario(state: Path, fail: Any) -> None:
        async with running(offline_codex, state) as sup:
            run_id = (await sup.start(plan(role("reader", workdir(tmp_path, "a"))), owner=OWNER))[
                "runId"
            ]
            (view,) = await sup.wait(owner=OWNER, wait_ms=30_000)
            decision = worker(view, "reader")["decision"]["id"]
            fail()
            try:  # one synchronous call: nothing else reaches the disk in between
                sup.dispatch(owner=OWNER, run_id=run_id, worker="reader",
                             instruction="z" * 65_536, decision_id=decision)
            except DotsError as exc:
                out["refused"] = exc
            (out["view"],) = sup.status(owner=OWNER)
            out["run"], out["log"] = run_id, state / f"run-{run_id}.jsonl"

    with failing_disk(tmp_path / "disk") as (mnt, fail):
        asyncio.run(scenario(mnt / "state", fail))
    exc = out["refused"]
    assert exc.field == "runId"
    prefix = f"run {out['run']} cannot change: its journal cannot be written ({out['log']}: "
    assert exc.message.startswith(prefix)
    assert exc.message.endswith(
        "what this call wrote could not be removed again, so a restart may still apply it; the "
        "run stays stopped until the supervisor restarts with a writable state directory"
    )
    assert "fsync failed (" in exc.message
    assert out["view"]["state"] == "paused" and out["view"]["pauseReason"] == "internal-error"
    assert len(fake.responses_requests()) == 1  # the instruction never went out
