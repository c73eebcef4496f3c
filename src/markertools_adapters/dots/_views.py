# Owns: the typed views the supervisor's calls return (`RunView` and its parts,
# `PendingDecision`, `ProbeView`, `ThreadsView`, `ThreadReadView`) and their JSON
# (camelCase, exactly the shapes docs/cli.md documents; fields are only ever added).
# The CLI and the MCP server read attributes and turn a view into JSON only at their
# edge (`to_json()`). Pure functions of their input.
#
# Invariants:
#   Rule 1: `to_json()` of a view is the documented shape: the same keys in the same
#           order as before views were typed (tests compare them).
#   Rule 2: a run is finished exactly when its state is one of the run machine's
#           terminal states (`FINISHED`); no other file spells them out.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from markertools.plans import RUN_MACHINE, QuotaWindow, RunState

HEAD_CHARS: Final[int] = 200
PAUSE_PREFIX: Final[str] = "plan.paused."  # every pause records its detail as such an alert
UNOBSERVED: Final[str] = "plan.quota_unobserved"  # raised when the watched window goes missing
FINISHED: Final[frozenset[str]] = RUN_MACHINE.terminal  # completed, cancelled (Rule 2)
ALERTS_KEPT: Final[int] = 10


def head(text: object, limit: int = HEAD_CHARS) -> str | None:
    """The first non-blank line of `text`, at most `limit` characters."""
    if not isinstance(text, str):
        return None
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


@attrs.frozen
class DecisionView:
    """The decision a worker awaits: its id (pass it to dispatch / finish)."""

    id: str
    reply_head: str | None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "replyHead": self.reply_head}


@attrs.frozen
class WorkerView:
    """One role of a run as the caller sees it."""

    name: str
    state: str
    turns: int
    thread_id: str | None
    cwd: str | None
    sandbox: str | None
    model: str | None
    last_instruction_head: str | None
    last_reply_head: str | None
    last_outcome: str | None
    decision: DecisionView | None = None
    conclusion_head: str | None = None
    interrupted_instruction_head: str | None = None
    conclusion_known: bool = False  # the role has a conclusion (its head may be "")
    interrupted_known: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "state": self.state,
            "turns": self.turns,
            "threadId": self.thread_id,
            "cwd": self.cwd,
            "sandbox": self.sandbox,
            "model": self.model,
            "lastInstructionHead": self.last_instruction_head,
            "lastReplyHead": self.last_reply_head,
            "lastOutcome": self.last_outcome,
        }
        if self.decision is not None:
            out["decision"] = self.decision.to_json()
        if self.conclusion_known:
            out["conclusionHead"] = self.conclusion_head
        if self.interrupted_known:
            out["interruptedInstructionHead"] = self.interrupted_instruction_head
        return out


@attrs.frozen
class QuotaView:
    """The run's quota: the windows last observed, whether the watched one is unknown
    (and since when), the stop threshold and which window the plan watches."""

    windows: tuple[QuotaWindow, ...]
    unknown: bool
    unknown_since: float | None
    stop_at_left_percent: float | None
    watch_bucket: str | None
    watch_window_minutes: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "windows": [
                {
                    "leftPercent": w.left_percent,
                    "bucket": w.bucket,
                    "windowMinutes": w.window_minutes,
                }
                for w in self.windows
            ],
            "unknown": self.unknown,
            "unknownSince": self.unknown_since,
            "stopAtLeftPercent": self.stop_at_left_percent,
            "watch": {"bucket": self.watch_bucket, "windowMinutes": self.watch_window_minutes},
        }


@attrs.frozen
class AlertView:
    at: float
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "message": self.message}


