# Owns: `Broker`, what the worker host calls when a task's agent asks for approval
# (APR-1..3, docs/approvals.md): it stores the request (engine-neutral: `ApprovalAsk`),
# lets the project's rules answer first (APR-2), otherwise waits - without a thread of
# its own - for the first answer a person or an ancestor agent gives (APR-3), and expires
# the request at its timeout with the reason the agent is told (APR-1). It reports
# `approval_requested` / `approval_answered` events through a callback. Also the texts
# of a decision (`decision_reason`).
#
# Must never: approve anything a rule or an answer did not approve; block the event loop
# on a wait (waits are asyncio sleeps, woken early by PostgreSQL NOTIFY through the
# store's one listener thread); wait past the request's expiry by more than one store
# round trip; leave a request pending when its wait is cancelled (it is expired as
# withdrawn); let a failing event callback stop a decision.
#
# Invariants:
#   Rule 1: a decision is the request's stored answer: approved only when its row says
#           "approved" (by a rule, a person or an ancestor agent); anything else -
#           denied, expired, not recorded - declines.
#   Rule 2: rules are matched against the request with its paths and the task's
#           directory resolved (symbolic links followed), so a link inside the directory
#           that points out of it never matches an allow glob; the stored request keeps
#           the paths the agent gave.
#   Rule 3: every change of a request is the store's compare-and-set; when the broker's
#           expiry loses to an answer, the answer stands (read back).
#   Rule 4: the wait is bounded by the request's `expires_at` (the clock port) and polls
#           the store every `poll_interval` seconds (shorter than the timeout), earlier
#           when the store's change listener names the task.
#   Rule 5: a failing store never makes `decide` raise: a request that cannot be stored
#           is declined with why; a read that fails during the wait is tried again at the
#           next round; an expiry that cannot be written still declines at the expiry.
from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import threading
from collections.abc import Callable
from typing import Any, Final

import attrs

from markertools import (
    ANSWERED_BY_EXPIRY,
    ANSWERED_BY_WITHDRAWN,
    DEFAULT_APPROVAL_TIMEOUT,
    ApprovalRequest,
    ApprovalRule,
    Clock,
    InvalidArgument,
    Msg,
    RandomSource,
    Task,
    first_match,
    msg,
    rule_answer,
    rule_text,
    summarize_error,
)
from markertools_adapters.clock import SystemClock, SystemRandom

log = logging.getLogger("markertools.approvals")

APPROVAL_ID_BYTES: Final[int] = 8
POLL_SECONDS: Final[float] = 0.25  # Rule 4: without a change listener
LISTENING_POLL_SECONDS: Final[float] = 5.0  # with one (a safety net for a lost notice)
TEXT_CHARS: Final[int] = 8000  # the agent's reason and the diff summary are cut to this
EVENTS: Final[tuple[str, ...]] = ("approval_requested", "approval_answered")


@attrs.frozen
class ApprovalAsk:
    """APR-1: what a task's agent asks for, whatever the engine: `kind` "command"
    (`command` the argv - a shell string goes as ("bash", "-lc", STRING) - and `cwd`),
    "file_change" (`paths`, `diff_summary`) or "permission" (`paths` it would cover);
    `reason` is the agent's own."""

    task_id: str
    kind: str
    command: tuple[str, ...] | None = None
    cwd: str | None = None
    paths: tuple[str, ...] = ()
    diff_summary: str | None = None
    reason: str | None = None


@attrs.frozen
class ApprovalDecision:
    """What the broker decided (Rule 1): `approved`, the stored request as answered (None
    when it could not be recorded), `how` ("rule", "answer", "expired", "withdrawn",
    "not_recorded") and `reason`, what the agent is told (`text(locale)`)."""

    approved: bool
    request: ApprovalRequest | None
    how: str
    reason: Msg

    def text(self, locale: str = "en") -> str:
        return self.reason.render(locale)


@attrs.frozen
class ApprovalEvent:
    """An event the broker reports: `name` is "approval_requested" or
    "approval_answered"; `request` the request as stored then."""

    name: str
    request: ApprovalRequest

    def json(self) -> dict[str, object]:
        """The event as one JSON-able object (`--json-log`)."""
        r = self.request
        return {
            "event": self.name,
            "id": r.id,
            "task_id": r.task_id,
            "project_id": r.project_id,
            "kind": r.kind,
            "command": None if r.command is None else list(r.command),
            "paths": list(r.paths),
            "status": r.status,
            "answered_by": r.answered_by,
            "answer_reason": r.answer_reason,
            "asked_at": r.asked_at,
            "expires_at": r.expires_at,
        }


def decision_reason(request: ApprovalRequest, rule: ApprovalRule | None = None) -> Msg:
    """What the agent is told about its answered request (APR-1, APR-3)."""
    decision = msg(
        "approvals.decision_approve" if request.status == "approved" else "approvals.decision_deny"
    )
    if request.status == "expired":
        if request.answered_by == ANSWERED_BY_EXPIRY:
            span = request.expires_at - request.asked_at
            seconds = round(span) if span >= 1 else round(span, 3)
            return msg("approvals.told_expired", id=request.id, seconds=seconds)
        return msg("approvals.told_ended", id=request.id, reason=request.answer_reason or "-")
    if rule is not None:
        return msg("approvals.told_rule", decision=decision, rule=rule_text(rule))
    by = request.answered_by or "-"
    if request.answer_reason and request.answer_reason.strip():
        return msg("approvals.told_answer", decision=decision, by=by, reason=request.answer_reason)
    return msg("approvals.told_answer_plain", decision=decision, by=by)


