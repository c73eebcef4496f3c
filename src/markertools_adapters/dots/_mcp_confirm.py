# Owns: the confirmer port of `dots serve` (DOT-14): the supervisor's confirmations
# asked of the user through MCP elicitation, in both protocol eras.
#
#   - `McpConfirmer` is the one object the Supervisor is built with; it answers through
#     the confirmer of the tool call in progress (`calling(...)`, a contextvar: every
#     MCP request runs in its own task, so calls never see each other's confirmer).
#   - `CallConfirmer` is that per-call confirmer. Up to 2025-11-25 (the handshake era:
#     Codex, Claude Desktop) it sends `elicitation/create` mid-call and waits. From
#     2026-07-28 (the SDK's own `Client`, Claude Code 2.1) there are no server-to-client
#     requests: an unanswered question raises `InputNeeded`, the tool returns an
#     `InputRequiredResult` carrying it, and the client's retry of the same call brings
#     the answer (`input_responses`) and the answers so far (`request_state`, sealed by
#     the SDK). The supervisor changes nothing before every confirmation is accepted, so
#     re-running the call on each round is safe; an answer counts only for the exact
#     question it answered (a digest of the rendered request).
#
# This is the hand-rolled form of the SDK's multi-round-trip flow, not `Resolve(...)`:
# a resolver runs before the tool body, but which confirmations a call needs (and their
# text: thread heads, widened settings) is decided inside the supervisor's call itself
# (`dots_tune` without widening asks nothing, and running it early would apply it).
#
# Invariants:
#   Rule 1: only an accepted form with `confirm: true` is "accept"; a declined,
#           cancelled, unanswered or timed-out question, or one asked outside a tool
#           call, is never a yes (DOT-14).
#   Rule 2: a client without the elicitation capability is refused with a clear
#           error before anything is asked or changed ("Elicitation not supported"
#           is never the user's answer).
from __future__ import annotations

import base64
import contextlib
import hashlib
import json
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Final

import anyio
from mcp.server.mcpserver import Context
from mcp_types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
)
from mcp_types.version import is_version_at_least

from markertools_adapters.dots._ports import (
    ConfirmAnswer,
    ConfirmRequest,
    DotsError,
    NotConfirmed,
)

INPUT_REQUIRED_VERSION: Final[str] = "2026-07-28"  # the first era without server requests
STATE_VERSION: Final[int] = 1

# The form every confirmation shows: one required boolean. Rendered by hand (not from a
# pydantic model) so it carries no top-level "title": Codex's typed elicitation schema
# (McpElicitationSchema) accepts only $schema, type, properties and required there.
CONFIRM_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "confirm": {
            "type": "boolean",
            "title": "Confirm",
            "description": "Tick to confirm; anything else changes nothing.",
        }
    },
    "required": ["confirm"],
}


class ConfirmationUnavailable(DotsError):
    """The client cannot ask the user (no elicitation capability)."""


class InputNeeded(DotsError):
    """2026-07-28: a question the client must put to the user before this call can go
    on; the tool answers with `result()` and the retry brings the answer."""

    def __init__(self, key: str, request: ElicitRequest, state: dict[str, Any]) -> None:
        super().__init__("a confirmation is needed from the user", None)
        self.key = key
        self.request = request
        self.state = state

    def result(self) -> InputRequiredResult:
        return InputRequiredResult(
            input_requests={self.key: self.request},
            request_state=json.dumps(self.state, sort_keys=True, separators=(",", ":")),
        )


def can_elicit(ctx: Context[Any, Any]) -> bool:
    """Form elicitation declared (a bare `elicitation: {}` counts, url-only does not)."""
    caps = ctx.client_capabilities
    elicitation = caps.elicitation if caps is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def uses_input_required(ctx: Context[Any, Any]) -> bool:
    version = ctx.protocol_version
    return version is not None and is_version_at_least(version, INPUT_REQUIRED_VERSION)


def message_of(request: ConfirmRequest) -> str:
    return f"{request.title}\n\n{request.text}"


