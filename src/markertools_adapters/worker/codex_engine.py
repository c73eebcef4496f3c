# Owns: `CodexEngine`, the Codex adapter of the worker host's engine port (WRK-3, ENG-2):
# one task's `codex app-server` (the dots supervisor's `CodexWorker`: own process group),
# its thread (started, or `thread/resume`d), its turns (the agent messages and token usage
# of each turn, collected from the notifications), the task's markertools tools in the
# thread's configuration - a loopback URL and the bearer in `http_headers`, sent over the
# app-server's stdin (TOL-10), or the stdio server of the older route - and every
# approval request turned into an engine-neutral `EngineRequest` answered by the run
# (APR-1): accepted or declined in Codex's own shapes.
#
# Must never: approve a request the run did not approve; put a task token in a file or in
# an environment an agent's shell inherits (the stdio route's env is the caller's choice).
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shlex
import signal
from typing import Any, Final

from markertools import TurnCost
from markertools_adapters.codex import MESSAGE_SEPARATOR
from markertools_adapters.dots._worker import REFUSALS, REQUEST_NAMES, CodexWorker, request_summary
from markertools_adapters.worker.engine import (
    TOOLS_SERVER,
    EngineEvents,
    EngineRequest,
    TaskTools,
    TurnEnd,
)
from markertools_adapters.worker.settings import TokenUsage, WorkerSettings

_log = logging.getLogger("markertools.worker")
SANDBOX: Final[str] = "workspace-write"
TASK_TMP: Final[str] = ".markertools-tmp"  # the task's TMPDIR, inside its directory
_INTERRUPT_WAIT: Final[float] = 0.5
# APR-1: Codex's request -> (our kind, the answer that accepts)
ACCEPTS: Final[dict[str, tuple[str, dict[str, Any]]]] = {
    "item/commandExecution/requestApproval": ("command", {"decision": "accept"}),
    "item/fileChange/requestApproval": ("file_change", {"decision": "accept"}),
    "execCommandApproval": ("command", {"decision": "approved"}),
    "applyPatchApproval": ("file_change", {"decision": "approved"}),
}
SHELL_METACHARACTERS: Final[tuple[str, ...]] = (";", "&&", "||", "|", "$(", "`", ">", "<", "\n")


DIFF_CHANGES_SHOWN: Final[int] = 20  # APR-1: changes named in a file change's summary


def diff_summary(changes: object) -> str | None:
    """APR-1: one line per the file change's changes (Codex's `FileUpdateChange`s: path,
    kind add / delete / update with an optional move, the diff): what it does to which
    path and how many lines it adds and removes; None when there is nothing to say. An
    added or deleted file's `diff` is its content; an update's is a unified diff."""
    if not isinstance(changes, list):
        return None
    parts: list[str] = []
    for change in changes:
        if not isinstance(change, dict) or not isinstance(change.get("path"), str):
            continue
        kind_field = change.get("kind")
        kind = kind_field.get("type") if isinstance(kind_field, dict) else None
        diff = change.get("diff")
        lines = diff.splitlines() if isinstance(diff, str) else []
        if kind == "add":
            counts = f"+{len(lines)}"
        elif kind == "delete":
            counts = f"-{len(lines)}"
        else:
            kind = "update"
            if any(x.startswith("@@") for x in lines):  # the file headers end at a hunk
                lines = lines[next(i for i, x in enumerate(lines) if x.startswith("@@")) :]
            plus = sum(1 for x in lines if x.startswith("+"))
            minus = sum(1 for x in lines if x.startswith("-"))
            counts = f"+{plus} -{minus}"
        moved = kind_field.get("move_path") if isinstance(kind_field, dict) else None
        target = f"{change['path']} -> {moved}" if isinstance(moved, str) and moved else change["path"]
        parts.append(f"{kind} {target} ({counts} lines)")
    if not parts:
        return None
    shown = parts[:DIFF_CHANGES_SHOWN]
    more = len(parts) - len(shown)
    return "; ".join(shown) + (f"; ... (+{more} more)" if more else "")


def command_argv(command: str | None) -> tuple[str, ...] | None:
    """The argv of a command string when it is one plain command (no shell operators,
    substitutions or redirections, which never match an allow prefix: APR-2), else None."""
    if not command or any(mark in command for mark in SHELL_METACHARACTERS):
        return None
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    if len(argv) >= 3 and argv[0] in ("bash", "sh", "zsh") and argv[1] in ("-lc", "-c"):
        return command_argv(argv[2])  # Codex wraps commands in a login shell
    return tuple(argv) or None