def _cut(text: str | None) -> str | None:
    return None if text is None else text[:TEXT_CHARS]


def _resolved(path: str, base: str) -> str:
    """Rule 2: `path` (relative to `base` when not absolute) with symbolic links followed."""
    return os.path.realpath(os.path.join(base, path))


class _Wakeups:
    """Per-task asyncio events set from the store's change-listener thread (Rule 4)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}

    def add(self, task_id: str, event: asyncio.Event) -> None:
        with self._lock:
            self._events.setdefault(task_id, set()).add((asyncio.get_running_loop(), event))

    def remove(self, task_id: str, event: asyncio.Event) -> None:
        with self._lock:
            waiting = self._events.get(task_id, set())
            waiting.discard((asyncio.get_running_loop(), event))
            if not waiting:
                self._events.pop(task_id, None)

    def changed(self, task_id: str | None) -> None:
        """Called in the listener thread: wake the waits of `task_id` (None: all)."""
        with self._lock:
            if task_id is None:
                targets = [e for events in self._events.values() for e in events]
            else:
                targets = list(self._events.get(task_id, ()))
        for loop, event in targets:
            with contextlib.suppress(RuntimeError):  # a closed loop
                loop.call_soon_threadsafe(event.set)


class Broker:
    """The approval broker of a worker host (APR-1..3).

    `store` is a connected store with the ApprovalStore port (every bundled store);
    `on_event(ApprovalEvent)` hears every request and answer; `clock` / `random` are the
    ports for times and ids (the real ones by default); `poll_interval` is how often a
    wait re-reads the store (default 0.25 s, or 5 s when the store can listen for changes
    - PostgreSQL - which wake a wait within milliseconds). Call `close()` when done."""

    def __init__(
        self,
        store: Any,
        *,
        on_event: Callable[[ApprovalEvent], None] | None = None,
        clock: Clock | None = None,
        random: RandomSource | None = None,
        poll_interval: float | None = None,
        listen: bool = True,
    ) -> None:
        self._store = store
        self._on_event = on_event
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._random: RandomSource = random if random is not None else SystemRandom()
        self._wakeups = _Wakeups()
        self._unsubscribe: Callable[[], None] | None = None
        self.notified_wakeups = 0  # waits a change notice ended early (for tests, benches)
        waiter_of = getattr(store, "change_waiter", None)
        if listen and callable(waiter_of):
            try:
                self._unsubscribe = waiter_of().subscribe(self._changed)
            except Exception as exc:  # no listener: plain polling (Rule 4)
                log.warning(
                    "approvals: no change listener, polling instead: %s", summarize_error(exc)
                )
        if poll_interval is None:
            poll_interval = LISTENING_POLL_SECONDS if self.listening else POLL_SECONDS
        if not (isinstance(poll_interval, int | float) and 0 < poll_interval < math.inf):
            raise InvalidArgument(
                f"poll_interval must be a positive number of seconds, not {poll_interval!r}"
            )
        self.poll_interval = float(poll_interval)

    @property
    def listening(self) -> bool:
        """Whether waits wake on the store's change notices (PostgreSQL)."""
        return self._unsubscribe is not None

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _changed(self, task_id: str | None) -> None:
        self._wakeups.changed(task_id)

    def _emit(self, name: str, request: ApprovalRequest) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(ApprovalEvent(name, request))
        except Exception as exc:  # never stops a decision
            log.warning("approvals: the %s callback failed: %s", name, summarize_error(exc))

    # ---- the decision ------------------------------------------------------------------

    async def decide(
        self, ask: ApprovalAsk, *, timeout: float = DEFAULT_APPROVAL_TIMEOUT
    ) -> ApprovalDecision:
        """Store `ask` as a request, answer it by the project's rules (APR-2) or wait for
        the first answer (APR-3) until `timeout` seconds pass, then expire it (APR-1).
        Returns the decision (Rule 1); never raises for the request or the store - a
        request that cannot be recorded is declined with why. Cancelling the call expires
        the request as withdrawn and re-raises CancelledError. A `timeout` that is not a
        positive finite number is a ValueError."""
        if not (isinstance(timeout, int | float) and 0 < timeout < math.inf):
            raise InvalidArgument(f"timeout must be a positive number of seconds, not {timeout!r}")
        try:
            task = await asyncio.to_thread(self._store.get_task, ask.task_id)
            rules: tuple[ApprovalRule, ...] = ()
            if task is not None:
                rules = await asyncio.to_thread(self._store.approval_rules, task.project_id)
            request, rule = self._request(ask, task, rules, float(timeout))
            stored = await asyncio.to_thread(self._store.insert_approval, request)
        except Exception as exc:
            error = summarize_error(exc)
            log.warning("approvals: a request of task %s was not recorded: %s", ask.task_id, error)
            return ApprovalDecision(
                False, None, "not_recorded", msg("approvals.told_refused", error=error)
            )
        self._emit("approval_requested", stored)
        if not stored.pending:  # a rule answered (APR-2)
            self._emit("approval_answered", stored)
            return ApprovalDecision(stored.approved, stored, "rule", decision_reason(stored, rule))
        return await self._wait(stored)

    def _request(
        self,
        ask: ApprovalAsk,
        task: Task | None,
        rules: tuple[ApprovalRule, ...],
        timeout: float,
    ) -> tuple[ApprovalRequest, ApprovalRule | None]:
        """The request to store for `ask`, answered already when a rule matches."""
        now = self._clock.now()
        request = ApprovalRequest(
            id="apr-" + self._random.token_hex(APPROVAL_ID_BYTES),
            task_id=ask.task_id,
            project_id=task.project_id if task is not None else "",
            kind=ask.kind,
            command=None if ask.command is None else tuple(ask.command),
            cwd=ask.cwd,
            paths=tuple(ask.paths),
            diff_summary=_cut(ask.diff_summary),
            reason=_cut(ask.reason),
            asked_at=now,
            expires_at=now + timeout,
        )
        if task is None:
            return request, None
        base = task.worktree or ask.cwd
        root = os.path.realpath(base) if base else None
        probe = request
        if root is not None and request.paths:  # Rule 2
            probe = attrs.evolve(
                request, paths=tuple(_resolved(p, base or root) for p in request.paths)
            )
        rule = first_match(rules, probe, root)
        if rule is None:
            return request, None
        status = "approved" if rule.action == "allow" else "denied"
        answered = attrs.evolve(
            request, status=status, answered_by=rule_answer(rule.id), answered_at=now
        )
        return answered, rule

    async def _wait(self, request: ApprovalRequest) -> ApprovalDecision:
        """Rule 4: wait for the first answer, the task leaving `running` or the expiry.
        A store read that fails is logged once and tried again at the next round (Rule 5):
        a store outage delays the answer, never the expiry."""
        event = asyncio.Event()
        self._wakeups.add(request.task_id, event)
        failing = False
        try:
            while True:
                try:
                    current = await asyncio.to_thread(self._store.get_approval, request.id)
                    if current is not None and not current.pending:
                        return self._answered(current)
                    task = await asyncio.to_thread(self._store.get_task, request.task_id)
                    if task is None or task.status != "running":
                        status = "gone" if task is None else task.status
                        reason = f"its task is {status}, no longer running"
                        return await self._expire(
                            request, ANSWERED_BY_WITHDRAWN, reason, "withdrawn"
                        )
                    failing = False
                except Exception as exc:  # Rule 5
                    if not failing:
                        log.warning(
                            "approvals: reading request %s failed, trying again: %s",
                            request.id,
                            summarize_error(exc),
                        )
                    failing = True
                remaining = request.expires_at - self._clock.now()
                if remaining <= 0:
                    seconds = round(request.expires_at - request.asked_at)
                    reason = f"nobody answered within {seconds} s"
                    return await self._expire(request, ANSWERED_BY_EXPIRY, reason, "expired")
                event.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), min(self.poll_interval, remaining))
                    self.notified_wakeups += 1
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):  # a short store write; then re-raise
                self._store.expire_approval(
                    request.id,
                    answered_by=ANSWERED_BY_WITHDRAWN,
                    reason="the turn that asked ended before an answer",
                    now=self._clock.now(),
                )
            raise
        finally:
            self._wakeups.remove(request.task_id, event)

    async def _expire(
        self, request: ApprovalRequest, by: str, reason: str, how: str
    ) -> ApprovalDecision:
        """Expire `request` (Rule 3: an answer that came first stands). When the store
        cannot be written, the request is declined all the same (Rule 5: it stays pending
        in the store until its task's requeue expires it)."""
        now = self._clock.now()
        expired: ApprovalRequest | None = None
        try:
            expired = await asyncio.to_thread(
                self._store.expire_approval, request.id, answered_by=by, reason=reason, now=now
            )
            if expired is None:
                current = await asyncio.to_thread(self._store.get_approval, request.id)
                if current is not None and not current.pending:
                    return self._answered(current)
        except Exception as exc:  # Rule 5
            log.warning(
                "approvals: expiring request %s failed: %s", request.id, summarize_error(exc)
            )
        if expired is None:
            expired = attrs.evolve(
                request, status="expired", answered_by=by, answer_reason=reason, answered_at=now
            )
        self._emit("approval_answered", expired)
        return ApprovalDecision(False, expired, how, decision_reason(expired))

    def _answered(self, request: ApprovalRequest) -> ApprovalDecision:
        self._emit("approval_answered", request)
        how = "answer" if request.status in ("approved", "denied") else "expired"
        if request.status == "expired" and request.answered_by == ANSWERED_BY_WITHDRAWN:
            how = "withdrawn"
        return ApprovalDecision(request.approved, request, how, decision_reason(request))
