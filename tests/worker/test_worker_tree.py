"""The worker host on the real Codex CLI (offline, fake model): a root task that
creates two children, waits for them and completes (WRK-1, WRK-2, WRK-4)."""

from __future__ import annotations

import json
import stat
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

STORES = ["sqlite", "postgres"]


def _root(last: str, texts: list[str]) -> Text:
    if "[agent:root]" in last:  # the first turn: split the work
        return Text(
            "Two parts.\n\n"
            + block("task-create", json.dumps({"name": "a", "prompt": "[agent:child] part A"}))
            + block("task-create", json.dumps({"name": "b", "prompt": "[agent:child] part B"}))
        )
    ids = task_ids_in(last)
    if "created task" in last:  # the report of the first turn: wait for both
        return Text(block("wait-threads", json.dumps({"task_ids": ids, "timeout_seconds": 90})))
    return Text("Both parts are done. Finished.")


def _child(last: str, texts: list[str]) -> Text:
    part = "A" if "part A" in "\n".join(texts) else "B"
    return Text(f"part {part} done")


@pytest.mark.rule("WRK-1", "WRK-2", "WRK-4")
@pytest.mark.parametrize("kind", STORES)
def test_root_creates_two_children_that_run_and_report(
    offline_codex, tmp_path: Path, kind: str
) -> None:
    router = routed(offline_codex)
    router.on("root", _root)
    router.on("child", _child)
    with worker_store(kind, tmp_path) as store:
        add_task(store, "t-root", "[agent:root] build the thing")
        events: list[HostEvent] = []
        host = WorkerHost(settings_for(offline_codex, tmp_path), store, sinks=[events.append])
        assert run_host(host) == 0
        root = store.get_task("t-root")
        assert root.status == "completed", (root, events)
        assert root.result_text == "Both parts are done. Finished."
        children = [
            t
            for t in store.list_tasks("p1", status=None, q=None, limit=10).rows
            if t.id != "t-root"
        ]
        assert len(children) == 2
        assert {c.result_text for c in children} == {"part A done", "part B done"}
        assert all(c.status == "completed" for c in children)
        # own directories (WRK-2) and own threads (WRK-3)
        dirs = {c.worktree for c in children} | {root.worktree}
        assert len(dirs) == 3
        for d in dirs:
            assert Path(d).parent == tmp_path / "worktrees" / "h1"
            assert stat.S_IMODE(Path(d).stat().st_mode) == 0o700
        threads = {c.thread_id for c in children} | {root.thread_id}
        assert len(threads) == 3 and None not in threads
        # the root's second turn was the report; its third the wait's results
        root_inputs = [last for name, last in router.calls if name == "root"]
        assert "created task" in root_inputs[1]
        assert "part A done" in root_inputs[-1] and "part B done" in root_inputs[-1]
        kinds = [e.kind for e in events if e.task_id == "t-root"]
        assert kinds[0] == "claimed" and kinds.count("delivered") == 3


@pytest.mark.rule("WRK-1")
def test_at_most_max_concurrent_tasks_run_at_once(offline_codex, tmp_path: Path) -> None:
    router = routed(offline_codex)
    router.on("slowish", lambda last, texts: Text("done", delay=0.3))
    running: set[str] = set()
    most = [0]

    def count(event: HostEvent) -> None:
        if event.kind == "claimed":
            running.add(event.task_id)
            most[0] = max(most[0], len(running))
        elif event.kind == "finished":
            running.discard(event.task_id)

    with worker_store("sqlite", tmp_path) as store:
        for n in range(5):
            add_task(store, f"t-{n}", "[agent:slowish] work", created_at=float(n))
        host = WorkerHost(
            settings_for(offline_codex, tmp_path, max_concurrent=2), store, sinks=[count]
        )
        run_host(host)
        assert most[0] == 2
        assert host.claimed == 5
        rows = store.list_tasks("p1", status=None, q=None, limit=9).rows
        assert {t.status for t in rows} == {"completed"}


@pytest.mark.rule("WRK-1")
def test_due_automations_are_fired_and_their_tasks_run(offline_codex, tmp_path: Path) -> None:
    from markertools import Automation

    router = routed(offline_codex)
    router.on("nightly", lambda last, texts: Text("nightly report written"))
    with worker_store("sqlite", tmp_path) as store:
        store.insert_automation(
            Automation(
                "a-1",
                "p1",
                "nightly",
                "[agent:nightly] write the report",
                first_run_at=1.0,
                run_once=True,
                created_by="alice",
            )
        )
        host = WorkerHost(settings_for(offline_codex, tmp_path, until_idle=False), store)

        def stop_when_done(event: HostEvent) -> None:
            if event.kind == "finished":
                host.stop()

        host.sinks.append(stop_when_done)
        run_host(host)
        (task,) = store.list_tasks("p1", status=None, q=None, limit=9).rows
        assert task.status == "completed" and task.result_text == "nightly report written"
