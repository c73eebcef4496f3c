"""The supervisor's pauses and limits against the real pinned Codex (offline): a turn
past timeoutMs is interrupted and pauses the run; an approval request is declined, the
turn interrupted and the run paused; a model not in model/list pauses before any turn;
the quota threshold stops new turns, lets the live one end (stopping) and pauses; an
existing thread is resumed with this plan's sandbox and approval policy; a turn the
supervisor did not start pauses the run; same-cwd and maxConcurrent limits hold; a
thread owned by an unfinished run can't be taken twice; other conversations see no run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from support.codex import OfflineCodex
from support.dots import (
    OWNER,
    Confirm,
    plan,
    raw_notifications,
    role,
    running,
    until,
    workdir,
    worker,
)

from markertools.plans import HostSettings
from markertools_adapters.codex.fakemodel import (
    Hang,
    ShellCall,
    Text,
    last_user_text,
    rate_limit_headers,
)
from markertools_adapters.dots import DotsError, NotConfirmed, RunNotFound


def view_of(sup: Any, run_id: str) -> dict[str, Any]:
    return sup.status(owner=OWNER, run_id=run_id)[0]


@pytest.mark.rule("DOT-4")
def test_a_turn_past_its_timeout_is_interrupted_and_the_run_pauses(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    offline_codex.fake.push(Hang())
    body = plan(role("reader", workdir(tmp_path, "a")), timeoutMs=800)

    async def go() -> tuple[dict[str, Any], str]:
        async with running(offline_codex, tmp_path / "s") as sup:
            run_id = (await sup.start(body, owner=OWNER))["runId"]
            await until(lambda: worker(view_of(sup, run_id), "reader")["state"] == "paused")
            return view_of(sup, run_id), run_id

    view, run_id = asyncio.run(go())
    assert view["state"] == "paused" and view["pauseReason"] == "timeout"
    assert worker(view, "reader")["lastOutcome"] == "timed_out"
    assert "the turn ran past timeoutMs (800 ms) and was interrupted" in view["alerts"][-1]["message"]
    completed = [m for m in raw_notifications(tmp_path / "s", run_id) if m["method"] == "turn/completed"]
    assert [m["params"]["turn"]["status"] for m in completed] == ["interrupted"]


@pytest.mark.rule("DOT-7")
def test_an_approval_request_is_declined_the_turn_interrupted_and_the_run_paused(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    cwd = workdir(tmp_path, "a")
    marker = cwd / "approved-marker"
    offline_codex.fake.push(ShellCall(f"touch {marker}"), Text("after the refusal"))
    body = plan(role("reader", cwd, sandbox="workspace-write"))

    async def go() -> tuple[dict[str, Any], str]:
        async with running(offline_codex, tmp_path / "s") as sup:
            run_id = (await sup.start(body, owner=OWNER))["runId"]
            await until(lambda: worker(view_of(sup, run_id), "reader")["state"] == "paused")
            return view_of(sup, run_id), run_id

    view, run_id = asyncio.run(go())
    assert view["pauseReason"] == "approval"
    alert = view["alerts"][-1]["message"]
    assert alert.startswith("role reader asked for command approval (")
    assert "it was declined and the turn interrupted" in alert
    assert not marker.exists()  # nothing was approved
    raws = raw_notifications(tmp_path / "s", run_id)
    items = [
        m["params"]["item"] for m in raws
        if m["method"] == "item/completed" and m["params"]["item"]["type"] == "commandExecution"
    ]
    assert items and all(i["status"] == "declined" for i in items)
    statuses = [m["params"]["turn"]["status"] for m in raws if m["method"] == "turn/completed"]
    assert statuses == ["interrupted"]


@pytest.mark.rule("DOT-5")
def test_a_model_not_in_model_list_pauses_before_any_turn(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    body = plan(role("reader", workdir(tmp_path, "a"), model="gpt-nonexistent"))

    async def go() -> dict[str, Any]:
        async with running(offline_codex, tmp_path / "s") as sup:
            run_id = (await sup.start(body, owner=OWNER))["runId"]
            await until(lambda: view_of(sup, run_id)["state"] == "paused")
            return view_of(sup, run_id)

    view = asyncio.run(go())
    assert view["pauseReason"] == "model"
    assert view["alerts"][-1]["message"] == (
        "role reader: model gpt-nonexistent is not offered by model/list "
        "(offered: fake-model, fake-mini)"
    )
    reader = worker(view, "reader")
    assert reader["state"] == "queued" and reader["turns"] == 0  # its instruction is kept
    assert offline_codex.fake.responses_requests() == []  # no turn was started


@pytest.mark.rule("DOT-5")
def test_an_effort_the_model_does_not_offer_pauses_naming_the_offered_ones(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    body = plan(role("reader", workdir(tmp_path, "a"), model="fake-mini", effort="max"))

    async def go() -> dict[str, Any]:
        async with running(offline_codex, tmp_path / "s") as sup:
            run_id = (await sup.start(body, owner=OWNER))["runId"]
            await until(lambda: view_of(sup, run_id)["state"] == "paused")
            return view_of(sup, run_id)

    view = asyncio.run(go())
    assert view["alerts"][-1]["message"] == (
        "role reader: effort max is not offered by model/list (offered: low, medium, high, xhigh)"
    )


@pytest.mark.rule("DOT-8", "PLN-8")
def test_the_quota_threshold_stops_new_turns_lets_the_live_one_end_then_pauses(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    fake = offline_codex.fake
    fake.rate_limit_headers = rate_limit_headers(80.0, 300, 1893456000)  # 20 % left
    fake.default_reply = None
    fake.reply_for = lambda body: (  # the slow role's turn outlives the fast one's
        Text("slow reply", delay=2.5) if "slow" in (last_user_text(body) or "") else Text("fast reply")
    )
    body = plan(
        role("slow", workdir(tmp_path, "a")),
        role("fast", workdir(tmp_path, "b")),
        quota={"stopAtLeftPercent": 25},
    )
    seen: list[str] = []

    async def go() -> dict[str, Any]:
        settings = HostSettings(max_concurrent=3, poll_ms=1000)
        async with running(offline_codex, tmp_path / "s", settings=settings) as sup:
            run_id = (await sup.start(body, owner=OWNER))["runId"]

            def stopping() -> bool:
                seen.append(worker(view_of(sup, run_id), "slow")["state"])
                return seen[-1] == "stopping"

            await until(stopping)  # the fast turn's end showed 20 % left: stop
            assert view_of(sup, run_id)["state"] == "paused"
            # the live turn is not interrupted: it ends by itself, then the role pauses
            await until(lambda: worker(view_of(sup, run_id), "slow")["state"] == "paused")
            await asyncio.sleep(1.5)  # a poll later: still no new turn
            return view_of(sup, run_id)

    view = asyncio.run(go())
    assert view["pauseReason"] == "quota"
    assert view["quota"]["windows"][0] == {"leftPercent": 20.0, "bucket": "codex", "windowMinutes": 300}
    slow, fast = worker(view, "slow"), worker(view, "fast")
    assert slow["lastOutcome"] == "completed" and slow["lastReplyHead"] == "slow reply"
    assert fast["state"] == "paused" and "decision" not in fast
    alert = next(a["message"] for a in view["alerts"] if a["message"].startswith("quota window"))
    assert alert == (
        "quota window (bucket codex, 300 minutes) has 20% left, at or below the stop "
        "threshold 25%"
    )
    assert len(fake.responses_requests()) == 2  # no new turn after the stop


@pytest.mark.rule("DOT-3", "DOT-12")
def test_an_existing_thread_is_resumed_and_an_external_turn_pauses_the_run(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    fake = offline_codex.fake
    cwd = workdir(tmp_path, "a")
    fake.push(Text("first answer, before the takeover"))

    async def seed_thread() -> str:
        async with offline_codex.started() as c:
            t = await c.thread_start(str(cwd), sandbox="read-only", approval_policy="never")
            tid = t["thread"]["id"]
            await c.turn_start(tid, "first question")
            await c.wait_for(lambda m: m.get("method") == "turn/completed", 30)
            return tid

    thread = asyncio.run(seed_thread())
    fake.push(Text("taken over"), Text("outside turn"))
    confirm = Confirm()
    body = plan(role("reader", cwd, existingThreadId=thread, sandbox="workspace-write"))

    async def go() -> tuple[dict[str, Any], str]:
        async with running(offline_codex, tmp_path / "s", confirmer=confirm) as sup:
            run_id = (await sup.start(body, owner=OWNER))["runId"]
            await until(lambda: bool(sup.pending_decisions(owner=OWNER)))
            # while the worker's app-server holds the thread, codex itself refuses a
            # second writer; once it is gone (here: ended while idle), another client
            # can write a turn the supervisor did not start
            await sup.runs[run_id].workers["reader"].close()
            async with offline_codex.started() as other:
                await other.thread_resume(thread)
                await other.turn_start(thread, "an outside instruction")
                await other.wait_for(lambda m: m.get("method") == "turn/completed", 30)
            (p,) = sup.pending_decisions(owner=OWNER)
            sup.dispatch(owner=OWNER, run_id=run_id, worker="reader", instruction="next", decision_id=p["decisionId"])
            await until(lambda: view_of(sup, run_id)["state"] == "paused")
            return view_of(sup, run_id), run_id

    view, _ = asyncio.run(go())
    # the confirmation showed the thread and its history head
    launch = confirm.asked[1]
    assert f"takes over thread {thread}" in launch.text and "first question" in launch.text
    assert launch.details["workers"][0]["historyHead"][0]["user"] == "first question"
    # resumed: the same thread id, the old history sent to the model, this plan's policy
    assert worker(view, "reader")["threadId"] == thread
    takeover_request = fake.responses_requests()[1].body
    assert "first question" in str(takeover_request["input"])
    assert last_user_text(takeover_request) == "reader: do your part"
    assert view["pauseReason"] == "external-turn"
    assert view["alerts"][-1]["message"].startswith(f"role reader: thread {thread} has a turn the supervisor did not start")
    assert len(fake.responses_requests()) == 3  # the next instruction was never sent


@pytest.mark.rule("DOT-6")
def test_turns_in_the_same_cwd_never_overlap_and_max_concurrent_holds(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    fake = offline_codex.fake
    fake.push(Hang(), Hang(), Hang())
    shared = workdir(tmp_path, "shared")
    body = plan(
        role("one", shared),
        role("two", shared),
        role("three", workdir(tmp_path, "c")),
        role("four", workdir(tmp_path, "d")),
    )
    peak: list[int] = []

    async def go() -> dict[str, Any]:
        settings = HostSettings(max_concurrent=2, poll_ms=60_000)
        async with running(offline_codex, tmp_path / "s", settings=settings) as sup:
            run_id = (await sup.start(body, owner=OWNER))["runId"]

            def two_live() -> bool:
                v = view_of(sup, run_id)
                live = [w["name"] for w in v["workers"] if w["state"] in ("starting", "running")]
                peak.append(len(live))
                assert not {"one", "two"} <= set(live)  # one turn per cwd
                return len(live) == 2

            await until(two_live)
            for _ in range(10):  # it stays at two
                two_live()
                await asyncio.sleep(0.05)
            view = view_of(sup, run_id)
            await sup.control(owner=OWNER, run_id=run_id, action="cancel")
            return view

    view = asyncio.run(go())
    assert max(peak) == 2
    states = {w["name"]: w["state"] for w in view["workers"]}
    assert sorted(states.values()).count("queued") == 2


@pytest.mark.rule("DOT-6", "DOT-15", "DOT-17")
def test_refusals_at_start_and_for_other_conversations(offline_codex: OfflineCodex, tmp_path: Path) -> None:
    cwd = workdir(tmp_path, "a")
    offline_codex.fake.push(Text("hi"))

    async def seed_thread() -> str:
        async with offline_codex.started() as c:
            t = await c.thread_start(str(cwd), sandbox="read-only")
            await c.turn_start(t["thread"]["id"], "q")
            await c.wait_for(lambda m: m.get("method") == "turn/completed", 30)
            return t["thread"]["id"]

    thread = asyncio.run(seed_thread())

    async def go() -> None:
        async with running(offline_codex, tmp_path / "s", confirmer=Confirm("accept", "accept", "decline")) as sup:
            first = await sup.start(plan(role("a", cwd, existingThreadId=thread)), owner=OWNER)
            with pytest.raises(DotsError) as taken:
                await sup.start(plan(role("b", cwd, existingThreadId=thread)), owner=OWNER)
            assert f"thread {thread} belongs to unfinished run {first['runId']}" in taken.value.message
            assert taken.value.field == "proposal.workers.existingThreadId"
            with pytest.raises(DotsError) as dsh:
                await sup.start(plan(role("v", cwd, backend="dsh")), owner=OWNER)
            assert "backend 'dsh' has no provider on this host" in dsh.value.message
            with pytest.raises(RunNotFound) as foreign:
                sup.status(owner="another-conversation", run_id=first["runId"])
            assert foreign.value.message == f"run not found: {first['runId']!r}"
            assert sup.status(owner="another-conversation") == []
            with pytest.raises(RunNotFound):
                await sup.control(owner="another-conversation", run_id=first["runId"], action="cancel")
            assert view_of(sup, first["runId"])["state"] != "cancelled"
            before = len(sup.runs)
            with pytest.raises(NotConfirmed) as declined:
                await sup.start(plan(role("c", workdir(tmp_path, "c"))), owner=OWNER)
            assert "did not confirm the plan" in declined.value.message or "did not confirm the launch" in declined.value.message
            assert len(sup.runs) == before  # a declined start creates nothing

    asyncio.run(go())


@pytest.mark.rule("DOT-16")
def test_pause_lets_the_live_turn_end_and_cancel_ends_the_processes(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    fake = offline_codex.fake
    fake.push(Hang())
    body = plan(role("reader", workdir(tmp_path, "a")))

    async def go() -> tuple[dict[str, Any], dict[str, Any], bool]:
        async with running(offline_codex, tmp_path / "s") as sup:
            run_id = (await sup.start(body, owner=OWNER))["runId"]
            await until(lambda: worker(view_of(sup, run_id), "reader")["state"] == "running")
            paused = await sup.control(owner=OWNER, run_id=run_id, action="pause")
            assert worker(paused, "reader")["state"] == "stopping"
            await asyncio.sleep(0.3)
            still = worker(view_of(sup, run_id), "reader")["state"]  # not interrupted
            proc = sup.runs[run_id].workers["reader"].client
            cancelled = await sup.control(owner=OWNER, run_id=run_id, action="cancel")
            return paused, cancelled | {"still": still}, proc is not None and not proc.running

    paused, cancelled, ended = asyncio.run(go())
    assert paused["state"] == "paused"
    assert cancelled["still"] == "stopping"
    assert cancelled["state"] == "cancelled" and ended
    assert worker(cancelled, "reader")["state"] == "paused"
