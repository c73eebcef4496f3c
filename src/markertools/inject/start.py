# Owns: deciding what kind of start a claim is (docs/rules.md INJ-1) from the data a store
# reads in the claim's transaction - the claimed task, its latest ledger row, the
# follow-ups queued for it - as `start_kind`, and the `Claim` a store returns (`claim_of`).
# Pure: the stores (markertools_adapters) gather the inputs and call it.
#
# Must never: guess from anything but its arguments; return MANUAL (a person resuming a
# session by hand is the worker's knowledge, not the data's).
#
# Invariants (the rule, first match wins):
#   Rule 1: queued follow-ups -> CONTINUATION (they are the agent's next input: the
#           reports of its last turn, a "/goal", a heartbeat).
#   Rule 2: a latest attempt that this claim follows (ATT-4: recorded after the task's
#           last manual retry) -> CHECKPOINT for a goal task or a `goal_breakpoint` row,
#           else RESUME (a platform restart: injection and the resume preamble).
#   Rule 3: `retried_after_attempt` set (a task-retry happened) -> RETRY.
#   Rule 4: otherwise FRESH.
from __future__ import annotations

from collections.abc import Sequence

from markertools.domain.model import Attempt, StartKind, Task, is_goal_task
from markertools.domain.ports import Claim
from markertools.inject.attempts import checked_attempt, preamble_applies


def start_kind(
    task: Task, latest_attempt: Attempt | None, queued_followups: Sequence[str]
) -> StartKind:
    """INJ-1: the kind of start of a claim of `task` (Rules 1-4), given its latest ledger
    row (`AttemptLedger.latest_attempt`) and the follow-ups queued for it at the claim."""
    if queued_followups:
        return StartKind.CONTINUATION
    attempt = checked_attempt(latest_attempt)
    if attempt is not None and preamble_applies(attempt, task):
        if attempt.kind == "goal_breakpoint" or is_goal_task(task):
            return StartKind.CHECKPOINT
        return StartKind.RESUME
    if task.retried_after_attempt is not None:
        return StartKind.RETRY
    return StartKind.FRESH


def claim_of(task: Task, latest_attempt: Attempt | None, followups: Sequence[str]) -> Claim:
    """The Claim a store returns for `task`, claimed with `followups` taken (INJ-1)."""
    texts = tuple(followups)
    return Claim(task, start_kind(task, latest_attempt, texts), texts)


__all__ = ["claim_of", "start_kind"]
