# Owns: the ports the supervisor talks to people through (DOT-9/10/14, seed 004): the
# confirmer (the user answers confirmations: the terminal in `dots run`, MCP
# elicitation in `dots serve`), the notifier (the outbox's notices reach the main
# conversation) and the continuable sub-agent provider of other backends (DOT-17), and
# the errors every supervisor call raises.
#
# Invariants:
#   Rule 1: only a confirmer's "accept" counts as yes; anything else (decline, cancel,
#           an exception, no answer) creates or changes nothing (DOT-14).
#   Rule 2: every error a caller sees is a `DotsError` with the argument it concerns
#           (`field`) and one readable sentence.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

import attrs

from markertools_adapters.errors import MarkertoolsError

ConfirmAnswer = Literal["accept", "decline", "cancel"]
NotifyAnswer = Literal["delivered", "failed", "offline"]


@attrs.frozen
class ConfirmRequest:
    """One question to the user: `step` is "plan", "launch" or "tune"; `details` is
    what they confirm (JSON-ready), `text` the same as readable lines."""

    step: str
    title: str
    text: str
    details: Mapping[str, Any]


class Confirmer(Protocol):
    """Port: the user answers a confirmation (DOT-14): only "accept" is a yes."""

    async def confirm(self, request: ConfirmRequest) -> ConfirmAnswer: ...


@attrs.frozen
class NoticeOut:
    """A notice for the main conversation (a decision, a reminder, a pause, the end)."""

    notice_id: str
    run_id: str
    owner: str | None
    kind: str
    role: str | None
    decision_id: str | None
    text: str
    reply_head: str | None = None


class Notifier(Protocol):
    """Port: a run's notices reach the main conversation (DOT-9, DOT-10): answer
    "delivered", "failed" (retried after 5 s, then 10 s) or "offline" (it waits)."""

    async def notify(self, notice: NoticeOut) -> NotifyAnswer: ...


class SubagentProvider(Protocol):
    """A continuable sub-agent backend (DOT-17, e.g. `dsh`): not built in; a host that
    has one passes it to the supervisor under its backend name."""

    name: str

    async def run_turn(self, run_id: str, role: str, cwd: str, sandbox: str, text: str) -> str: ...


class DotsError(MarkertoolsError):
    """A refused supervisor call: `field` names the argument (camelCase, as in the
    tools), `message` says why in one sentence."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class RunNotFound(DotsError):
    """The run does not exist, or belongs to another conversation (DOT-15: the two are
    indistinguishable to the caller)."""


class ProposalInvalid(DotsError):
    """PLN validation failed; `issues` holds every (path, message)."""

    def __init__(self, issues: list[tuple[str, str]]) -> None:
        first = issues[0] if issues else ("$", "invalid proposal")
        super().__init__(f"{first[0]}: {first[1]}", first[0])
        self.issues = issues


class NotConfirmed(DotsError):
    """The user declined or cancelled a confirmation, or could not be asked."""


class NoAnswerNotifier:
    """A notifier for hosts without a live conversation: every notice waits (offline)
    until a caller collects it through `status` / `wait`."""

    async def notify(self, notice: NoticeOut) -> NotifyAnswer:
        return "offline"


class DeclineAll:
    """A confirmer that never says yes (the safe default, DOT-14)."""

    async def confirm(self, request: ConfirmRequest) -> ConfirmAnswer:
        return "decline"
