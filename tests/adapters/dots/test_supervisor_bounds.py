"""The supervisor's own footprint and its small leaks (issue 26 items 4, 5, 6, 9), on
the real pinned Codex binary offline under the fake model:

- DOT-6 compares real paths: a directory and a symlink to it never run two turns at once;
- idle roles keep no process (`idleMs`): the next turn starts a new app-server that
  resumes the thread by id, and the count of app-servers follows the live turns;
- `maxRuns` caps the unfinished runs of a host, refused before anyone is asked;
- another conversation's run id never shows in a refusal; a reply is kept bounded."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from support.codex import OfflineCodex
from support.dots import OWNER, Confirm, plan, role, running, until, workdir

from markertools.plans import HostSettings
from markertools_adapters.codex.fakemodel import Text, request_texts
from markertools_adapters.dots import DotsError


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.rule("DOT-6")
def test_a_directory_and_a_symlink_to_it_never_run_two_turns_at_once(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    real = workdir(tmp_path, "project")
    link = tmp_path / "link-to-project"
    link.symlink_to(real, target_is_directory=True)
    offline_codex.fake.push(Text("a: done", delay=1.5), Text("b: done", delay=1.5))
    body = plan(role("a", real), role("b", link))
    most = 0

    async def go() -> list[str]:
        nonlocal most
        async with running(offline_codex, tmp_path / "state") as sup:
            run_id = (await sup.start(body, owner=OWNER))["runId"]
            view: dict[str, Any] = {}
            for _ in range(400):  # until both turns ended, counting live roles
                view = sup.status(owner=OWNER, run_id=run_id)[0]
                live = [w for w in view["workers"] if w["state"] in ("starting", "running")]
                most = max(most, len(live))
                if all(w["state"] == "awaiting-decision" for w in view["workers"]):
                    break
                await asyncio.sleep(0.02)
            return [w["state"] for w in view["workers"]]

    states = asyncio.run(go())
    assert states == ["awaiting-decision", "awaiting-decision"]
    assert most == 1  # "max roles live at once = 2" before (issue 26, item 4)


@pytest.mark.rule("DOT-6")
def test_the_directory_key_is_the_directory_itself(tmp_path: Path) -> None:
    from markertools_adapters.dots import Supervisor

    real = workdir(tmp_path, "project")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    sup = Supervisor(tmp_path / "state")
    found = os.stat(real)
    assert sup.cwd_key(str(link)) == sup.cwd_key(str(real)) == f"dev {found.st_dev} inode {found.st_ino}"
    assert sup.cwd_key(str(workdir(tmp_path, "other"))) != sup.cwd_key(str(real))
    assert sup.cwd_key("/no/such/dir/..//x") == "/no/such/x"  # not made yet: its path


@pytest.mark.rule("DOT-3", "DOT-12")
def test_an_idle_role_keeps_no_process_and_its_next_turn_resumes_the_thread(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    offline_codex.fake.push(Text("first answer"), Text("second answer"))
    body = plan(role("reader", workdir(tmp_path, "a")))
    settings = HostSettings(max_concurrent=3, poll_ms=1000, idle_ms=0)

    async def go() -> dict[str, Any]:
        async with running(offline_codex, tmp_path / "state", settings=settings) as sup:
            run_id = (await sup.start(body, owner=OWNER))["runId"]
            await until(lambda: bool(sup.pending_decisions(owner=OWNER)), 30)
            worker = sup.runs[run_id].workers["reader"]
            await until(lambda: not worker.alive, 10)  # idle: its app-server ended
            first_pid = worker.client.pid if worker.client else None  # none: closed
            thread = sup.status(owner=OWNER, run_id=run_id)[0]["workers"][0]["threadId"]
            (pending,) = sup.pending_decisions(owner=OWNER)
            sup.dispatch(
                owner=OWNER, run_id=run_id, worker="reader", instruction="go on",
                decision_id=pending["decisionId"],
            )
            await until(
                lambda: any(p["decisionId"] != pending["decisionId"] for p in sup.pending_decisions(owner=OWNER)),
                30,
            )
            view = sup.status(owner=OWNER, run_id=run_id)[0]
            return {"view": view, "thread": thread, "first_pid": first_pid}

    out = asyncio.run(go())
    assert out["first_pid"] is None  # the idle worker had no process any more
    reader = out["view"]["workers"][0]
    assert out["view"]["state"] == "running"  # no external-turn pause: its own turns are known
    assert reader["threadId"] == out["thread"] and reader["turns"] == 2
    assert reader["lastReplyHead"] == "second answer"
    requests = offline_codex.fake.responses_requests()
    assert len(requests) == 2  # the second turn saw the first one: the thread was resumed
    assert "first answer" in "\n".join(request_texts(requests[1].body))


@pytest.mark.rule("DOT-3", "DOT-6")
def test_the_app_servers_of_many_runs_follow_the_live_turns(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    """8 runs x 2 roles (96 app-servers stayed alive before): with idleMs 0 every process
    ends once its turn ended; at most maxConcurrent run at any moment."""
    offline_codex.fake.push(*[Text(f"answer {i}") for i in range(16)])
    settings = HostSettings(max_concurrent=3, poll_ms=1000, idle_ms=0, max_runs=8)
    peak = 0

    async def go() -> tuple[int, int]:
        nonlocal peak
        async with running(offline_codex, tmp_path / "state", settings=settings) as sup:
            ids = []
            for i in range(8):
                body = plan(role("a", workdir(tmp_path, f"r{i}a")), role("b", workdir(tmp_path, f"r{i}b")))
                ids.append((await sup.start(body, owner=OWNER))["runId"])

            def alive() -> int:
                return sum(1 for r in sup.runs.values() for w in r.workers.values() if w.alive)

            def done() -> bool:
                nonlocal peak
                peak = max(peak, alive())
                pids.update(
                    w.client.pid for r in sup.runs.values() for w in r.workers.values()
                    if w.client is not None and w.client.pid is not None
                )
                return len(sup.pending_decisions(owner=OWNER)) == 16

            await until(done, 120)
            await until(lambda: alive() == 0, 20)
            return len(ids), alive()

    pids: set[int] = set()
    runs, left = asyncio.run(go())
    assert runs == 8 and left == 0
    assert len(pids) >= 8 and not any(_alive(p) for p in pids)  # every process really ended
    assert 1 <= peak <= 3  # never more app-servers than turns allowed at once


@pytest.mark.rule("DOT-14", "PLN-10")
def test_max_runs_refuses_a_start_before_anyone_is_asked(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    offline_codex.fake.push(Text("one"))
    confirm = Confirm()
    settings = HostSettings(max_concurrent=3, poll_ms=1000, max_runs=1)

    async def go() -> tuple[str, int]:
        async with running(offline_codex, tmp_path / "state", settings=settings, confirmer=confirm) as sup:
            await sup.start(plan(role("a", workdir(tmp_path, "a"))), owner=OWNER)
            asked = len(confirm.asked)
            with pytest.raises(DotsError) as refused:
                await sup.start(plan(role("b", workdir(tmp_path, "b"))), owner="someone-else")
            assert len(confirm.asked) == asked  # refused before any question
            return refused.value.message, len(sup.runs)

    message, runs = asyncio.run(go())
    assert message == (
        "this host already has 1 unfinished run(s) (maxRuns 1): finish or cancel one before "
        "starting another; nothing was asked or started"
    )
    assert runs == 1


@pytest.mark.rule("DOT-15", "DOT-12")
def test_a_thread_owned_by_another_conversations_run_does_not_reveal_that_run(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    cwd = workdir(tmp_path, "project")
    offline_codex.fake.push(Text("made the thread"), Text("first run's turn"))

    async def make_thread() -> str:
        async with offline_codex.started() as app:
            started = await app.thread_start(str(cwd), sandbox="read-only", approval_policy="never")
            tid = started["thread"]["id"]
            await app.turn_start(tid, "hello")
            await app.wait_for(lambda m: m.get("method") == "turn/completed", 30)
            return str(tid)

    thread = asyncio.run(make_thread())

    async def go() -> tuple[str, str, str]:
        async with running(offline_codex, tmp_path / "state") as sup:
            first = (await sup.start(plan(role("a", cwd, existingThreadId=thread)), owner="conversation-a"))["runId"]
            with pytest.raises(DotsError) as other:
                await sup.start(plan(role("b", cwd, existingThreadId=thread)), owner="conversation-b")
            with pytest.raises(DotsError) as same:
                await sup.start(plan(role("c", cwd, existingThreadId=thread)), owner="conversation-a")
            return first, other.value.message, same.value.message

    first, other, same = asyncio.run(go())
    assert other == (
        f"worker 'b': thread {thread} belongs to an unfinished run of another conversation"
    )
    assert first not in other
    assert same == f"worker 'c': thread {thread} belongs to unfinished run {first}"  # its own


@pytest.mark.rule("DOT-9")
def test_a_huge_reply_is_kept_as_a_bounded_head(offline_codex: OfflineCodex, tmp_path: Path) -> None:
    from markertools_adapters.dots._core import MAX_REPLY_CHARS

    reply = "x" * 200_000
    offline_codex.fake.push(Text(reply, chunk=20_000))

    async def go() -> tuple[int, str]:
        async with running(offline_codex, tmp_path / "state") as sup:
            run_id = (await sup.start(plan(role("a", workdir(tmp_path, "a"))), owner=OWNER))["runId"]
            await until(lambda: bool(sup.pending_decisions(owner=OWNER)), 30)
            kept = sup.runs[run_id].state.role("a").last_reply or ""
            return len(kept), kept[-60:]

    size, tail = asyncio.run(go())
    assert size < MAX_REPLY_CHARS + 100
    assert tail.endswith(f"[... {200_000 - MAX_REPLY_CHARS} characters not kept]")
