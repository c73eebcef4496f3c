"""Shared helpers of the `dots serve` tests (imported by the other test_mcp_* files; this
file has no tests of its own): a DotsMcp on the real pinned Codex (offline, the fake
Responses server), in-process SDK clients in both protocol eras, and a scripted
elicitation callback that records every question."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client
from mcp_types import CallToolResult, ElicitRequestParams, ElicitResult, ErrorData
from support.codex import OfflineCodex

from markertools.plans import HostSettings
from markertools_adapters.dots import Supervisor
from markertools_adapters.dots.mcp import CONVERSATION_META_KEY, DotsMcp

LEGACY = "legacy"  # the initialize handshake: 2025-11-25, server-to-client elicitation
MODERN = "2026-07-28"  # per-request envelope: elicitation rides InputRequiredResult
ERAS = (LEGACY, MODERN)


def make_dots(codex: OfflineCodex, state_dir: Path, **kw: Any) -> DotsMcp:
    def supervisor(confirmer: Any, notifier: Any) -> Supervisor:
        return Supervisor(
            state_dir,
            settings=HostSettings(max_concurrent=3, poll_ms=1000),
            codex_bin=codex.binary,
            codex_env=codex.env,
            confirmer=confirmer,
            notifier=notifier,
            tick_seconds=0.05,
            request_timeout=30.0,
        )

    return DotsMcp(supervisor, **kw)


class Answers:
    """An elicitation callback answering from a script ("accept" by default)."""

    def __init__(self, *actions: str) -> None:
        self.actions = list(actions)
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        self.asked.append(params.message)
        action = self.actions.pop(0) if self.actions else "accept"
        if action == "accept":
            return ElicitResult(action="accept", content={"confirm": True})
        if action == "accept-unticked":
            return ElicitResult(action="accept", content={"confirm": False})
        return ElicitResult(action=action)  # type: ignore[arg-type]


@asynccontextmanager
async def client(
    dots: DotsMcp, mode: str, answers: Answers | None = None, **kw: Any
) -> AsyncIterator[Client]:
    async with Client(
        dots.server, mode=mode, elicitation_callback=answers, read_timeout_seconds=60, **kw
    ) as c:
        yield c


async def call(
    c: Client, tool: str, args: dict[str, Any] | None = None, conversation: str | None = None
) -> CallToolResult:
    meta = {CONVERSATION_META_KEY: conversation} if conversation is not None else None
    return await c.call_tool(tool, args or {}, meta=meta)  # type: ignore[arg-type]


def ok(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    assert "pendingDecisions" in result.structured_content
    return result.structured_content


def refused(result: CallToolResult) -> tuple[str, str | None]:
    """(text, field) of a tool error."""
    assert result.is_error, result.structured_content
    assert isinstance(result.structured_content, dict)
    assert "pendingDecisions" in result.structured_content
    error = result.structured_content["error"]
    text = result.content[0].text  # type: ignore[union-attr]
    return text, error["field"]


def as_json(result: CallToolResult) -> dict[str, Any]:
    return json.loads(result.content[1].text)  # type: ignore[union-attr]


class Transcript:
    """Records a session (calls, elicitations, results) for docs/orchestration.md; written
    as Markdown when MARKERTOOLS_DOTS_TRANSCRIPT names a file."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def elicited(self, message: str, answer: str) -> None:
        quoted = "\n".join(f"    > {line}" for line in message.splitlines())
        self.lines.append(
            f"  - the host asks the user (elicitation):\n{quoted}\n    - user: {answer}"
        )

    async def call(
        self, c: Client, tool: str, args: dict[str, Any] | None = None
    ) -> CallToolResult:
        shown = json.dumps(args or {}, ensure_ascii=False)
        if len(shown) > 300:
            shown = shown[:297] + "..."
        self.lines.append(f"- **{tool}** `{shown}`")
        result = await call(c, tool, args)
        text = result.content[0].text  # type: ignore[union-attr]
        mark = "error" if result.is_error else "result"
        pending = (result.structured_content or {}).get("pendingDecisions")
        self.lines.append(f"  - {mark}: {text}")
        self.lines.append(f"  - pendingDecisions: `{json.dumps(pending)}`")
        return result

    def write(self, path: str) -> None:
        Path(path).write_text("\n".join(self.lines) + "\n", encoding="utf-8")


class RecordingAnswers(Answers):
    def __init__(self, transcript: Transcript, *actions: str) -> None:
        super().__init__(*actions)
        self.transcript = transcript

    async def __call__(self, context: Any, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        result = await super().__call__(context, params)
        answer = result.action if isinstance(result, ElicitResult) else "error"
        if isinstance(result, ElicitResult) and result.content:
            answer += f" {json.dumps(result.content)}"
        self.transcript.elicited(params.message, answer)
        return result