@attrs.frozen
class RunView:
    """A run's status (dots_status, dots run's live view)."""

    run_id: str
    state: str
    goal: str
    pause_reason: str | None
    pause_detail: str | None
    turns_used: int
    max_turns: int
    workers: tuple[WorkerView, ...]
    quota: QuotaView
    alerts: tuple[AlertView, ...]
    pending_notices: int
    pending_notice_kinds: tuple[str, ...] = ()  # the outbox's notices, oldest first

    @property
    def finished(self) -> bool:
        return self.state in FINISHED

    def worker(self, name: str) -> WorkerView | None:
        return next((w for w in self.workers if w.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "state": self.state,
            "goal": self.goal,
            "pauseReason": self.pause_reason,
            "pauseDetail": self.pause_detail,
            "turnsUsed": self.turns_used,
            "maxTurns": self.max_turns,
            "workers": [w.to_json() for w in self.workers],
            "quota": self.quota.to_json(),
            "alerts": [a.to_json() for a in self.alerts],
            "pendingNotices": self.pending_notices,
            "pendingNoticeKinds": list(self.pending_notice_kinds),
        }


def _last_alert(state: RunState, key: str) -> Any:
    """The newest alert whose message key starts with `key` (None when there is none)."""
    return next((a for a in reversed(state.alerts) if a.message.key.startswith(key)), None)


def run_view(state: RunState, locale: str = "en") -> RunView:
    workers: list[WorkerView] = []
    for role in state.roles:
        spec = state.proposal.role(role.name)
        decision = None
        if role.status == "awaiting-decision" and role.decision_id:
            decision = DecisionView(role.decision_id, head(role.last_reply))
        workers.append(
            WorkerView(
                name=role.name,
                state=role.status,
                turns=role.turns,
                thread_id=role.thread_id or (spec.existing_thread_id if spec else None),
                cwd=spec.cwd if spec else None,
                sandbox=role.sandbox or (spec.sandbox if spec else None),
                model=role.model or (spec.model if spec else None),
                last_instruction_head=head(role.last_instruction),
                last_reply_head=head(role.last_reply),
                last_outcome=role.last_outcome,
                decision=decision,
                conclusion_head=head(role.conclusion),
                interrupted_instruction_head=head(role.interrupted_instruction),
                conclusion_known=role.conclusion is not None,
                interrupted_known=role.interrupted_instruction is not None,
            )
        )
    policy = state.proposal.quota
    paused = _last_alert(state, PAUSE_PREFIX) if state.status == "paused" else None
    unobserved = _last_alert(state, UNOBSERVED) if state.quota_unobserved else None
    return RunView(
        run_id=state.run_id,
        state=state.status,
        goal=state.proposal.goal,
        pause_reason=state.pause_reason,
        pause_detail=paused.message.render(locale) if paused is not None else None,
        turns_used=state.turns_used,
        max_turns=state.turn_limit,
        workers=tuple(workers),
        quota=QuotaView(
            windows=tuple(state.quota_windows),
            unknown=state.quota_unobserved,
            unknown_since=unobserved.at if unobserved is not None else None,
            stop_at_left_percent=policy.stop_at_left_percent,
            watch_bucket=policy.bucket,
            watch_window_minutes=policy.window_minutes,
        ),
        alerts=tuple(
            AlertView(a.at, a.message.render(locale)) for a in state.alerts[-ALERTS_KEPT:]
        ),
        pending_notices=len(state.outbox),
        pending_notice_kinds=tuple(n.kind for n in state.outbox),
    )


@attrs.frozen
class PendingDecision:
    """A decision one of the caller's workers awaits (every tool result carries them)."""

    run_id: str
    worker: str
    decision_id: str
    reply_head: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "worker": self.worker,
            "decisionId": self.decision_id,
            "replyHead": self.reply_head,
        }


@attrs.frozen
class ModelView:
    model: str
    efforts: tuple[str, ...]
    is_default: bool

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "efforts": list(self.efforts), "isDefault": self.is_default}


@attrs.frozen
class ProbeView:
    """dots_probe: the default model and effort, the models, rate-limit windows and
    credits (`source`: "read", "update notifications (...)" or "unknown")."""

    model: str | None
    effort: str | None
    models: tuple[ModelView, ...]
    source: str
    windows: tuple[QuotaWindow, ...]
    credits: Mapping[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "effort": self.effort,
            "models": [m.to_json() for m in self.models],
            "rateLimits": {
                "source": self.source,
                "windows": [attrs.asdict(w) for w in self.windows],
                "credits": dict(self.credits) if self.credits is not None else None,
            },
        }


@attrs.frozen
class ThreadItem:
    thread_id: str
    cwd: str | None
    preview: str | None
    updated_at: int | None
    model: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "threadId": self.thread_id,
            "cwd": self.cwd,
            "preview": self.preview,
            "updatedAt": self.updated_at,
            "model": self.model,
        }


@attrs.frozen
class ThreadsView:
    """dots_threads: a page of threads, grouped by project directory."""

    threads: tuple[ThreadItem, ...]
    next_cursor: str | None

    def projects(self) -> dict[str, list[str]]:
        grouped: dict[str, list[str]] = {}
        for t in self.threads:
            grouped.setdefault(str(t.cwd), []).append(t.thread_id)
        return grouped

    def to_json(self) -> dict[str, Any]:
        return {
            "threads": [t.to_json() for t in self.threads],
            "projects": [{"cwd": k, "threadIds": v} for k, v in self.projects().items()],
            "nextCursor": self.next_cursor,
        }


@attrs.frozen
class ThreadReadView:
    """dots_thread_read: recent history, framed as data and marked untrusted."""

    thread_id: str
    cwd: str | None
    history: str
    turn_ids: tuple[str, ...]
    next_cursor: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "threadId": self.thread_id,
            "cwd": self.cwd,
            "historyIsUntrusted": True,
            "history": self.history,
            "turnIds": list(self.turn_ids),
            "nextCursor": self.next_cursor,
        }
