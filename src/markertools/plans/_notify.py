# Owns: the notification outbox of a run (PLN-9): enqueueing notices for the main
# conversation (one pending decision notice per role: a newer one replaces it),
# recording delivery results (retry after 5 s then 10 s; the third consecutive
# failure suspends delivery and asks the caller to pause the run; an offline host is
# not a failure - the notice waits for the host), and which notices are due.
#
# Invariants:
#   Rule 1: pure functions of (state, ..., now); notice ids are `<run id>:n<seq>` from
#           the run's own counter (no randomness).
#   Rule 2: a decision/reminder notice is delivered only while it is current: its
#           role awaits exactly that decision and the run is running; otherwise it
#           is dropped, never delivered.
#   Rule 3: an offline answer never changes the failure count.
from __future__ import annotations

from typing import Final

import attrs

from markertools.plans._state import DECISION_NOTICES, Notice, NoticeKind, RunState
from markertools.text.msg import Msg

RETRY_DELAYS: Final[tuple[float, ...]] = (5.0, 10.0)  # after the 1st and 2nd failure
MAX_CONSECUTIVE_FAILURES: Final[int] = 3


def enqueue(
    state: RunState,
    kind: NoticeKind,
    now: float,
    *,
    role: str | None = None,
    decision_id: str | None = None,
    detail: Msg | None = None,
) -> RunState:
    """Add a notice due now; a decision/reminder notice replaces the role's pending one."""
    outbox = (
        _without_decision_notices(state.outbox, role) if kind in DECISION_NOTICES else state.outbox
    )
    notice = Notice(
        event_id=f"{state.run_id}:n{state.next_notice}",
        kind=kind,
        created_at=now,
        role=role,
        decision_id=decision_id,
        detail=detail,
        next_attempt_at=now,
        waiting_for_host=any(n.waiting_for_host for n in state.outbox),
    )
    return attrs.evolve(state, outbox=(*outbox, notice), next_notice=state.next_notice + 1)


def is_current(state: RunState, notice: Notice) -> bool:
    """Rule 2: a decision notice still matches its role's current decision."""
    if notice.kind not in DECISION_NOTICES:
        return True
    role = state.role(notice.role or "")
    return (
        state.status == "running"
        and role is not None
        and role.status == "awaiting-decision"
        and role.decision_id == notice.decision_id
    )


def drop_stale(state: RunState) -> RunState:
    """Remove decision notices that are no longer current (stale or paused run)."""
    kept = tuple(n for n in state.outbox if is_current(state, n))
    return state if len(kept) == len(state.outbox) else attrs.evolve(state, outbox=kept)


def _without_decision_notices(outbox: tuple[Notice, ...], role: str | None) -> tuple[Notice, ...]:
    return tuple(n for n in outbox if not (n.kind in DECISION_NOTICES and n.role == role))


def drop_role_notices(state: RunState, role: str) -> RunState:
    return attrs.evolve(state, outbox=_without_decision_notices(state.outbox, role))


def due_notices(state: RunState, now: float) -> tuple[Notice, ...]:
    """Notices to try delivering now, oldest first (never a stale decision notice)."""
    return tuple(
        n
        for n in state.outbox
        if not n.waiting_for_host and n.next_attempt_at <= now and is_current(state, n)
    )


def _replace(state: RunState, old: Notice, new: Notice | None) -> RunState:
    items: list[Notice] = []
    for n in state.outbox:
        if n.event_id != old.event_id:
            items.append(n)
        elif new is not None:
            items.append(new)
    return attrs.evolve(state, outbox=tuple(items))


def delivered(state: RunState, notice: Notice) -> RunState:
    return attrs.evolve(_replace(state, notice, None), notify_failures=0)


def offline(state: RunState, notice: Notice) -> RunState:
    """Rule 3: not a failure; the notice (and those behind it) wait for the host."""
    return _replace(state, notice, attrs.evolve(notice, waiting_for_host=True))


def failed(state: RunState, notice: Notice, now: float) -> tuple[RunState, bool]:
    """Record a failed attempt. Returns (state, exhausted): exhausted is True on the
    third consecutive failure; the caller then pauses the run and `suspend`s delivery."""
    count = state.notify_failures + 1
    bumped = attrs.evolve(notice, failures=notice.failures + 1)
    if count < MAX_CONSECUTIVE_FAILURES:
        bumped = attrs.evolve(bumped, next_attempt_at=now + RETRY_DELAYS[count - 1])
    state = attrs.evolve(_replace(state, notice, bumped), notify_failures=count)
    return state, count >= MAX_CONSECUTIVE_FAILURES


def suspend(state: RunState) -> RunState:
    """Every notice waits until the host is back (`wake`): after repeated failures."""
    outbox = tuple(attrs.evolve(n, waiting_for_host=True) for n in state.outbox)
    return attrs.evolve(state, outbox=outbox)


def wake(state: RunState, now: float) -> RunState:
    """The host is back (or the run resumed): waiting notices are due now and the
    consecutive-failure count starts over."""
    outbox = tuple(
        attrs.evolve(n, waiting_for_host=False, next_attempt_at=now) if n.waiting_for_host else n
        for n in state.outbox
    )
    return attrs.evolve(state, outbox=outbox, notify_failures=0)
