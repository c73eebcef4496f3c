"""A real MCP host: the pinned Codex binary with `markertools dots serve` registered in
its CODEX_HOME/config.toml (`[mcp_servers.dots]`: command, args, env, env_vars,
startup_timeout_sec, tool_timeout_sec), driven through Codex's own app-server:
`mcpServerStatus/list` shows the nine tools with their schemas, `mcpServer/tool/call`
runs dots_probe and dots_start, and dots_start's two confirmations arrive as
`mcpServer/elicitation/request` server requests (a thread with approval policy
on-request). Declined, nothing is created; accepted, the run starts and its worker
(itself a Codex with the same config, whose dots server then runs in worker mode)
takes its turn. A host started with MARKERTOOLS_DOTS_WORKER forwards it (env_vars)
and the server refuses changes."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from support.codex import OfflineCodex
from support.dots import plan, role, workdir

from markertools_adapters.codex.client import AppServerClient
from markertools_adapters.codex.fakemodel import Text
from markertools_adapters.codex.offline import make_codex_home, toml_str

MARKERTOOLS = str(Path(sys.executable).parent / "markertools")


def register(codex: OfflineCodex, state: Path) -> None:
    """Rewrite the offline config with the dots server registered (as docs/orchestration.md)."""
    args = ["dots", "serve", "--state-dir", str(state), "--codex-bin", codex.binary]
    args += ["--poll-ms", "1000"]
    env = ", ".join(f"{k} = {toml_str(v)}" for k, v in sorted(codex.env.items()))
    make_codex_home(
        codex.home,
        codex.fake.base_url,
        models=list(codex.models),
        approval_policy="on-request",
        extra_toml=f"""
[mcp_servers.dots]
command = {toml_str(MARKERTOOLS)}
args = [{", ".join(toml_str(a) for a in args)}]
env = {{ {env} }}
env_vars = ["MARKERTOOLS_DOTS_WORKER"]
startup_timeout_sec = 30
tool_timeout_sec = 300
""",
    )


class Host:
    """Codex's app-server as the MCP host; answers elicitations from a script."""

    def __init__(self, codex: OfflineCodex, actions: list[str], env: dict[str, str]) -> None:
        self.actions = actions
        self.elicitations: list[dict[str, Any]] = []
        self.app = AppServerClient(
            codex.binary,
            env={**codex.env, **env},
            cwd=str(codex.home),
            default_timeout=60.0,
            on_server_request=self.on_request,
        )

    async def on_request(self, method: str, params: Any, rid: int | str) -> dict[str, Any]:
        assert method == "mcpServer/elicitation/request", method
        self.elicitations.append(params)
        action = self.actions.pop(0) if self.actions else "decline"
        if action == "accept":
            return {"action": "accept", "content": {"confirm": True}}
        return {"action": action}

    async def call(self, thread: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.app.request(
            "mcpServer/tool/call",
            {"server": "dots", "threadId": thread, "tool": tool, "arguments": arguments},
            timeout=120,
        )


async def _with_host(
    codex: OfflineCodex, cwd: Path, actions: list[str], env: dict[str, str], body: Any
) -> Any:
    host = Host(codex, actions, env)
    await host.app.start()
    try:
        await host.app.initialize({"name": "markertools-tests", "version": "0"})
        started = await host.app.thread_start(
            cwd=str(cwd), sandbox="read-only", approval_policy="on-request"
        )
        return await body(host, started["thread"]["id"])
    finally:
        await host.app.close(grace=5.0)


def _structured(result: dict[str, Any]) -> dict[str, Any]:
    if isinstance(result.get("structuredContent"), dict):
        return result["structuredContent"]
    return json.loads(result["content"][1]["text"])


@pytest.mark.rule("DOT-13", "DOT-14")
def test_codex_hosts_dots_serve_with_elicited_confirmations(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    register(offline_codex, state)
    offline_codex.fake.push(Text("reader: looked at it"))
    proposal = plan(role("reader", workdir(tmp_path, "a")))

    async def body(host: Host, thread: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        listing = await host.app.request(
            "mcpServerStatus/list", {"threadId": thread, "serverName": "dots"}, timeout=120
        )
        (server,) = [s for s in listing["data"] if s["name"] == "dots"]
        out["tools"] = server["tools"]
        out["probe"] = await host.call(thread, "dots_probe", {})
        out["declined"] = await host.call(thread, "dots_start", {"proposal": proposal})
        out["declined_asked"] = len(host.elicitations)
        out["runs_after_decline"] = sorted(p.name for p in state.glob("run-*"))
        host.actions[:] = ["accept", "accept"]
        out["started"] = await host.call(thread, "dots_start", {"proposal": proposal})
        out["elicited"] = host.elicitations[1:]
        run_id = _structured(out["started"])["runId"]
        out["status"] = await host.call(thread, "dots_status", {"runId": run_id, "waitMs": 60_000})
        out["cancel"] = await host.call(
            thread, "dots_control", {"runId": run_id, "action": "cancel"}
        )
        return out

    out = asyncio.run(_with_host(offline_codex, tmp_path, ["decline"], {}, body))
    tools = out["tools"]
    assert len(tools) == 9 and "dots_start" in tools
    dispatch_schema = tools["dots_dispatch"]["inputSchema"]
    assert dispatch_schema["required"] == ["runId", "worker", "instruction", "decisionId"]
    assert _structured(out["probe"])["model"] == "fake-model"
    assert out["declined"]["isError"] is True
    assert out["declined"]["content"][0]["text"] == (
        "dots_start: the user did not confirm the plan (decline); nothing was started"
    )
    assert out["declined_asked"] == 1 and out["runs_after_decline"] == []
    # accepted: two elicitations, plan then launch, each as an MCP form with one checkbox
    plan_q, launch_q = out["elicited"]
    assert plan_q["serverName"] == "dots" and plan_q["mode"] == "form"
    assert plan_q["message"].startswith("Start this plan?")
    assert launch_q["message"].startswith("Launch these workers?")
    assert plan_q["requestedSchema"]["properties"]["confirm"]["type"] == "boolean"
    assert out["started"].get("isError") in (None, False)
    status = _structured(out["status"])
    (run,) = status["runs"]
    assert run["state"] == "running"
    assert [p["worker"] for p in status["pendingDecisions"]] == ["reader"]
    assert _structured(out["cancel"])["state"] == "cancelled"


@pytest.mark.rule("DOT-15")
def test_codex_forwards_the_worker_marker_and_the_server_refuses_changes(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    register(offline_codex, tmp_path / "state")
    proposal = plan(role("reader", workdir(tmp_path, "a")))

    async def body(host: Host, thread: str) -> dict[str, Any]:
        return await host.call(thread, "dots_start", {"proposal": proposal})

    env = {"MARKERTOOLS_DOTS_WORKER": "run-1:reader"}
    result = asyncio.run(_with_host(offline_codex, tmp_path, [], env, body))
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith(
        "dots_start: dots_start is refused: this dots server runs inside worker run-1:reader"
    )
