# Owns: `ClaudeEngine`, the Claude Code adapter of the worker host's engine port (ENG-2):
# one task's `claude` CLI in its own process group (`claude.client.ClaudeProcess`, the
# stream-json control protocol driven directly), its session (`--session-id` chosen by
# the host, or `--resume` of the task's one: the session id is the task's thread id),
# its turns (one user message each, ended by the result message: the assistant texts of
# the main conversation, the result's usage and dollars), the task's markertools tools
# as an in-process MCP server answered over the control channel (`claude._mcp`: the
# host's `TaskTools.call`, allowed by `--allowedTools`, never a secret in an argument,
# a file or the agent's environment - TOL-10), and every permission prompt
# (`--permission-prompt-tool stdio`) turned into an engine-neutral `EngineRequest` the
# run answers (APR-1). The agent works with `acceptEdits` in its directory and Claude
# Code's command sandbox (bubblewrap: commands run without asking inside it, a command
# that wants out asks; no sandbox - the task fails rather than run unconfined); only the
# user's settings are read (`--setting-sources user`: a task directory's
# `.claude/settings*.json`, which the agent can write, never loosens its permissions).
#
# Must never: allow a permission the run did not approve (the markertools tools aside);
# pass the stdio tools route's token or any MARKERTOOLS_* variable to the agent.
from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Final

from markertools import InvalidArgument, TurnCost
from markertools_adapters.claude._mcp import SdkMcpServer
from markertools_adapters.claude.client import ClaudeProcess
from markertools_adapters.claude.transcript import (
    assistant_texts,
    last_completed_turn,
    session_file,
)
from markertools_adapters.codex import MESSAGE_SEPARATOR
from markertools_adapters.errors import OperationFailed
from markertools_adapters.worker._claude_requests import engine_request, tool_prefix
from markertools_adapters.worker.engine import TOOLS_SERVER, EngineEvents, TaskTools, TurnEnd
from markertools_adapters.worker.settings import (
    PRICED_BY_CLAUDE_CODE,
    TokenUsage,
    WorkerSettings,
)

PERMISSION_MODE: Final[str] = "acceptEdits"
# Claude Code's command sandbox: commands run in it without a prompt; one that asks to
# leave it (`dangerouslyDisableSandbox`) is a permission request; no sandbox, no start
SANDBOX: Final[dict[str, Any]] = {
    "sandbox": {"enabled": True, "autoAllowBashIfSandboxed": True, "failIfUnavailable": True}
}
EFFORTS: Final[dict[str, str]] = {  # the task's effort (Codex's names) -> Claude Code's
    "minimal": "low",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "xhigh",
    "max": "max",
}
DECLINED: Final[str] = "the markertools worker host declined this request"
_INTERRUPT_WAIT: Final[float] = 2.0
_MICRO: Final[Decimal] = Decimal("0.000001")


def agent_env(env: dict[str, str], *, tools: bool) -> dict[str, str]:
    """The CLI's environment: the host's, passed through (a user's ANTHROPIC_BASE_URL,
    proxies, login), less every MARKERTOOLS_* variable (a task token of the stdio tools
    route among them) and CLAUDECODE; with `tools`, the task's tools are listed in every
    request rather than behind Claude Code's tool search (ENABLE_TOOL_SEARCH), unless
    the environment says otherwise."""
    out = {k: v for k, v in env.items() if not k.startswith("MARKERTOOLS_") and k != "CLAUDECODE"}
    if tools:
        out.setdefault("ENABLE_TOOL_SEARCH", "false")
    return out


def config_dir(env: dict[str, str]) -> Path:
    """Where the CLI keeps its sessions: $CLAUDE_CONFIG_DIR, else $HOME/.claude."""
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"])
    return Path(env.get("HOME") or Path.home()) / ".claude"


