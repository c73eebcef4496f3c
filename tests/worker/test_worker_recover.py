"""A turn that completed on Codex but was not delivered when its host died is delivered
once, from the thread's stored history, with its own turn id (WRK-6, TRN-9)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from support.worker import add_task, block, routed, run_host, settings_for, worker_store

from markertools import TaskChange
from markertools_adapters.codex.fakemodel import Text
from markertools_adapters.worker import HostEvent, WorkerHost, prepare_task_dir


def _crashy(last: str, texts: list[str]) -> Text:
    if last.startswith("[agent:crashy]"):  # the turn the dead host never delivered
        return Text(block("task-create", json.dumps({"prompt": "[agent:kid] help"})))
    return Text("picked up where it stopped")


async def _one_turn(codex, cwd: Path, text: str) -> tuple[str, str]:
    async with codex.started() as client:
        started = await client.thread_start(str(cwd), sandbox="workspace-write")
        thread = started["thread"]["id"]
        turn = (await client.turn_start(thread, text))["turn"]["id"]
        await client.wait_for(lambda ev: ev.get("method") == "turn/completed", timeout=60)
        return thread, turn


@pytest.mark.rule("WRK-6")
def test_a_completed_undelivered_turn_is_delivered_once_after_a_restart(
    offline_codex, tmp_path: Path
) -> None:
    router = routed(offline_codex)
    router.on("crashy", _crashy)
    router.on("kid", lambda last, texts: Text("kid done"))
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-crash", "[agent:crashy] start")
        store.claim_task("p1", "h1")  # the host that died: it ran one turn, then crashed
        cwd = prepare_task_dir(tmp_path / "worktrees", "h1", "t-crash", None)
        thread, turn = asyncio.run(_one_turn(offline_codex, cwd, "[agent:crashy] start"))
        store.set_thread_id("t-crash", thread)
        assert store.requeue_platform("t-crash", "running", "platform_fresh", 0, time.time()).ok
        events: list[HostEvent] = []
        run_host(WorkerHost(settings_for(offline_codex, tmp_path), store, sinks=[events.append]))
        (recovered,) = [e for e in events if e.details.get("recovered")]
        assert recovered.details["turn_id"] == turn
        assert recovered.details["replayed"] is False and recovered.details["blocks"] == 1
        task = store.get_task("t-crash")
        assert task.status == "completed"
        kids = [
            t
            for t in store.list_tasks("p1", status=None, q=None, limit=9).rows
            if t.parent_task_id == "t-crash"
        ]
        assert len(kids) == 1 and kids[0].status == "completed"
        # the same thread recovered again (a second restart): nothing applies twice
        store.transition_task("t-crash", "completed", TaskChange(status="running"))
        store.set_thread_id("t-crash", thread)
        assert store.requeue_platform("t-crash", "running", "platform_fresh", 0, time.time()).ok
        events.clear()
        run_host(WorkerHost(settings_for(offline_codex, tmp_path), store, sinks=[events.append]))
        (again,) = [e for e in events if e.details.get("recovered")]
        assert again.details["turn_id"] == turn and again.details["replayed"] is True
        kids = [
            t
            for t in store.list_tasks("p1", status=None, q=None, limit=9).rows
            if t.parent_task_id == "t-crash"
        ]
        assert len(kids) == 1
