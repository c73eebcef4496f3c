"""The parts of the Claude Code engine (ENG-2) on their own: a session's last turn read from
the real CLI's transcript (a completed turn, an interrupted one, the one after), Claude
Code's permission prompts - in the shapes the pinned CLI sends them - as engine-neutral
requests, the in-process MCP server's answers to what the CLI may send, and the cost of
a turn that pays for one the CLI began itself."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from support.claude import OfflineClaude, claude_settings_for

from markertools import TurnCost
from markertools_adapters.claude._mcp import SdkMcpServer
from markertools_adapters.claude.fakemessages import Hang, Text
from markertools_adapters.worker._claude_requests import engine_request
from markertools_adapters.worker.claude_engine import ClaudeEngine, _add
from markertools_adapters.worker.engine import EngineRequest, TurnEnd


class _Events:
    def __init__(self) -> None:
        self.ended: asyncio.Queue[TurnEnd] = asyncio.Queue()

    def turn_ended(self, end: TurnEnd) -> None:
        self.ended.put_nowait(end)

    def exited(self, detail: str) -> None:
        raise AssertionError(detail)

    def tools_ready(self, status: str) -> None:
        pass

    async def approve(self, request: EngineRequest) -> bool:
        return False


async def _three_turns(claude: OfflineClaude, tmp_path: Path) -> list[Any]:
    events = _Events()
    cwd = tmp_path / "task"
    cwd.mkdir()
    settings = claude_settings_for(claude, tmp_path)
    engine = ClaudeEngine(
        settings,
        directory=str(cwd),
        env={},
        task_model=None,
        effort=None,
        tools=None,
        events=events,
    )
    seen: list[Any] = []
    await engine.start()
    try:
        session = await engine.open(resume=None)
        assert session is not None
        first = await engine.start_turn("one")
        seen.append(((await events.ended.get()).status, await engine.last_turn(session), first))
        await engine.start_turn("two")  # the fake hangs: the turn is interrupted
        assert await asyncio.to_thread(claude.fake.hanging.wait, 20)
        await engine.interrupt()
        end = await asyncio.wait_for(events.ended.get(), 30)
        seen.append((end.status, await engine.last_turn(session), end.turn_id))
        claude.fake.release_hangs()
        third = await engine.start_turn("three")
        seen.append(((await events.ended.get()).status, await engine.last_turn(session), third))
    finally:
        await engine.close(3.0)
    return seen


@pytest.mark.rule("ENG-2")
def test_the_last_turn_of_a_session_is_read_from_the_real_transcript(
    offline_claude, tmp_path: Path
) -> None:
    offline_claude.fake.push(Text("first answer"), Hang(), Text("third answer"))
    (one, one_last, one_id), (two, two_last, _), (three, three_last, three_id) = asyncio.run(
        _three_turns(offline_claude, tmp_path)
    )
    assert (one, one_last) == ("completed", (one_id, "first answer"))
    assert (two, two_last) == ("interrupted", None)  # cut: never delivered after a crash
    assert (three, three_last) == ("completed", (three_id, "third answer"))


# the can_use_tool requests of Claude Code 2.1.332, as it sent them (ids shortened)
BASH_OUTSIDE = {
    "subtype": "can_use_tool",
    "tool_name": "Bash",
    "display_name": "Bash",
    "input": {
        "command": "echo hi > /tmp/o.txt",
        "description": "x",
        "dangerouslyDisableSandbox": True,
    },
    "description": "x",
    "decision_reason_type": "sandboxOverride",
    "tool_use_id": "toolu_4",
}
BASH_ENVIRON = {
    "subtype": "can_use_tool",
    "tool_name": "Bash",
    "display_name": "Bash",
    "input": {"command": "cat /proc/self/environ | head -c 100", "description": "x"},
    "description": "x",
    "permission_suggestions": [],
    "decision_reason": "Accesses /proc/*/environ which may expose secrets",
    "decision_reason_type": "other",
    "tool_use_id": "toolu_1",
}
WRITE = {
    "subtype": "can_use_tool",
    "tool_name": "Write",
    "display_name": "Write",
    "input": {"file_path": "/w/new.txt", "content": "new"},
    "description": "new.txt",
    "permission_suggestions": [
        {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
    ],
    "tool_use_id": "toolu_5",
}


@pytest.mark.rule("ENG-2")
def test_claude_codes_permission_prompts_become_engine_requests() -> None:
    assert engine_request(BASH_OUTSIDE, "/w") == EngineRequest(
        kind="command",
        name="command approval to run outside the sandbox",
        summary="echo hi > /tmp/o.txt",
        command="echo hi > /tmp/o.txt",
        argv=None,  # a redirection: never an allow prefix (APR-2)
        cwd="/w",
        reason="x",
    )
    environ = engine_request(BASH_ENVIRON, "/w")
    assert (environ.name, environ.reason) == (
        "command approval",
        "Accesses /proc/*/environ which may expose secrets",
    )
    assert engine_request(WRITE, "/w") == EngineRequest(
        kind="file_change",
        name="file-change approval",
        summary="/w/new.txt",
        cwd="/w",
        paths=("/w/new.txt",),
        diff="+new",
        reason="new.txt",
    )
    edit = {
        "tool_name": "Edit",
        "input": {"file_path": "/w/a.py", "old_string": "a", "new_string": "b"},
    }
    assert engine_request(edit, "/w").diff == "-a\n+b"
    ask = {"tool_name": "AskUserQuestion", "input": {"questions": [{"question": "Which  one?"}]}}
    assert (engine_request(ask, "/w").kind, engine_request(ask, "/w").summary) == (
        "input",
        "Which one?",
    )
    web = {"tool_name": "WebFetch", "display_name": "Fetch", "input": {"url": "https://x"}}
    assert engine_request(web, "/w").name == "permission to use Fetch"
    assert engine_request({"tool_name": "Bash", "input": "nonsense"}, "/w").command is None


@pytest.mark.rule("ENG-2")
def test_the_in_process_mcp_server_answers_what_the_cli_may_send() -> None:
    calls: list[tuple[str, Any, str | None]] = []
    ready: list[bool] = []

    async def call(name: str, arguments: Any, call_id: str | None) -> dict[str, Any]:
        calls.append((name, arguments, call_id))
        return {"content": [{"type": "text", "text": "ok"}], "isError": False}

    server = SdkMcpServer(
        "markertools",
        names=("task_list",),
        call=call,
        schema=lambda name: {"type": "object", "properties": {}},
        description=lambda name: "List the project's tasks.",
        on_ready=lambda: ready.append(True),
    )

    def ask(message: Any) -> Any:
        return asyncio.run(server.handle(message))

    init = ask(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25"},
        }
    )
    assert init["result"]["protocolVersion"] == "2025-11-25"
    assert init["result"]["serverInfo"] == {"name": "markertools", "version": "0"}
    assert ask({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None and ready == [
        True
    ]
    assert ask({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})["result"]["tools"] == [
        {
            "name": "task_list",
            "description": "List the project's tasks.",
            "inputSchema": {"type": "object", "properties": {}},
        }
    ]
    meta = {"claudecode/toolUseId": "toolu_9", "progressToken": 2}
    called = ask(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "task_list", "arguments": {}, "_meta": meta},
        }
    )
    assert called["result"]["isError"] is False and calls == [("task_list", {}, "toolu_9")]
    unknown = ask({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "rm_rf"}})
    assert unknown["result"] == {
        "content": [{"type": "text", "text": "unknown tool 'rm_rf': markertools serves task_list"}],
        "isError": True,
    }
    assert ask({"jsonrpc": "2.0", "id": 4, "method": "resources/list"})["error"] == {
        "code": -32601,
        "message": "markertools does not answer resources/list",
    }
    assert ask({"jsonrpc": "2.0", "id": 5, "method": "ping"})["result"] == {}
    assert ask("garbage")["error"]["code"] == -32600
    assert server.declaration() == {"type": "sdk", "name": "markertools"}


@pytest.mark.rule("ENG-2", "WRK-8")
def test_a_turn_that_pays_for_an_earlier_one_says_who_priced_the_sum() -> None:
    by_claude = TurnCost("0.5", 10, priced_by="claude-code")
    by_table = TurnCost("0.25", 5, priced_by="table")
    unpriced = TurnCost(None, 7, priced=False)
    assert _add(by_claude, by_claude) == TurnCost("1", 20, priced_by="claude-code")
    assert _add(by_claude, by_table) == TurnCost("0.75", 15, priced_by="claude-code+table")
    assert _add(by_claude, unpriced) == TurnCost(None, 17, priced=False)


@pytest.mark.rule("ENG-2", "TOL-10")
def test_the_cli_gets_the_hosts_environment_with_proxies_but_no_store_secret() -> None:
    """What a user sets for Claude Code (its API URL, a proxy, a login) passes through;
    what opens the store or acts as a task never reaches the CLI or its commands."""
    from markertools_adapters.worker import WorkerSettings
    from markertools_adapters.worker.claude_engine import agent_env

    url = "postgresql://u:pw@db:5432/mt"
    host_env = {
        "PATH": "/usr/bin",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9999",
        "HTTPS_PROXY": "http://proxy:3128",
        "NO_PROXY": "localhost",
        "ANTHROPIC_API_KEY": "sk-user",
        "PGPASSWORD": "pw",
        "DATABASE_URL": url,
        "MY_DB": f"dsn={url}",
        "MARKERTOOLS_TASK_TOKEN": "mtt_x",
        "MARKERTOOLS_ANYTHING": "x",
        "CLAUDECODE": "1",
    }
    settings = WorkerSettings(project="p1", codex_env=host_env, store_url=url, worktrees=Path("/w"))
    env = agent_env(settings.child_env(), tools=True)
    assert env == {
        "PATH": "/usr/bin",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9999",
        "HTTPS_PROXY": "http://proxy:3128",
        "NO_PROXY": "localhost",
        "ANTHROPIC_API_KEY": "sk-user",
        "ENABLE_TOOL_SEARCH": "false",  # the task's tools listed in every request
    }
    assert "ENABLE_TOOL_SEARCH" not in agent_env(settings.child_env(), tools=False)