class ClaudeEngine:
    """The Engine port on one `claude` CLI (see the module header)."""

    name = "claude-code"

    def __init__(
        self,
        settings: WorkerSettings,
        *,
        directory: str,
        env: dict[str, str],
        task_model: str | None,
        effort: str | None,
        tools: TaskTools | None,
        events: EngineEvents,
    ) -> None:
        self.settings = settings
        self.directory = directory
        self.events = events
        self.task_model = task_model
        self.effort = effort
        self.server: SdkMcpServer | None = None
        if tools is not None and tools.call is not None and tools.names:
            self.server = SdkMcpServer(
                TOOLS_SERVER,
                names=tools.names,
                call=tools.call,
                schema=tools.schema,
                description=tools.description,
                on_ready=self._tools_ready,
            )
        # no secret joins the CLI's environment (TOL-10): the tools are served in-process
        self.env = agent_env(settings.child_env(env), tools=self.server is not None)
        self.config = config_dir(self.env)
        self.process: ClaudeProcess | None = None
        self.session: str | None = None
        self._model: str | None = task_model
        self._closing = False
        self._tools_state = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._live: str | None = None  # the turn id of the live turn
        self._ours = False  # the CLI began our live turn (its command_lifecycle said so)
        self._lifecycle = False  # this CLI reports command_lifecycle at all
        self._interrupted = False
        self._texts: list[str] = []
        self._usage: dict[str, TokenUsage] = {}  # API message id -> its usage (a cut turn)
        self._carry: list[TurnCost] = []  # results of turns the CLI began itself

    # ---- the port ---------------------------------------------------------------------------

    @property
    def pgid(self) -> int | None:
        return None if self.process is None else self.process.pid

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.running

    @property
    def model(self) -> str | None:
        return self._model

    def args(self) -> list[str]:
        """The CLI's arguments (the session flag is added by `open`): no secret."""
        args = [
            "--permission-prompt-tool=stdio",
            "--setting-sources=user",
            "--settings",
            json.dumps(SANDBOX, separators=(",", ":")),
        ]
        if self.server is not None:
            servers = {"mcpServers": {TOOLS_SERVER: self.server.declaration()}}
            args += ["--mcp-config", json.dumps(servers, separators=(",", ":"))]
            args.append(f"--allowedTools=mcp__{TOOLS_SERVER}")  # every tool of the server
        if self.task_model:
            args.append(f"--model={self.task_model}")
        if self.effort in EFFORTS:
            args.append(f"--effort={EFFORTS[self.effort]}")
        args.append(f"--permission-mode={PERMISSION_MODE}")
        return args

    async def start(self) -> int | None:
        if self.process is not None and self.process.running:
            return self.pgid
        self._closing = False
        self.process = ClaudeProcess(
            self.settings.claude_bin,
            self.args(),
            env=self.env,
            cwd=self.directory,
            on_message=self._message,
            on_control=self._control,
            on_exit=self._exited,
        )
        await self.process.start()
        return self.pgid

    async def open(self, *, resume: str | None) -> str | None:
        if resume is not None and session_file(self.config, resume) is None:
            return None  # the session is not on this machine: the run starts a new one
        if self.process is None or self.process.launched or not self.process.running:
            await self.close(1.0)  # a process runs one session: a fresh one for this
            await self.start()
        assert self.process is not None
        session = resume or str(uuid.uuid4())
        self._tools_state.clear()
        try:
            await self.process.launch(
                "--resume" if resume else "--session-id",
                session,
                timeout=self.settings.request_timeout,
            )
        except Exception:
            if resume is None:
                raise
            return None
        self.session = session
        if self.server is not None and not self._tools_state.is_set():
            try:
                async with asyncio.timeout(self.settings.tools_ready_seconds):
                    await self._tools_state.wait()
            except TimeoutError:
                self.events.tools_ready("failed")
        return session

    async def last_turn(self, session: str) -> tuple[str, str] | None:
        path = session_file(self.config, session)
        if path is None:
            return None
        return await asyncio.to_thread(last_completed_turn, path)

    async def start_turn(self, text: str) -> str:
        if self.process is None or self.session is None:
            raise OperationFailed("claude has no open session")
        turn_id = str(uuid.uuid4())
        self._live, self._ours, self._interrupted = turn_id, False, False
        self._texts, self._usage = [], {}
        self._idle.clear()
        try:
            await self.process.send_user(text, turn_id)
        except Exception:
            self._turn_over()
            raise
        return turn_id

    def cost_so_far(self, turn_id: str) -> TurnCost:
        total = TokenUsage()
        for usage in self._usage.values():
            total = TokenUsage(
                total.input + usage.input,
                total.cached_input + usage.cached_input,
                total.output + usage.output,
                total.total + usage.total,
            )
        self._usage = {}
        return self.settings.prices.cost(self._model, total)

    async def turn_over(self, timeout: float) -> bool:
        if self._live is None:
            return True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._idle.wait()
        return self._live is None

    async def interrupt(self) -> None:
        if self._live is None or self.process is None or not self.process.running:
            return
        self._interrupted = True
        with contextlib.suppress(Exception):
            await self.process.request("interrupt", timeout=_INTERRUPT_WAIT)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill_tree()

    async def close(self, grace: float) -> None:
        self._closing = True
        process = self.process
        if process is not None:
            await process.close(grace)
        self._turn_over()

    # ---- the CLI's messages -------------------------------------------------------------------

    def _message(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "system" and message.get("subtype") == "init":
            model = message.get("model")
            if isinstance(model, str) and model:
                self._model = model
        elif kind == "command_lifecycle":
            self._lifecycle = True
            if message.get("command_uuid") == self._live and message.get("state") == "started":
                self._ours = True
        elif kind == "assistant" and message.get("parent_tool_use_id") is None:
            if not self._is_ours():
                return
            body = message.get("message")
            self._texts.extend(assistant_texts(body))
            if isinstance(body, dict) and isinstance(body.get("id"), str):
                self._usage[body["id"]] = _usage(body.get("usage"))
        elif kind == "result":
            cost = self._cost(message)
            if not self._is_ours():
                self._carry.append(cost)  # a turn the CLI began itself: paid by the next
                return
            self._end(message, cost)

    def _is_ours(self) -> bool:
        return self._live is not None and (self._ours or not self._lifecycle)

    def _end(self, result: dict[str, Any], cost: TurnCost) -> None:
        turn_id = self._live
        assert turn_id is not None
        if result.get("subtype") == "success" and not result.get("is_error"):
            status, error = "completed", None
        elif self._interrupted:
            status, error = "interrupted", None
        else:
            status, error = "failed", _error(result)
        for earlier in self._carry:
            cost = _add(cost, earlier)
        self._carry = []
        final = result.get("result")
        reply = (
            final
            if isinstance(final, str) and final
            else (self._texts[-1] if self._texts else None)
        )
        text = MESSAGE_SEPARATOR.join(self._texts) or (reply or "")
        self._usage = {}
        self._turn_over()
        self.events.turn_ended(TurnEnd(turn_id, status, text, reply, cost, error))

    def _turn_over(self) -> None:
        self._live = None
        self._idle.set()

    def _cost(self, result: dict[str, Any]) -> TurnCost:
        """The turn's cost as Claude Code reports it: its dollars (`costUSD` of every
        model since the last result, `priced_by` "claude-code") when it knows every
        model's price, else the tokens, priced by `--prices` when the table names the
        model ("table"), unpriced otherwise."""
        usage = _usage(result.get("usage"))
        per_model = result.get("model_usage_since_last_result")
        if isinstance(per_model, dict) and per_model:
            rows = [v for v in per_model.values() if isinstance(v, dict)]
            known = all(r.get("costBasis") not in (None, "unknown") for r in rows)
            try:
                usd = sum((Decimal(str(r.get("costUSD"))) for r in rows), Decimal(0))
            except InvalidOperation:
                known = False
            if rows and known and usd.is_finite() and usd >= 0:
                return TurnCost(usd.quantize(_MICRO), usage.total, priced_by=PRICED_BY_CLAUDE_CODE)
        return self.settings.prices.cost(self._model, usage)

    # ---- control requests of the CLI ----------------------------------------------------------

    async def _control(self, request: dict[str, Any]) -> dict[str, Any]:
        subtype = request.get("subtype")
        if subtype == "mcp_message":
            if self.server is None or request.get("server_name") != TOOLS_SERVER:
                raise InvalidArgument(f"no MCP server {str(request.get('server_name'))[:80]!r} here")
            answer = await self.server.handle(request.get("message"))
            return {
                "mcp_response": answer if answer is not None else {"jsonrpc": "2.0", "result": {}}
            }
        if subtype == "can_use_tool":
            tool = str(request.get("tool_name") or "")
            body = request.get("input") if isinstance(request.get("input"), dict) else {}
            if self.server is not None and tool.startswith(tool_prefix(TOOLS_SERVER)):
                return {"behavior": "allow", "updatedInput": body}  # the task's own tools
            verdict = await self.events.approve(engine_request(request, self.directory))
            if verdict.approved:
                return {"behavior": "allow", "updatedInput": body}
            return {"behavior": "deny", "message": verdict.message or DECLINED}
        raise InvalidArgument(f"the markertools worker host does not answer {str(subtype)[:80]}")

    def _tools_ready(self) -> None:
        if not self._tools_state.is_set():
            self._tools_state.set()
            self.events.tools_ready("ready")

    def _exited(self, returncode: int | None, stderr_tail: str) -> None:
        detail = f"claude exit code {returncode}"
        tail = " ".join(stderr_tail.split())[-300:]
        if tail:
            detail += f": {tail}"
        live = self._live is not None
        self._turn_over()  # no turn outlives its process
        if live and not self._closing:  # outside a turn the next call fails and says so
            self.events.exited(detail)


def _usage(raw: Any) -> TokenUsage:
    u = raw if isinstance(raw, dict) else {}
    fresh, cached = _count(u.get("input_tokens")), _count(u.get("cache_read_input_tokens"))
    written, output = _count(u.get("cache_creation_input_tokens")), _count(u.get("output_tokens"))
    inputs = fresh + cached + written
    return TokenUsage(input=inputs, cached_input=cached, output=output, total=inputs + output)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _add(a: TurnCost, b: TurnCost) -> TurnCost:
    usd = a.usd + b.usd if a.usd is not None and b.usd is not None else None
    priced = usd is not None and a.priced and b.priced
    # who priced the sum: the one pricer of both, both named ("claude-code+table") when
    # they differ, None when the sum is unpriced
    by = sorted({x for x in (a.priced_by, b.priced_by) if x is not None}) if priced else []
    return TurnCost(usd, a.tokens + b.tokens, priced=priced, priced_by="+".join(by) or None)


def _error(result: dict[str, Any]) -> str:
    """Claude Code's error of a failed turn, on one line."""
    errors = result.get("errors")
    parts = [str(e) for e in errors if str(e).strip()] if isinstance(errors, list) else []
    if not parts and isinstance(result.get("result"), str) and result["result"].strip():
        parts = [result["result"]]
    text = " ".join(" ".join(parts).split()) or str(result.get("subtype") or "failed")
    return text[:500]


__all__ = ["EFFORTS", "PERMISSION_MODE", "SANDBOX", "ClaudeEngine", "agent_env", "config_dir"]
