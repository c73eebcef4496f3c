"""Goal rounds on Claude Code (ENG-2's WRK-7 and WRK-1): a `/goal` follow-up makes the task
a goal task whose rounds are turns of the same session until the goal phrase; a host that
stops mid-round interrupts the turn and requeues the task at its checkpoint, and the next
host resumes that Claude Code session (`--resume`) with no preamble."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.claude import claude_settings_for, routed_claude
from support.worker import add_task, block, run_host, worker_store

from markertools_adapters.claude.fakemessages import Hang, Text
from markertools_adapters.claude.transcript import session_file
from markertools_adapters.worker import HostEvent, WorkerHost


def _goal(last: str, texts: list[str]) -> Text:
    if "[agent:goal]" in last:
        return Text(block("goal-convert", json.dumps({"goal": "make all tests pass"})))
    rounds = sum("Keep working toward the goal" in t for t in texts)
    if rounds >= 2:
        return Text("all tests pass\nGOAL REACHED")
    return Text(f"round {rounds}: still failing")


@pytest.mark.rule("ENG-2")
def test_goal_rounds_run_in_one_claude_session_until_the_phrase(
    offline_claude, tmp_path: Path
) -> None:
    router = routed_claude(offline_claude)
    router.on("goal", _goal)
    events: list[HostEvent] = []
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-goal", "[agent:goal] fix the suite")
        settings = claude_settings_for(offline_claude, tmp_path)
        run_host(WorkerHost(settings, store, sinks=[events.append]))
        task = store.get_task("t-goal")
        assert task.status == "completed", task
        assert task.goal_mode and task.goal == "make all tests pass"
        assert task.result_text == "all tests pass\nGOAL REACHED"
        inputs = [last for name, last in router.calls if name == "goal"]
        assert "/goal make all tests pass" in inputs[1]
        assert inputs[2].startswith("Keep working toward the goal.")
        assert len(inputs) == 4
        assert len({e.details["turn_id"] for e in events if e.kind == "turn_started"}) == 4
        assert [p.stem for p in offline_claude.transcripts()] == [task.thread_id]


@pytest.mark.rule("ENG-2")
def test_a_claude_goal_task_stopped_mid_round_resumes_its_session(
    offline_claude, tmp_path: Path
) -> None:
    router = routed_claude(offline_claude)
    router.on(
        "goal",
        lambda last, texts: (
            Text(block("goal-convert", json.dumps({"goal": "ship it"})))
            if "[agent:goal]" in last
            else Hang()
        ),
    )
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-goal", "[agent:goal] ship")
        holder: dict[str, WorkerHost] = {}

        def stop_on_second_turn(event: HostEvent) -> None:
            if event.kind == "turn_started" and event.details["turn"] == 2:
                assert offline_claude.fake.hanging.wait(20)
                holder["host"].stop()

        settings = claude_settings_for(offline_claude, tmp_path, grace_seconds=0.2)
        holder["host"] = host = WorkerHost(settings, store, sinks=[stop_on_second_turn])
        run_host(host)
        task = store.get_task("t-goal")
        assert task.status == "queued" and task.goal_mode
        (attempt,) = store.list_attempts("t-goal")
        assert attempt.kind == "goal_breakpoint"
        assert attempt.interrupted_reason == "host h1 shut down: the host stopped during the turn"
        session = task.thread_id
        # the next host resumes the same session: no prompt again, no preamble
        router.on("goal", lambda last, texts: Text("shipped\nGOAL REACHED"))
        run_host(WorkerHost(claude_settings_for(offline_claude, tmp_path), store))
        task = store.get_task("t-goal")
        assert task.status == "completed" and task.thread_id == session
        last = router.calls[-1][1]
        assert last.startswith("Keep working toward the goal.")
        assert "Resume notice" not in last
        transcript = session_file(offline_claude.config, session)
        assert transcript is not None and transcript.read_text().count('"promptSource"') == 3