class CodexEngine:
    """The Engine port on one `codex app-server` (see the module header)."""

    name = "codex"

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
        self.tools = tools
        self._model: str | None = task_model
        self._texts: dict[str, list[str]] = {}  # turn id -> its agent messages
        self._usage: dict[str, TokenUsage] = {}
        self._errors: dict[str, str] = {}  # turn id -> Codex's error message
        self._paths: dict[str, tuple[str, ...]] = {}  # file-change item id -> its paths
        self._diffs: dict[str, str | None] = {}  # file-change item id -> its diff summary
        self._tools_state = asyncio.Event()
        tmpdir = f"{directory}/{TASK_TMP}"
        self.worker = CodexWorker(
            settings.codex_bin,
            env=settings.child_env({**env, "TMPDIR": tmpdir}),
            cwd=directory,
            on_raw=self._on_raw,
            on_turn_end=self._turn_end,
            on_request=lambda kind, summary: None,  # `decide` answers every request
            on_exit=events.exited,
            on_rate_limits=lambda snapshot: None,
            request_timeout=settings.request_timeout,
            decide=self._decide,
        )

    # ---- the port ---------------------------------------------------------------------------

    @property
    def pgid(self) -> int | None:
        client = self.worker.client
        return None if client is None else client.pid

    @property
    def alive(self) -> bool:
        return self.worker.alive

    @property
    def model(self) -> str | None:
        return self._model

    async def start(self) -> int | None:
        os.makedirs(f"{self.directory}/{TASK_TMP}", mode=0o700, exist_ok=True)
        await self.worker.ensure()
        return self.pgid

    async def open(self, *, resume: str | None) -> str | None:
        self._tools_state.clear()
        try:
            thread = await self.worker.open_thread(
                cwd=self.directory,
                sandbox=SANDBOX,
                model=self.task_model,
                resume=resume,
                config=self._config(),
            )
        except Exception:
            if resume is None:
                raise
            return None
        if self.tools is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.tools_ready_seconds):
                    await self._tools_state.wait()
        return thread

    async def last_turn(self, session: str) -> tuple[str, str] | None:
        client = await self.worker.ensure()
        try:
            answer = await client.thread_read(session, include_turns=True)
        except Exception:
            return None  # the thread is not on this machine
        thread = answer.get("thread") if isinstance(answer, dict) else None
        turns = thread.get("turns") if isinstance(thread, dict) else None
        if not isinstance(turns, list) or not turns or not isinstance(turns[-1], dict):
            return None
        last = turns[-1]
        turn_id = last.get("id")
        if last.get("status") != "completed" or not isinstance(turn_id, str):
            return None
        texts = [
            str(item.get("text"))
            for item in last.get("items") or []
            if isinstance(item, dict)
            and item.get("type") == "agentMessage"
            and isinstance(item.get("text"), str)
        ]
        return turn_id, MESSAGE_SEPARATOR.join(texts)

    async def start_turn(self, text: str) -> str:
        turn_id = await self.worker.start_turn(text, model=self.task_model, effort=self.effort)
        self.worker.flush_early_end()
        return turn_id

    def cost_so_far(self, turn_id: str) -> TurnCost:
        self._texts.pop(turn_id, None)
        return self.settings.prices.cost(self._model, self._usage.pop(turn_id, TokenUsage()))

    async def turn_over(self, timeout: float) -> bool:
        return await self.worker.turn_over(timeout)

    async def interrupt(self) -> None:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(_INTERRUPT_WAIT * 4):
                await self.worker.interrupt()

    def kill(self) -> None:
        client = self.worker.client
        if client is not None:
            client.signal(signal.SIGKILL)

    async def close(self, grace: float) -> None:
        await self.worker.close(grace=grace)

    # ---- the thread's configuration (WRK-9, TOL-10) ---------------------------------------------

    def _config(self) -> dict[str, Any]:
        """The thread's configuration: /tmp is not writable (TOL-10: another task's
        files, a store under /tmp), the task's own TMPDIR inside its directory is (the
        app-server's environment names it), and the task's tools."""
        config: dict[str, Any] = {
            "sandbox_workspace_write.exclude_slash_tmp": True,
            "sandbox_workspace_write.exclude_tmpdir_env_var": False,
        }
        config.update(self._tools_config() or {})
        return config

    def _tools_config(self) -> dict[str, Any] | None:
        tools = self.tools
        if tools is None:
            return None
        if tools.url is None:  # the host serves no HTTP tools (tools only in-process)
            return None
        # the host serves them: the bearer only in memory, sent over the app-server's stdin
        server: dict[str, Any] = {"url": tools.url}
        if tools.bearer is not None:
            server["http_headers"] = {"Authorization": f"Bearer {tools.bearer}"}
        server["default_tools_approval_mode"] = "approve"
        return {f"mcp_servers.{TOOLS_SERVER}": server}

    # ---- approvals (APR-1) ------------------------------------------------------------------

    async def _decide(self, method: str, params: Any) -> dict[str, Any]:
        """Every server request: an approval becomes an EngineRequest the run answers;
        anything else (user input, elicitation, extra permissions) is refused."""
        p = params if isinstance(params, dict) else {}
        kind_answer = ACCEPTS.get(method)
        refusal = REFUSALS.get(method, {"decision": "decline"})
        name = REQUEST_NAMES.get(method, method)
        summary = request_summary(method, params)
        if kind_answer is None:
            kind = "permission" if "permission" in method else "input"
            await self.events.approve(
                EngineRequest(kind, name, summary, reason=_text(p, "reason"), brokered=False)
            )
            return dict(refusal)  # never approved (WRK-3): the run ends the turn
        kind, accept = kind_answer
        command = _text(p, "command")
        if isinstance(p.get("command"), list):  # legacy v1: an argv
            command = shlex.join(str(a) for a in p["command"])
        request = EngineRequest(
            kind=kind,
            name=name,
            summary=summary,
            command=command if kind == "command" else None,
            argv=command_argv(command) if kind == "command" else None,
            cwd=_text(p, "cwd") or self.directory,
            paths=self._paths.get(str(p.get("itemId")), ()) if kind == "file_change" else (),
            diff=self._diffs.get(str(p.get("itemId"))) if kind == "file_change" else None,
            reason=_text(p, "reason"),
        )
        verdict = await self.events.approve(request)
        if verdict.approved:
            return dict(accept)
        if verdict.message and not verdict.interrupt:  # APR-1: the agent is told why
            await self._tell(p, verdict.message)
        return dict(refusal)

    async def _tell(self, params: dict[str, Any], text: str) -> None:
        """Add `text` to the running turn (`turn/steer`), so the model reads why its
        request was declined right after the decline itself. Best effort, bounded: a
        turn that ended meanwhile has nobody to tell."""
        client = self.worker.client
        thread, turn = params.get("threadId"), params.get("turnId")
        if client is None or not isinstance(thread, str) or not isinstance(turn, str):
            return
        body = {
            "threadId": thread,
            "expectedTurnId": turn,
            "input": [{"type": "text", "text": text, "text_elements": []}],
        }
        try:
            async with asyncio.timeout(_INTERRUPT_WAIT * 4):
                await client.request("turn/steer", body)
        except Exception as exc:  # the turn ended, or this Codex has no steer
            _log.info("telling the agent why its request was declined failed: %s", exc)

    # ---- notifications ---------------------------------------------------------------------------

    def _turn_end(self, turn_id: str, status: str, reply: str | None) -> None:
        texts = self._texts.pop(turn_id, [])
        usage = self._usage.pop(turn_id, TokenUsage())
        cost = self.settings.prices.cost(self._model, usage)
        self.events.turn_ended(
            TurnEnd(
                turn_id,
                status,
                MESSAGE_SEPARATOR.join(texts) or (reply or ""),
                reply,
                cost,
                self._errors.pop(turn_id, None),
            )
        )

    def _on_raw(self, raw: str) -> None:
        if '"item/completed"' in raw and '"agentMessage"' in raw:
            params = _params(raw)
            item = params.get("item")
            turn = params.get("turnId")
            if isinstance(item, dict) and isinstance(turn, str):
                text = item.get("text")
                if isinstance(text, str):
                    self._texts.setdefault(turn, []).append(text)
        elif '"item/started"' in raw and '"fileChange"' in raw:
            item = _params(raw).get("item")
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                found = item.get("changes")
                changes: list[Any] = found if isinstance(found, list) else []
                self._paths[item["id"]] = tuple(
                    str(c.get("path")) for c in changes if isinstance(c, dict) and c.get("path")
                )
                self._diffs[item["id"]] = diff_summary(changes)
        elif '"thread/tokenUsage/updated"' in raw:
            params = _params(raw)
            turn = params.get("turnId")
            usage = params.get("tokenUsage")
            last = usage.get("last") if isinstance(usage, dict) else None
            if isinstance(turn, str) and isinstance(last, dict):
                self._usage[turn] = TokenUsage(
                    input=_count(last.get("inputTokens")),
                    cached_input=_count(last.get("cachedInputTokens")),
                    output=_count(last.get("outputTokens")),
                    total=_count(last.get("totalTokens")),
                )
        elif '"turn/completed"' in raw and '"error"' in raw:
            turn = _params(raw).get("turn")
            error = turn.get("error") if isinstance(turn, dict) else None
            text = error.get("message") if isinstance(error, dict) else None
            if isinstance(turn, dict) and isinstance(text, str) and text.strip():
                self._errors[str(turn.get("id"))] = " ".join(text.split())[:500]
        elif '"mcpServer/startupStatus/updated"' in raw:
            params = _params(raw)
            if params.get("name") == TOOLS_SERVER and params.get("status") in (
                "ready",
                "failed",
                "cancelled",
            ):
                self._tools_state.set()
                self.events.tools_ready(str(params.get("status")))
        elif '"thread/started"' in raw:
            thread = _params(raw).get("thread")
            model = thread.get("model") if isinstance(thread, dict) else None
            if isinstance(model, str) and self._model is None:
                self._model = model


def _params(raw: str) -> dict[str, Any]:
    try:
        message = json.loads(raw)
    except ValueError:
        return {}
    params = message.get("params") if isinstance(message, dict) else None
    return params if isinstance(params, dict) else {}


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _text(params: dict[str, Any], key: str) -> str | None:
    value = params.get(key)
    return value if isinstance(value, str) and value.strip() else None


__all__ = ["ACCEPTS", "SANDBOX", "CodexEngine", "command_argv"]
