# Owns: the app-server answers the supervisor and the worker host read, decoded ONCE
# into typed records: the model list (`model/list`), rate-limit snapshots
# (`account/rateLimits/read` and the sparse `account/rateLimits/updated`), a thread's
# history (`thread/read` with turns) and a page of threads (`thread/list`). Every
# field read here is listed in `schema_use.USED_SCHEMA` and checked against the
# schema the pinned binary generates.
#
# Must never: raise on any value it is given (a wrong-typed field is absent), do I/O,
# or keep a reference to the raw JSON.
#
# Invariants:
#   Rule 1: decoders are total: any JSON value gives a record (empty when unusable).
#   Rule 2: a rate-limit update merges into the last snapshot field by field (the
#           notification is sparse: an absent or null field keeps the old value).
#   Rule 3: every string kept is valid Unicode (`clean_text`), so printing never fails.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from markertools.plans import QuotaWindow
from markertools_adapters.codex._records import clean_text


def _str(value: object) -> str | None:
    return clean_text(value) if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


# ---- model/list ----------------------------------------------------------------------


@attrs.frozen
class ModelInfo:
    """One model the backend offers, with the reasoning efforts it supports."""

    model: str
    id: str | None = None
    is_default: bool = False
    efforts: tuple[str, ...] = ()
    default_effort: str | None = None

    def named(self, name: str) -> bool:
        return name in (self.model, self.id)


@attrs.frozen
class ModelList:
    """The answer of `model/list`: models in the backend's order."""

    models: tuple[ModelInfo, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(m.model for m in self.models)

    def find(self, name: str) -> ModelInfo | None:
        return next((m for m in self.models if m.named(name)), None)

    def default(self) -> ModelInfo | None:
        """The model marked default, else the first one, else None."""
        return next(
            (m for m in self.models if m.is_default), self.models[0] if self.models else None
        )


def decode_model_list(result: object) -> ModelList:
    models: list[ModelInfo] = []
    for item in _list(_dict(result).get("data")):
        if not isinstance(item, dict):
            continue
        name = _str(item.get("model")) or _str(item.get("id"))
        if name is None:
            continue
        efforts = tuple(
            e
            for e in (
                _str(_dict(x).get("reasoningEffort"))
                for x in _list(item.get("supportedReasoningEfforts"))
            )
            if e is not None
        )
        models.append(
            ModelInfo(
                model=name,
                id=_str(item.get("id")),
                is_default=item.get("isDefault") is True,
                efforts=efforts,
                default_effort=_str(item.get("defaultReasoningEffort")),
            )
        )
    return ModelList(tuple(models))


# ---- rate limits ---------------------------------------------------------------------


@attrs.frozen
class RateWindow:
    """One rate-limit window: percent used, its length and when it resets."""

    used_percent: float
    window_minutes: int | None = None
    resets_at: int | None = None

    @property
    def left_percent(self) -> float:
        return max(0.0, 100.0 - self.used_percent)


@attrs.frozen
class RateLimits:
    """A rate-limit snapshot: the bucket, its primary and secondary windows and the
    credits object as the backend sent it (shown, never interpreted)."""

    limit_id: str | None = None
    primary: RateWindow | None = None
    secondary: RateWindow | None = None
    credits: Mapping[str, Any] | None = None

    def windows(self) -> tuple[QuotaWindow, ...]:
        """The windows as PLN-8 sees them (remaining percent, bucket, length)."""
        return tuple(
            QuotaWindow(
                left_percent=w.left_percent, bucket=self.limit_id, window_minutes=w.window_minutes
            )
            for w in (self.primary, self.secondary)
            if w is not None
        )

    def merged(self, update: RateLimits) -> RateLimits:
        """Rule 2: the fields the update carries replace these; absent ones stay."""
        return RateLimits(
            limit_id=update.limit_id if update.limit_id is not None else self.limit_id,
            primary=update.primary if update.primary is not None else self.primary,
            secondary=update.secondary if update.secondary is not None else self.secondary,
            credits=update.credits if update.credits is not None else self.credits,
        )


def _window(value: object) -> RateWindow | None:
    raw = _dict(value)
    used = _num(raw.get("usedPercent"))
    if used is None:
        return None
    return RateWindow(used, _int(raw.get("windowDurationMins")), _int(raw.get("resetsAt")))


def decode_rate_limits(snapshot: object) -> RateLimits | None:
    """A `rateLimits` object (of the read answer or the update notification); None
    when `snapshot` is not an object."""
    if not isinstance(snapshot, dict):
        return None
    credits = snapshot.get("credits")
    return RateLimits(
        limit_id=_str(snapshot.get("limitId")),
        primary=_window(snapshot.get("primary")),
        secondary=_window(snapshot.get("secondary")),
        credits=dict(credits) if isinstance(credits, dict) else None,
    )


def rate_limits_of_read(result: object) -> RateLimits | None:
    """The snapshot of an `account/rateLimits/read` answer."""
    return decode_rate_limits(_dict(result).get("rateLimits"))


# ---- threads ---------------------------------------------------------------------------


@attrs.frozen
class HistoryTurn:
    """One turn of a thread's history: id, status, what the user sent, what the agent
    answered (its messages joined by newlines)."""

    id: str
    status: str | None = None
    user: str = ""
    agent: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "user": self.user, "agent": self.agent}


