"""The worker host on the real Claude Code CLI (offline, the fake Messages API): a root
task creates two children, waits for them and completes - each task in its own directory
and Claude Code session, every turn one user message ended by the result message, later
turns continuing the session, cost rows priced by Claude Code (ENG-2, ENG-3)."""

from __future__ import annotations

import json
import stat
from decimal import Decimal
from pathlib import Path

import pytest
from support.claude import claude_settings_for, routed_claude
from support.worker import add_task, block, run_host, task_ids_in, worker_store

from markertools_adapters.claude.fakemessages import Text
from markertools_adapters.claude.transcript import is_session_id, last_completed_turn, session_file
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


def _prompts(transcript: Path) -> list[str]:
    """The user messages the host sent in a session (its turns' inputs), in order."""
    found = []
    for line in transcript.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry.get("type") == "user" and entry.get("promptSource"):
            found.append(entry["message"]["content"])
    return found


@pytest.mark.rule("ENG-2", "ENG-3")
@pytest.mark.parametrize("kind", STORES)
def test_root_creates_two_children_that_run_and_report_on_claude_code(
    offline_claude, tmp_path: Path, kind: str
) -> None:
    router = routed_claude(offline_claude)
    router.on("root", _root)
    router.on("child", _child)
    with worker_store(kind, tmp_path) as store:
        add_task(store, "t-root", "[agent:root] build the thing")
        events: list[HostEvent] = []
        settings = claude_settings_for(offline_claude, tmp_path)
        assert run_host(WorkerHost(settings, store, sinks=[events.append])) == 0
        root = store.get_task("t-root")
        assert root.status == "completed", (root, events)
        assert root.result_text == "Both parts are done. Finished."
        children = [
            t
            for t in store.list_tasks("p1", status=None, q=None, limit=10).rows
            if t.id != "t-root"
        ]
        assert {c.result_text for c in children} == {"part A done", "part B done"}
        assert all(c.status == "completed" for c in children)
        # own directories (WRK-2) and own Claude Code sessions: the thread id is the
        # session id, its transcript in the Claude config of the host
        dirs = {c.worktree for c in children} | {root.worktree}
        assert len(dirs) == 3
        for d in dirs:
            assert Path(d).parent == tmp_path / "worktrees" / "h1"
            assert stat.S_IMODE(Path(d).stat().st_mode) == 0o700
        threads = {c.thread_id for c in children} | {root.thread_id}
        assert len(threads) == 3 and all(is_session_id(t) for t in threads)
        transcript = session_file(offline_claude.config, root.thread_id)
        assert transcript is not None
        # three turns of the root, three user messages in one session: the prompt, the
        # report of its blocks, the results of its wait
        prompts = _prompts(transcript)
        assert len(prompts) == 3
        assert prompts[0].endswith("[agent:root] build the thing")
        assert "created task" in prompts[1]
        assert "part A done" in prompts[2] and "part B done" in prompts[2]
        last = last_completed_turn(transcript)
        assert last is not None and last[1] == "Both parts are done. Finished."
        kinds = [e.kind for e in events if e.task_id == "t-root"]
        assert kinds[0] == "claimed" and kinds.count("delivered") == 3
        delivered = [e.details["turn_id"] for e in events if e.kind == "delivered"]
        assert last[0] in delivered  # the turn id is the id of the turn's user message
        # every turn a cost row from its result message: 100 input and 20 output tokens
        # per model call (the fake's usage), priced by Claude Code (2.1.332's list price
        # of its default model: $0.0008 a call)
        rows = store.task_costs("t-root")
        assert [(r.tokens, r.usd, r.priced, r.priced_by) for r in rows] == [
            (120, Decimal("0.0008"), True, "claude-code")
        ] * 3
        assert store.get_quota("alice").used_usd == sum(
            (r.usd for t in [root, *children] for r in store.task_costs(t.id)), Decimal(0)
        )


@pytest.mark.rule("ENG-2")
def test_a_parked_claude_task_resumes_its_session_after_the_wait(
    offline_claude, tmp_path: Path
) -> None:
    """FLT-5 on Claude Code: the waiting root's claude is stopped at once (park_seconds
    0), and a new claude resumes the same session (`--resume`) for its next turn."""
    router = routed_claude(offline_claude)
    router.on("root", _root)
    router.on("child", _child)
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-root", "[agent:root] build the thing")
        events: list[HostEvent] = []
        settings = claude_settings_for(offline_claude, tmp_path, park_seconds=0.0)
        assert run_host(WorkerHost(settings, store, sinks=[events.append])) == 0
        root = store.get_task("t-root")
        assert root.status == "completed"
        assert root.result_text == "Both parts are done. Finished."
        assert [e.kind for e in events if e.task_id == "t-root"].count("parked") == 1
        groups = {
            e.details["pgid"] for e in events if e.task_id == "t-root" and e.kind == "turn_started"
        }
        assert len(groups) == 2  # turn 3 ran on a new claude ...
        transcript = session_file(offline_claude.config, root.thread_id)
        assert transcript is not None and len(_prompts(transcript)) == 3  # ... in the session
        assert len([p for p in offline_claude.transcripts() if p.stem == root.thread_id]) == 1
