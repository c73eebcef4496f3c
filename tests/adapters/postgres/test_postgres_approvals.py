"""Approvals across processes on PostgreSQL: a request and its answer notify the task's
channel (step 10's trigger), so a waiting broker wakes on an answer another process
writes - `markertools approvals approve` run as a person runs it - instead of at its next
poll (APR-3, APR-4). No timing thresholds: the broker polls only every 60 s here, so an
answer that arrives at all arrived through NOTIFY; its wake-up count says so."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from support.cli import EXE
from support.postgres import SKIP_REASON, pg_dsn, require_dsn, throwaway_store

from markertools import ApprovalRequest, Task
from markertools.domain.model import Project
from markertools_adapters.approvals import ApprovalAsk, ApprovalEvent, Broker
from markertools_adapters.world import World

pytestmark = [pytest.mark.postgres, pytest.mark.skipif(pg_dsn() is None, reason=SKIP_REASON)]

NOW = 1_798_333_200.0


def _store() -> Any:
    return throwaway_store(
        World(
            now=NOW,
            projects=(Project("p1", "shop"),),
            tasks=(Task("t1", "p1", status="running", created_by="u1", worktree="/w/t1"),),
        )
    )


def _url(store: Any) -> str:
    dsn = require_dsn()
    sep = "&" if "?" in dsn else "?"
    return f"{dsn}{sep}options=-csearch_path%3D{store.schema}"


@pytest.mark.rule("APR-4")
def test_a_request_and_its_answer_notify_the_tasks_channel() -> None:
    store = _store()
    try:
        heard: list[str | None] = []
        arrived = threading.Event()

        def hear(task_id: str | None) -> None:
            heard.append(task_id)
            arrived.set()

        unsubscribe = store.change_waiter().subscribe(hear)
        store.insert_approval(
            ApprovalRequest(
                "apr-1", "t1", "?", "command", ("ls",), asked_at=NOW, expires_at=NOW + 900
            )
        )
        assert arrived.wait(30)
        arrived.clear()
        store.answer_approval("apr-1", "approved", answered_by="x", reason=None, now=NOW + 1)
        assert arrived.wait(30)
        unsubscribe()
        assert heard == ["t1", "t1"]
    finally:
        store.close()


@pytest.mark.rule("APR-3", "APR-1")
def test_an_answer_from_another_process_reaches_a_waiting_broker() -> None:
    store = _store()
    events: list[ApprovalEvent] = []
    broker = Broker(store, on_event=events.append, poll_interval=60.0)
    assert broker.listening

    async def scenario() -> Any:
        pending = asyncio.create_task(
            broker.decide(ApprovalAsk("t1", "command", ("uv", "run", "pytest")), timeout=120)
        )
        while not events:
            await asyncio.sleep(0.01)
        rid = events[0].request.id
        person = await asyncio.create_subprocess_exec(
            str(EXE), "approvals", "approve", rid, "--db", _url(store), "--by", "ana",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await person.communicate()
        assert person.returncode == 0, err.decode()
        assert out.decode().startswith(f"approved {rid} (task t1: uv run pytest")
        return await asyncio.wait_for(pending, 60)  # a bound against a hang, not a timing check

    try:
        decision = asyncio.run(scenario())
        assert (decision.approved, decision.how) == (True, "answer")
        assert decision.text() == "approved by person:ana"
        assert broker.notified_wakeups >= 1  # woken by NOTIFY: the next poll was 60 s away
        assert [e.name for e in events] == ["approval_requested", "approval_answered"]
    finally:
        broker.close()
        store.close()
