"""The task's markertools tools on the real Claude Code CLI (offline, the fake Messages
API): `task_create` then `task_poll` answered inside the turn by the host's in-process
MCP server with no permission prompt, while a command that asks to leave the sandbox is
a permission request the host declines (ENG-2: the task ends `interrupted` naming it);
and no task token or database URL is anywhere the agent can look (ENG-2's TOL-10 part):
its shell's environment, the environ and cmdline of the engine's process tree, the
Claude Code home, its own directory."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support.claude import claude_settings_for
from support.worker import add_task, run_host, worker_store

from markertools_adapters._procgroups import descendant_groups, live_group_members
from markertools_adapters.claude.fakemessages import (
    BashCall,
    McpToolUse,
    Text,
    request_texts,
    tool_results,
)
from markertools_adapters.worker import HostEvent, WorkerHost

TOKEN = re.compile(rb"mtt_[0-9a-f]{16,}")


def _results(body: Any) -> list[str]:
    """The texts of every tool result of the conversation so far, in order."""
    found: list[str] = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list):
            found.extend(
                "".join(c.get("text", "") for c in block.get("content") or [])
                if isinstance(block.get("content"), list)
                else str(block.get("content"))
                for block in content
                if isinstance(block, dict) and block.get("type") == "tool_result"
            )
    return found


@pytest.mark.rule("ENG-2")
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_tools_are_answered_in_turn_and_a_request_to_leave_the_sandbox_is_declined(
    offline_claude, tmp_path: Path, kind: str
) -> None:
    seen: dict[str, Any] = {}
    outside = tmp_path / "escaped"

    def reply_for(body: Any) -> Any:
        if not any("[agent:tooler]" in t for t in request_texts(body)):
            return Text("child done")  # the created child, run by the same host
        outs = _results(body)
        if not outs:
            return McpToolUse("markertools", "task_create", {"prompt": "child from a tool"})
        if len(outs) == 1:
            seen["create"] = json.loads(outs[0])
            return McpToolUse("markertools", "task_poll", {"task_id": seen["create"]["task_id"]})
        if len(outs) == 2:
            seen["poll"] = json.loads(outs[1])
            return BashCall(f"touch {outside}", unsandboxed=True)
        seen["declined"] = tool_results(body)
        return Text("could not")

    offline_claude.fake.default_reply = None
    offline_claude.fake.reply_for = reply_for
    with worker_store(kind, tmp_path) as store:
        add_task(store, "t-tool", "[agent:tooler] make a helper task and look at it")
        settings = claude_settings_for(offline_claude, tmp_path, tools=True, approvals="decline")
        run_host(WorkerHost(settings, store))

        # both calls were answered inside the first turn by the task's own tools, asking
        # nobody (a prompt for them would have ended the turn at task_create)
        assert seen["create"]["kind"] == "task-create" and seen["create"]["outcome"] == "done"
        child = seen["create"]["task_id"]
        assert seen["poll"]["kind"] == "task-poll" and seen["poll"]["target"] == child
        assert store.get_task(child).parent_task_id == "t-tool"
        assert store.get_task(child).status == "completed"
        tool_audit = [
            r for r in store.audit_records() if r.sender == "t-tool" and r.source == "tool"
        ]
        assert [r.kind for r in tool_audit] == ["task-create", "task-poll"]
        # the command that wanted out of the sandbox was a permission request: declined
        # (the agent was told), the turn interrupted, the task ended naming it
        task = store.get_task("t-tool")
        assert task.status == "interrupted"
        assert task.interrupted_reason == (
            f"the agent asked for command approval to run outside the sandbox (touch {outside});"
            " the worker host declines every approval and input request, so the turn was"
            " interrupted"
        )
        assert task.error_text == task.interrupted_reason
        assert not outside.exists()
        assert store.revoke_task_tokens("t-tool") == 0  # revoked when it left running


@pytest.mark.rule("APR-1", "ENG-2")
def test_a_claude_permission_prompt_goes_to_the_broker_and_a_decline_tells_the_agent_why(
    offline_claude, tmp_path: Path
) -> None:
    """With the broker (the default), Claude Code's permission prompt is a stored request;
    unanswered at `approval_timeout` it is declined and the agent reads why in the tool
    result, inside the same turn, which goes on; the task completes."""
    seen: dict[str, Any] = {}
    outside = tmp_path / "escaped"

    def reply_for(body: Any) -> Any:
        outs = tool_results(body)
        if not outs:
            return BashCall(f"touch {outside}", unsandboxed=True)
        seen["told"] = outs
        return Text("went on without it")

    offline_claude.fake.default_reply = None
    offline_claude.fake.reply_for = reply_for
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-ask", "[agent:asker] write outside")
        settings = claude_settings_for(offline_claude, tmp_path, approval_timeout=1.0)
        run_host(WorkerHost(settings, store))
        task = store.get_task("t-ask")
        (request,) = store.list_approvals("p1")
    assert request.kind == "command" and request.status == "expired"
    assert task.status == "completed" and task.result_text == "went on without it"
    told = json.dumps(seen["told"])
    assert f"declined: nobody answered approval request {request.id} within 1 s" in told
    assert not outside.exists()


_WAIT = (
    "import os, time\nwhile not os.path.exists('released'): time.sleep(0.05)  # markertools-tol10"
)


def _scan_tree(pgid: int) -> dict[int, bytes]:
    """environ + cmdline of every live process of the engine's group and of the groups
    its descendants made (the command sandbox's), read from outside."""
    found: dict[int, bytes] = {}
    for group in [pgid, *descendant_groups(pgid)]:
        for pid in live_group_members(group) or []:
            data = b""
            for name in ("environ", "cmdline"):
                try:
                    data += Path(f"/proc/{pid}/{name}").read_bytes() + b"\n"
                except OSError:
                    continue
            found[pid] = data
    return found


@pytest.mark.rule("ENG-2")
def test_no_token_or_database_url_where_the_claude_agent_can_look(
    offline_claude, tmp_path: Path
) -> None:
    seen: dict[str, Any] = {}
    released = threading.Event()

    def scan_while_the_command_runs() -> None:
        """While the agent's command waits inside the sandbox: read the whole process
        tree from outside, then let the command end."""
        directory = Path(seen["worktree"])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            tree = _scan_tree(seen["pgid"])
            if any(b"markertools-tol10" in data for data in tree.values()):
                seen["tree"] = tree
                break
            time.sleep(0.05)
        (directory / "released").write_text("go")
        released.set()

    def reply_for(body: Any) -> Any:
        outs = _results(body)
        if not outs:  # the tools are live in this session: the token exists
            return McpToolUse("markertools", "task_list", {})
        if len(outs) == 1:
            seen["list"] = json.loads(outs[0])
            return BashCall("env > agent-env.txt")
        if len(outs) == 2:
            threading.Thread(target=scan_while_the_command_runs, daemon=True).start()
            return BashCall(f"python3 -c {json.dumps(_WAIT)}")
        return Text("looked around")

    def sink(event: HostEvent) -> None:
        if event.kind == "turn_started":
            seen["pgid"] = event.details["pgid"]

    offline_claude.fake.default_reply = None
    offline_claude.fake.reply_for = reply_for
    with worker_store("sqlite", tmp_path) as store:
        db = str(tmp_path / "w.db")
        add_task(store, "t-look", "[agent:looker] look around")
        seen["worktree"] = str(tmp_path / "worktrees" / "h1" / "t-look")
        settings = claude_settings_for(offline_claude, tmp_path, tools=True)
        run_host(WorkerHost(settings, store, sinks=[sink]))
        task = store.get_task("t-look")
        assert task.status == "completed" and task.result_text == "looked around"
        assert seen["list"]["kind"] == "task-list" and seen["list"]["outcome"] == "done"
        assert released.is_set() and len(seen["tree"]) >= 2  # claude and the command at least
        secrets = (
            TOKEN,
            re.compile(re.escape(db.encode())),
            re.compile(rb"MARKERTOOLS_TASK_TOKEN"),
        )
        # the agent's shell environment
        env_dump = (Path(task.worktree) / "agent-env.txt").read_bytes()
        assert b"PATH=" in env_dump
        # ... the environ and cmdline of the engine's whole process tree, its Claude Code
        # home (settings, sessions, shell snapshots) and its own directory
        places: dict[str, bytes] = {"agent-env.txt": env_dump}
        places.update({f"/proc/{pid}": data for pid, data in seen["tree"].items()})
        for root in (offline_claude.home, Path(task.worktree)):
            for path in root.rglob("*"):
                if path.is_file() and not path.is_symlink():
                    places[str(path)] = path.read_bytes()
        leaks = [
            (where, p.pattern) for where, data in places.items() for p in secrets if p.search(data)
        ]
        assert leaks == []
        assert any(b"claude" in data for data in seen["tree"].values())