@attrs.frozen
class ThreadHistory:
    """The answer of `thread/read` (with turns): the thread's directory and turns,
    oldest first."""

    thread_id: str | None = None
    cwd: str | None = None
    turns: tuple[HistoryTurn, ...] = ()

    @property
    def turn_ids(self) -> tuple[str, ...]:
        return tuple(t.id for t in self.turns)

    def last(self, n: int) -> tuple[HistoryTurn, ...]:
        return self.turns[-n:] if n > 0 else ()


def _item_text(item: Mapping[str, Any]) -> str:
    text = _str(item.get("text"))
    if text is not None:
        return text
    return "".join(
        _str(c.get("text")) or "" for c in _list(item.get("content")) if isinstance(c, dict)
    )


def decode_thread(result: object) -> ThreadHistory:
    thread = _dict(_dict(result).get("thread"))
    turns: list[HistoryTurn] = []
    for turn in _list(thread.get("turns")):
        if not isinstance(turn, dict):
            continue
        turn_id = _str(turn.get("id"))
        if turn_id is None:
            continue
        user: list[str] = []
        agent: list[str] = []
        for item in _list(turn.get("items")):
            if not isinstance(item, dict):
                continue
            if item.get("type") == "userMessage":
                user.append(_item_text(item))
            elif item.get("type") == "agentMessage":
                agent.append(_item_text(item))
        turns.append(
            HistoryTurn(turn_id, _str(turn.get("status")), "\n".join(user), "\n".join(agent))
        )
    return ThreadHistory(_str(thread.get("id")), _str(thread.get("cwd")), tuple(turns))


@attrs.frozen
class ThreadSummary:
    """One thread of a `thread/list` page."""

    id: str
    cwd: str | None = None
    preview: str | None = None
    updated_at: int | None = None
    model: str | None = None


@attrs.frozen
class ThreadPage:
    """A page of `thread/list`, with the cursor of the next page (None: the last)."""

    threads: tuple[ThreadSummary, ...] = ()
    next_cursor: str | None = None


def decode_thread_list(result: object) -> ThreadPage:
    raw = _dict(result)
    threads = []
    for item in _list(raw.get("data")):
        if not isinstance(item, dict) or _str(item.get("id")) is None:
            continue
        threads.append(
            ThreadSummary(
                id=_str(item.get("id")) or "",
                cwd=_str(item.get("cwd")),
                preview=_str(item.get("preview")),
                updated_at=_int(item.get("updatedAt")),
                model=_str(item.get("model")),
            )
        )
    return ThreadPage(tuple(threads), _str(raw.get("nextCursor")))
