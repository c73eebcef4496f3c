"""task-files from a parent into a child's directory (WRK-2) and goal rounds in one
thread (WRK-7), on the real Codex CLI (offline, fake model)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.worker import (
    add_task,
    block,
    routed,
    run_host,
    settings_for,
    task_ids_in,
    worker_store,
)

from markertools_adapters.codex.fakemodel import Text
from markertools_adapters.worker import HostEvent, WorkerHost

CWD = re.compile(r"<cwd>([^<]+)</cwd>")


def _parent(last: str, texts: list[str]) -> Text:
    if "[agent:parent]" in last:
        return Text(block("task-create", json.dumps({"prompt": "[agent:writer] write notes"})))
    if "created task" in last:
        return Text(block("wait-threads", json.dumps({"task_ids": task_ids_in(last)})))
    if "notes written" in last and "task-files" not in "".join(texts[-3:-1]):
        child = next(t for t in task_ids_in("\n".join(texts)))
        return Text(block("task-files", json.dumps({"task_id": child, "path": "notes.txt"})))
    return Text("read: " + ("found" if "hello from the writer" in last else "missing"))


def _writer(last: str, texts: list[str]) -> Text:
    cwd = next(m.group(1) for t in texts for m in [CWD.search(t)] if m)
    (Path(cwd) / "notes.txt").write_text("hello from the writer\n")
    return Text("notes written")


@pytest.mark.rule("WRK-2")
def test_a_parent_reads_a_file_in_its_childs_directory(offline_codex, tmp_path: Path) -> None:
    router = routed(offline_codex)
    router.on("parent", _parent)
    router.on("writer", _writer)
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-parent", "[agent:parent] delegate")
        run_host(WorkerHost(settings_for(offline_codex, tmp_path), store))
        parent = store.get_task("t-parent")
        assert parent.status == "completed", parent
        assert parent.result_text == "read: found"
        child = next(
            t
            for t in store.list_tasks("p1", status=None, q=None, limit=5).rows
            if t.id != "t-parent"
        )
        assert child.worktree == str(tmp_path / "worktrees" / "h1" / child.id)
        assert child.host == "h1"


def _goal(last: str, texts: list[str]) -> Text:
    if "[agent:goal]" in last:
        return Text(block("goal-convert", json.dumps({"goal": "make all tests pass"})))
    rounds = sum("Keep working toward the goal" in t for t in texts)
    if rounds >= 2:
        return Text("all tests pass\nGOAL REACHED")
    return Text(f"round {rounds}: still failing")


@pytest.mark.rule("WRK-7")
def test_goal_rounds_run_in_one_thread_until_the_phrase(offline_codex, tmp_path: Path) -> None:
    router = routed(offline_codex)
    router.on("goal", _goal)
    events: list[HostEvent] = []
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-goal", "[agent:goal] fix the suite")
        run_host(WorkerHost(settings_for(offline_codex, tmp_path), store, sinks=[events.append]))
        task = store.get_task("t-goal")
        assert task.status == "completed", task
        assert task.goal_mode and task.goal == "make all tests pass"
        assert task.result_text == "all tests pass\nGOAL REACHED"
        inputs = [last for name, last in router.calls if name == "goal"]
        assert "/goal make all tests pass" in inputs[1]
        assert inputs[2].startswith("Keep working toward the goal.")
        assert len(inputs) == 4
        assert len({e.details["turn_id"] for e in events if e.kind == "turn_started"}) == 4
        assert [e.kind for e in events].count("claimed") == 1  # one thread, one claim


@pytest.mark.rule("WRK-7")
def test_goal_rounds_stop_at_the_limit(offline_codex, tmp_path: Path) -> None:
    router = routed(offline_codex)
    router.on(
        "goal",
        lambda last, texts: (
            Text(block("goal-convert", json.dumps({"goal": "never"})))
            if "[agent:goal]" in last
            else Text("not yet")
        ),
    )
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-goal", "[agent:goal] try forever")
        run_host(WorkerHost(settings_for(offline_codex, tmp_path, max_goal_rounds=2), store))
        task = store.get_task("t-goal")
        assert task.status == "interrupted"
        assert task.interrupted_reason == "the goal was not reached within 2 goal rounds"


@pytest.mark.rule("WRK-7", "WRK-3")
def test_a_goal_task_stopped_mid_round_resumes_its_thread(offline_codex, tmp_path: Path) -> None:
    from markertools_adapters.codex.fakemodel import Hang

    router = routed(offline_codex)
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
                assert offline_codex.fake.hanging.wait(20)
                holder["host"].stop()

        host = WorkerHost(
            settings_for(offline_codex, tmp_path, grace_seconds=0.2),
            store,
            sinks=[stop_on_second_turn],
        )
        holder["host"] = host
        run_host(host)
        task = store.get_task("t-goal")
        assert task.status == "queued" and task.goal_mode
        (attempt,) = store.list_attempts("t-goal")
        assert attempt.kind == "goal_breakpoint"
        thread = task.thread_id
        # the next host resumes the same thread: no prompt again, no preamble
        router.on("goal", lambda last, texts: Text("shipped\nGOAL REACHED"))
        run_host(WorkerHost(settings_for(offline_codex, tmp_path), store))
        task = store.get_task("t-goal")
        assert task.status == "completed" and task.thread_id == thread
        last = router.calls[-1][1]
        assert last.startswith("Keep working toward the goal.")
        assert "Resume notice" not in last
