# Owns: the run record of an orchestration run (what the store saves as
# `run-<id>.json`): run status and counters, one `RoleRun` per role, the notification
# outbox, recent alerts and the window of recently seen event ids. Plain frozen values;
# every change is made by `_supervision.apply` with attrs.evolve.
#
# Invariants:
#   Rule 1: `roles` follow the proposal's declaration order, one per role.
#   Rule 2: a role has a `decision_id` exactly while it is `awaiting-decision`, and an
#           `inflight_instruction` exactly while its turn is live (starting, running,
#           stopping).
#   Rule 3: `alerts` keep the last MAX_ALERTS; `seen_events` the last SEEN_WINDOW ids.
from __future__ import annotations

from typing import Final, Literal

import attrs

from markertools._root import InvalidArgument
from markertools.plans._machines import RoleStatus, RunStatus
from markertools.plans._model import Proposal
from markertools.plans._quota import QuotaWindow
from markertools.text.msg import Msg

MAX_ALERTS: Final[int] = 30
SEEN_WINDOW: Final[int] = 1024

PauseReason = Literal[
    "user",
    "turn-limit",
    "decision-retries",
    "reminders",
    "quota",
    "notify-failures",
    "host-restart",
    "timeout",
    "approval",
    "model",
    "worker-exit",
    "external-turn",
    "launch-failed",
    "thread-gone",
    "internal-error",
]
MAX_KNOWN_TURNS: Final[int] = 64  # turn ids kept per role for the external-turn check
NoticeKind = Literal["decision", "reminder", "paused", "completed", "cancelled"]
DECISION_NOTICES: Final[frozenset[str]] = frozenset({"decision", "reminder"})


@attrs.frozen
class Alert:
    """A message for the decider, with the time it was raised."""

    at: float
    message: Msg


@attrs.frozen
class RoleRun:
    """One role's progress in a run: status, turns, the instruction to send next and
    the one in flight, its thread, conclusion and per-role overrides."""

    name: str
    status: RoleStatus = "queued"
    turns: int = 0
    pending_instruction: str | None = None  # sent at the next launch
    inflight_instruction: str | None = None  # sent or being sent (Rule 2)
    turn_started_at: float | None = None
    last_instruction: str | None = None
    last_reply: str | None = None
    last_outcome: str | None = None
    thread_id: str | None = None
    decision_id: str | None = None  # current decision (Rule 2)
    decision_deadline: float | None = None  # set once the decision notice is delivered
    decision_retries: int = 0  # reminders sent for the current decision
    issued_decision_ids: tuple[str, ...] = ()
    conclusion: str | None = None  # accepted conclusion (completed)
    interrupted_instruction: str | None = None  # unfinished when the host stopped
    known_turns: tuple[str, ...] = ()  # turn ids of its thread the host knows (DOT-12)
    model: str | None = None  # dots_tune overrides for the next turns (None: the plan's)
    effort: str | None = None
    timeout_ms: int | None = None
    sandbox: str | None = None
    # Codex no longer has the role's thread (its CODEX_HOME was removed or is another):
    # its next turn starts a new thread, given what the run knows of it (launch_payload)
    thread_gone: bool = False


@attrs.frozen
class Notice:
    """One notification for the main conversation, in the outbox until delivered."""

    event_id: str
    kind: NoticeKind
    created_at: float
    role: str | None = None
    decision_id: str | None = None
    detail: Msg | None = None
    failures: int = 0
    next_attempt_at: float = 0.0
    waiting_for_host: bool = False  # the host was offline: wait until it is back


@attrs.frozen
class Confirmation:
    """A user's answer to a confirmation (DOT-14): what was asked and the answer."""

    at: float
    step: str
    accepted: bool
    summary: str = ""


@attrs.frozen
class RunState:
    """The whole state of one orchestration run: its proposal, every role's RoleRun,
    pending decisions, alerts and settings; changed only by `apply` (pure)."""

    run_id: str
    proposal: Proposal
    roles: tuple[RoleRun, ...]
    created_at: float
    updated_at: float
    status: RunStatus = "ready"
    max_concurrent: int = 3
    turns_used: int = 0
    total_reminders: int = 0
    pause_reason: PauseReason | None = None
    outbox: tuple[Notice, ...] = ()
    notify_failures: int = 0  # consecutive delivery failures
    next_notice: int = 1
    seen_events: tuple[str, ...] = ()
    alerts: tuple[Alert, ...] = ()
    quota_windows: tuple[QuotaWindow, ...] = ()
    quota_unobserved: bool = False
    owner: str | None = None  # the main conversation that started the run (DOT-15)
    confirmations: tuple[Confirmation, ...] = ()
    max_turns: int | None = None  # dots_control budget (None: the proposal's maxTurns)
    allowed_models: tuple[str, ...] = ()  # added through dots_tune (DOT-5)
    log_seq: int = 0  # the store's event-log sequence number last applied
    revision: int = 0  # the store's compare-and-set revision

    @property
    def turn_limit(self) -> int:
        return self.max_turns if self.max_turns is not None else self.proposal.max_turns

    @property
    def models_allowed(self) -> tuple[str, ...]:
        return (*self.proposal.allowed_models, *self.allowed_models)

    def role(self, name: str) -> RoleRun | None:
        for r in self.roles:
            if r.name == name:
                return r
        return None


def new_run(
    run_id: str,
    proposal: Proposal,
    now: float,
    max_concurrent: int = 3,
    *,
    owner: str | None = None,
    confirmations: tuple[Confirmation, ...] = (),
) -> RunState:
    """A `ready` run: every role queued with its first instruction (seed: 所有角色首条
    指令进入队列). `max_concurrent` is the host's setting (PLN-10)."""
    if not 1 <= max_concurrent <= 3:
        raise InvalidArgument(f"maxConcurrent must be between 1 and 3, got {max_concurrent}")
    roles = tuple(RoleRun(r.name, pending_instruction=r.instruction) for r in proposal.workers)
    return RunState(
        run_id=run_id,
        proposal=proposal,
        roles=roles,
        created_at=now,
        updated_at=now,
        max_concurrent=max_concurrent,
        owner=owner,
        confirmations=confirmations,
    )
