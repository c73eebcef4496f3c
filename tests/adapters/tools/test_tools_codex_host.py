"""A real MCP host: the pinned Codex binary (offline, the fake Responses model) with
`markertools tools serve` registered in its config.toml as docs/tools.md shows
(`[mcp_servers.markertools]`: the command, `env_vars = ["MARKERTOOLS_TASK_TOKEN"]`,
`default_tools_approval_mode = "approve"`), driven through Codex's own app-server. Codex
offers the fifteen tools to the model as the namespace `mcp__markertools`; in one turn
the model calls task_create and then task_poll on the task it created, and the model's
next request carries the new task's snapshot as the function_call_output - before the
turn ends, with no approval request reaching the client."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from support.codex import OfflineCodex
from tools_support import mint, sqlite_store

from markertools import TOOL_NAMES
from markertools_adapters.codex.client import AppServerClient
from markertools_adapters.codex.fakemodel import McpToolCall, Text
from markertools_adapters.codex.offline import make_codex_home, toml_str

MARKERTOOLS = str(Path(sys.executable).parent / "markertools")


def register(codex: OfflineCodex, db: Path) -> None:
    """The offline config with the tools server registered (as docs/tools.md)."""
    args = ["tools", "serve", "--db", str(db)]
    env = ", ".join(f"{k} = {toml_str(v)}" for k, v in sorted(codex.env.items()))
    make_codex_home(
        codex.home,
        codex.fake.base_url,
        models=list(codex.models),
        approval_policy="on-request",
        extra_toml=f"""
[mcp_servers.markertools]
command = {toml_str(MARKERTOOLS)}
args = [{", ".join(toml_str(a) for a in args)}]
env = {{ {env} }}
env_vars = ["MARKERTOOLS_TASK_TOKEN"]
default_tools_approval_mode = "approve"
startup_timeout_sec = 30
tool_timeout_sec = 300
""",
    )


def outputs(body: Any) -> dict[str, str]:
    """call_id -> output of the function_call_output items of a request."""
    found: dict[str, str] = {}
    for item in body.get("input") or [] if isinstance(body, dict) else []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            output = item.get("output")
            found[str(item.get("call_id"))] = (
                output if isinstance(output, str) else json.dumps(output)
            )
    return found


def structured(output: str) -> dict[str, Any]:
    """The structured content in a Codex function_call_output ("Wall time: ...\\nOutput:\\n{...}")."""
    start = output.index("{")
    parsed: dict[str, Any] = json.loads(output[start:])
    return parsed


def script_turn(codex: OfflineCodex) -> None:
    """task_create, then (from the created id in the next request) task_poll, then text."""
    codex.fake.push(McpToolCall("markertools", "task_create", {"prompt": "child from codex"}))

    def reply_for(body: Any) -> Any:
        seen = list(outputs(body).values())
        if len(seen) == 1:
            created = structured(seen[0])["task_id"]
            return McpToolCall("markertools", "task_poll", {"task_id": created})
        return Text("both calls answered")

    codex.fake.default_reply = None
    codex.fake.reply_for = reply_for


async def run_turn(codex: OfflineCodex, cwd: Path, token: str) -> dict[str, Any]:
    server_requests: list[str] = []

    async def on_request(method: str, params: Any, rid: int | str) -> dict[str, Any]:
        server_requests.append(method)
        return {"decision": "decline"}

    app = AppServerClient(
        codex.binary,
        env={**codex.env, "MARKERTOOLS_TASK_TOKEN": token},
        cwd=str(codex.home),
        default_timeout=60.0,
        on_server_request=on_request,
    )
    await app.start()
    events: list[Any] = []
    try:
        await app.initialize({"name": "markertools-tests", "version": "0"})
        started = await app.thread_start(
            cwd=str(cwd), sandbox="read-only", approval_policy="on-request"
        )
        thread = started["thread"]["id"]
        ready = await app.wait_for(
            lambda e: (
                isinstance(e, dict)
                and e.get("method") == "mcpServer/startupStatus/updated"
                and (e.get("params") or {}).get("name") == "markertools"
                and (e.get("params") or {}).get("status") in ("ready", "failed")
            ),
            timeout=60,
        )
        listing = await app.request(
            "mcpServerStatus/list", {"threadId": thread, "serverName": "markertools"}, timeout=60
        )
        await app.turn_start(thread, "create a child task and poll it")
        done = await app.wait_for(
            lambda e: isinstance(e, dict) and e.get("method") == "turn/completed",
            timeout=120,
            seen=events,
        )
    finally:
        await app.close(grace=5.0)
    return {
        "ready": ready,
        "listing": listing,
        "done": done,
        "server_requests": server_requests,
        "events": events,
    }


@pytest.mark.rule("TOL-1", "TOL-2", "TOL-8")
def test_codex_calls_task_create_then_task_poll_in_one_turn(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    db = tmp_path / "w.db"
    store = sqlite_store(db)
    token = mint(store, "t1")
    register(offline_codex, db)
    script_turn(offline_codex)

    out = asyncio.run(run_turn(offline_codex, tmp_path, token))

    assert out["ready"]["params"]["status"] == "ready", out["ready"]
    (server,) = [s for s in out["listing"]["data"] if s["name"] == "markertools"]
    assert sorted(server["tools"]) == sorted(TOOL_NAMES)
    requests = [r.body for r in offline_codex.fake.responses_requests()]
    offered = [t for t in requests[0].get("tools", []) if t.get("name") == "mcp__markertools"]
    assert offered and offered[0]["type"] == "namespace"
    assert sorted(t["name"] for t in offered[0]["tools"]) == sorted(TOOL_NAMES)
    # the model's second request: task_create's answer; its third: the poll of that task
    assert len(requests) == 3
    (created_out,) = outputs(requests[1]).values()
    created = structured(created_out)
    assert created["kind"] == "task-create" and created["outcome"] == "done"
    polled = structured(outputs(requests[2])["call_fake_2"])
    assert polled["kind"] == "task-poll" and polled["target"] == created["task_id"]
    assert polled["task"]["id"] == created["task_id"]
    assert polled["task"]["status"] == "queued" and polled["task"]["parent_task_id"] == "t1"
    assert polled["text"].startswith(f"task-poll → {created['task_id']}: done")
    # all of it inside the one turn, and no approval request reached the client
    assert out["done"]["params"]["turn"]["status"] == "completed"
    assert out["server_requests"] == []
    child = store.get_task(created["task_id"])
    store.close()
    assert child is not None and child.prompt == "child from codex"
    every = json.dumps(requests) + json.dumps(out["events"], default=str)
    assert token not in every and token[4:24] not in every