def answer_of(result: ElicitResult) -> ConfirmAnswer:
    if result.action == "accept":
        content = result.content or {}
        return "accept" if content.get("confirm") is True else "decline"
    return "decline" if result.action == "decline" else "cancel"


def _digest(request: ElicitRequest) -> str:
    params = request.params.model_dump(mode="json", by_alias=True, exclude_none=True)
    raw = json.dumps(params, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return base64.urlsafe_b64encode(hashlib.sha256(raw.encode()).digest()[:18]).decode()


def _decode_state(text: str | None) -> tuple[dict[str, ConfirmAnswer], dict[str, str]]:
    if not text:
        return {}, {}
    try:
        state = json.loads(text)
    except ValueError:
        return {}, {}
    if not isinstance(state, dict) or state.get("v") != STATE_VERSION:
        return {}, {}
    answers = state.get("answers")
    asked = state.get("asked")
    good: dict[str, ConfirmAnswer] = {}
    if isinstance(answers, dict):
        for k, v in answers.items():
            if v in ("accept", "decline", "cancel"):
                good[str(k)] = v
    pinned = {str(k): str(v) for k, v in asked.items()} if isinstance(asked, dict) else {}
    return good, pinned


class CallConfirmer:
    """Asks the user the confirmations of one tool call (see the module header)."""

    def __init__(self, ctx: Context[Any, Any], tool: str, *, timeout: float = 600.0) -> None:
        self.ctx = ctx
        self.tool = tool
        self.timeout = timeout
        self.modern = uses_input_required(ctx)
        self.answers, self.asked = _decode_state(ctx.request_state if self.modern else None)
        self.questions: list[ConfirmRequest] = []

    async def confirm(self, request: ConfirmRequest) -> ConfirmAnswer:
        self.questions.append(request)
        if not can_elicit(self.ctx):
            raise ConfirmationUnavailable(
                f"{self.tool} needs the user's confirmation ({request.title}), but this MCP "
                "client cannot ask the user (it did not declare the elicitation capability); "
                "nothing was changed"
            )
        elicit = ElicitRequest(
            params=ElicitRequestFormParams(
                message=message_of(request), requested_schema=CONFIRM_SCHEMA
            )
        )
        if not self.modern:
            return await self._ask_now(message_of(request))
        digest = _digest(elicit)
        if digest in self.answers:
            return self.answers[digest]
        key = f"confirm-{request.step}"
        response = (self.ctx.input_responses or {}).get(key)
        if isinstance(response, ElicitResult) and self.asked.get(key) == digest:
            answer = answer_of(response)
            self.answers[digest] = answer
            return answer
        state = {"v": STATE_VERSION, "answers": dict(self.answers), "asked": {key: digest}}
        raise InputNeeded(key, elicit, state)

    async def _ask_now(self, message: str) -> ConfirmAnswer:
        """Up to 2025-11-25: `elicitation/create` on the live session, mid-call."""
        result: ElicitResult | None = None
        with anyio.move_on_after(self.timeout):
            result = await self.ctx.session.elicit_form(
                message=message,
                requested_schema=CONFIRM_SCHEMA,
                related_request_id=self.ctx.request_id,
            )
        if result is None:
            raise NotConfirmed(
                f"the user did not answer within {self.timeout:.0f} s; nothing was changed"
            )
        return answer_of(result)


_CURRENT: ContextVar[CallConfirmer | None] = ContextVar("markertools_dots_confirmer", default=None)


@contextlib.contextmanager
def calling(confirmer: CallConfirmer) -> Iterator[CallConfirmer]:
    """Make `confirmer` the one the supervisor asks during this tool call."""
    token = _CURRENT.set(confirmer)
    try:
        yield confirmer
    finally:
        _CURRENT.reset(token)


class McpConfirmer:
    """The Supervisor's confirmer in `dots serve`: the current tool call's, else no."""

    async def confirm(self, request: ConfirmRequest) -> ConfirmAnswer:
        current = _CURRENT.get()
        if current is None:  # asked outside a tool call: nobody to ask, never a yes
            return "decline"
        return await current.confirm(request)
