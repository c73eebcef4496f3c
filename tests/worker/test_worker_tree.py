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
