"""Hosts of Claude Code tasks that die (ENG-2's WRK-6): a host killed with SIGKILL mid-turn
leaves its `claude` running; once the lease expires another host ends that process group,
requeues the task once and runs it again in a new session whose first message carries
the resume preamble - the killed turn never applies. A turn that completed but was not
delivered when its host died is delivered once, read from the session's transcript, with
its own turn id."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from support.claude import OfflineClaude, claude_settings_for, routed_claude
from support.worker import (
    add_task,
    block,
    read_events_until,
    run_host,
    worker_process,
    worker_store,
)

from markertools import TaskChange, TurnCost
from markertools_adapters._procgroups import group_alive
from markertools_adapters.claude.fakemessages import Text
from markertools_adapters.worker import HostEvent, WorkerHost, prepare_task_dir
from markertools_adapters.worker.claude_engine import ClaudeEngine
from markertools_adapters.worker.engine import EngineRequest, TurnEnd


def _host(claude: OfflineClaude, tmp_path: Path, db: str) -> subprocess.Popen[str]:
    engine = ("--engine", "claude-code", "--claude-bin", claude.binary)
    return worker_process(claude.env, tmp_path, db, "h1", *engine)


def _slow_plan(last: str, texts: list[str]) -> Text:
    """The Claude Code fake's own replies (its Text, not the Codex fake's)."""
    if "Resume notice" in last:
        return Text("finished on the second attempt")
    # the first attempt: blocks that must never apply, in a turn that never completes
    return Text(block("task-create", json.dumps({"prompt": "never"})), delay=60)


@pytest.mark.rule("ENG-2")
def test_kill_9_of_a_claude_host_mid_turn_requeues_once_ends_the_orphan_and_resumes(
    offline_claude, tmp_path: Path
) -> None:
    router = routed_claude(offline_claude)
    router.on("crash", _slow_plan)
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-crash", "[agent:crash] plan it")
        proc = _host(offline_claude, tmp_path, str(tmp_path / "w.db"))
        try:
            started = read_events_until(proc, "turn_started")[-1]
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        orphan = started["pgid"]
        assert group_alive(orphan)  # claude outlived its host
        killed_session = store.get_task("t-crash").thread_id
        events: list[HostEvent] = []
        settings = claude_settings_for(
            offline_claude, tmp_path, lease_seconds=1.0, affinity_seconds=60.0
        )
        run_host(WorkerHost(settings, store, sinks=[events.append]))
        assert not group_alive(orphan)
        kinds = [(e.kind, e.task_id) for e in events]
        assert ("lease_expired", "t-crash") in kinds and ("requeued", "t-crash") in kinds
        task = store.get_task("t-crash")
        assert task.status == "completed"
        assert task.result_text == "finished on the second attempt"
        (attempt,) = store.list_attempts("t-crash")
        assert attempt.kind == "platform_fresh" and task.auto_resume_count == 1
        # a platform restart starts a new session, its first message the preamble
        assert task.thread_id != killed_session
        first = [last for name, last in router.calls if name == "crash"][-1]
        assert "Resume notice" in first and "[agent:crash] plan it" in first
        # the killed turn's task-create never applied
        assert [t.id for t in store.list_tasks("p1", status=None, q=None, limit=9).rows] == [
            "t-crash"
        ]


class _OneTurn:
    """The engine port's other side for one turn run by hand (the host that died)."""

    def __init__(self) -> None:
        self.ended: asyncio.Queue[TurnEnd] = asyncio.Queue()

    def turn_ended(self, end: TurnEnd) -> None:
        self.ended.put_nowait(end)

    def exited(self, detail: str) -> None:
        raise AssertionError(f"claude exited: {detail}")

    def tools_ready(self, status: str) -> None:
        pass

    async def approve(self, request: EngineRequest) -> bool:
        return False


async def _one_turn(claude: OfflineClaude, settings: Any, cwd: Path, text: str) -> tuple[str, str]:
    events = _OneTurn()
    engine = ClaudeEngine(
        settings,
        directory=str(cwd),
        env={},
        task_model=None,
        effort=None,
        tools=None,
        events=events,
    )
    await engine.start()
    try:
        session = await engine.open(resume=None)
        assert session is not None
        turn = await engine.start_turn(text)
        end = await asyncio.wait_for(events.ended.get(), 60)
        assert (end.turn_id, end.status, end.cost.priced) == (turn, "completed", True)
        assert isinstance(end.cost, TurnCost)
        return session, turn
    finally:
        await engine.close(3.0)


def _crashy(last: str, texts: list[str]) -> Text:
    if last.startswith("[agent:crashy]"):  # the turn the dead host never delivered
        return Text(block("task-create", json.dumps({"prompt": "[agent:kid] help"})))
    return Text("picked up where it stopped")


@pytest.mark.rule("ENG-2")
def test_a_completed_undelivered_claude_turn_is_delivered_once_after_a_restart(
    offline_claude, tmp_path: Path
) -> None:
    router = routed_claude(offline_claude)
    router.on("crashy", _crashy)
    router.on("kid", lambda last, texts: Text("kid done"))
    settings = claude_settings_for(offline_claude, tmp_path)
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-crash", "[agent:crashy] start")
        store.claim_task("p1", "h1")  # the host that died: it ran one turn, then crashed
        cwd = prepare_task_dir(tmp_path / "worktrees", "h1", "t-crash", None)
        session, turn = asyncio.run(
            _one_turn(offline_claude, settings, cwd, "[agent:crashy] start")
        )
        store.set_thread_id("t-crash", session)
        assert store.requeue_platform("t-crash", "running", "platform_fresh", 0, time.time()).ok
        events: list[HostEvent] = []
        run_host(WorkerHost(settings, store, sinks=[events.append]))
        (recovered,) = [e for e in events if e.details.get("recovered")]
        assert recovered.details["turn_id"] == turn
        assert recovered.details["replayed"] is False and recovered.details["blocks"] == 1
        assert store.get_task("t-crash").status == "completed"
        kids = [
            t
            for t in store.list_tasks("p1", status=None, q=None, limit=9).rows
            if t.parent_task_id == "t-crash"
        ]
        assert len(kids) == 1 and kids[0].status == "completed"
        # the same session recovered again (a second restart): nothing applies twice
        store.transition_task("t-crash", "completed", TaskChange(status="running"))
        store.set_thread_id("t-crash", session)
        assert store.requeue_platform("t-crash", "running", "platform_fresh", 0, time.time()).ok
        events.clear()
        run_host(WorkerHost(settings, store, sinks=[events.append]))
        (again,) = [e for e in events if e.details.get("recovered")]
        assert again.details["turn_id"] == turn and again.details["replayed"] is True
        assert (
            len(
                [
                    t
                    for t in store.list_tasks("p1", status=None, q=None, limit=9).rows
                    if t.parent_task_id == "t-crash"
                ]
            )
            == 1
        )
