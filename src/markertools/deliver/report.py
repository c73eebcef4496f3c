# Owns: what delivery returns (TRN-6): one `ReportEntry` per block and the
# `DeliveryReport` (entries, the rendered report message, follow-ups in order); and
# `issue_entries`, the entries of a plan's skipped / ignored / near-miss blocks, bounded
# by TRN-12. Pure values; rendering the message text is `render`'s job.
#
# Invariants:
#   Rule 1 (TRN-12): `issue_entries` lists at most MAX_LISTED_ISSUES issues one by one,
#           in order of appearance; every further issue is counted in exactly one
#           summary entry per (kind, outcome), in order of the group's first block. A
#           near miss's kind is the info string as written (unbounded), so near misses
#           are grouped by the name they resemble. The number of entries is therefore
#           bounded by the kind table, never by the size of the turn.
#   Rule 2: the counts of all entries add up to the number of issues.
from __future__ import annotations

import warnings
from collections.abc import Iterable
from enum import StrEnum
from typing import Final, Literal

import attrs

from markertools.parse.plan import BlockIssue
from markertools.text.msg import Msg, msg

EntryOutcome = Literal["done", "rejected", "skipped", "ignored"]

MAX_LISTED_ISSUES: Final[int] = 50  # TRN-12


class BlockOutcome(StrEnum):
    """A report entry's outcome (TRN-6), as an enum; equal to its string."""

    DONE = "done"
    REJECTED = "rejected"
    SKIPPED = "skipped"
    IGNORED = "ignored"


class NotDeliveredCode(StrEnum):
    """TRN-10: why a turn was not delivered (the `not_delivered.reason` codes)."""

    OUTCOME_NOT_COMPLETED = "outcome-not-completed"
    GOAL_TASK = "goal-task"
    COORDINATOR_TASK = "coordinator-task"
    SENDER_CANCELLED = "sender-cancelled"
    UNKNOWN_SENDER = "unknown-sender"
    SENDER_NOT_RUNNING = "sender-not-running"  # FLT-7: queued, completed, failed, ...


@attrs.frozen
class NotDelivered:
    """TRN-10: the machine-readable code and the reason in words."""

    code: str  # a NotDeliveredCode value
    reason: Msg


@attrs.frozen
class ReportEntry:
    """One block's line of the report: canonical kind, line, outcome (done, rejected,
    skipped, ignored), the target it acted on (if any) and the reason."""

    kind: str  # canonical kind (or the written info string of a near-miss fence)
    line: int
    outcome: EntryOutcome
    target: str | None
    reason: Msg  # the reason (rejected/skipped/ignored) or the result (done)
    # TRN-12: a summary entry stands for `count` blocks, from `line` to `last_line`
    count: int = 1
    last_line: int | None = None


@attrs.frozen
class DeliveryReport:
    """What one delivery did (TRN-6). `delivered` False: nothing ran (TRN-3/4/5, an
    unknown sender) and `not_delivered` says why (TRN-10). `report_queued` False: the
    report (and any "/goal" follow-up) could not be queued, `report_error` says why;
    with a turn id, delivering the turn again queues it exactly once (TRN-9).
    `replayed`: this is the stored report of an earlier, finished delivery of the same
    turn id; nothing was executed now.

    The follow-up contract (TRN-6): the sender's queue is the only channel to the agent.
    `queued_followups` records what this delivery put on it - for logs and tests; a
    worker sends what the queue hands out (`take_followups`, or a `Claim`'s followups),
    never these texts directly, so nothing reaches the agent twice. A turn without any
    block queues nothing: `queued_followups == ()` while `message` still holds the
    rendered (empty) report for logs."""

    delivered: bool
    entries: tuple[ReportEntry, ...] = ()
    message: str | None = None  # the rendered report (queued only when there are entries)
    # what was put on the sender's queue, in order: the report, then "/goal ..." (GOA-2)
    queued_followups: tuple[str, ...] = ()
    locale: str = "en"
    turn_id: str | None = None
    replayed: bool = False
    not_delivered: NotDelivered | None = None
    report_queued: bool = True
    report_error: str | None = None

    @property
    def followups(self) -> tuple[str, ...]:
        """Deprecated alias of `queued_followups` (what was queued, not what to send: a
        worker sends what `take_followups` returns)."""
        warnings.warn(
            "DeliveryReport.followups is deprecated: it is `queued_followups`, what the"
            " delivery queued; send what take_followups() (or a Claim) hands out instead",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.queued_followups


def issue_entry(issue: BlockIssue) -> ReportEntry:
    """A plan issue as a report entry: near-miss ("unknown") fences count as skipped."""
    outcome: EntryOutcome = "ignored" if issue.outcome == "ignored" else "skipped"
    return ReportEntry(issue.kind, issue.line, outcome, None, issue.reason)


def _suggestion(issue: BlockIssue) -> str:
    try:
        value = issue.reason.arg("suggestion")
    except KeyError:
        return ""
    return value if isinstance(value, str) else ""


def issue_entries(
    issues: Iterable[BlockIssue], limit: int = MAX_LISTED_ISSUES
) -> list[ReportEntry]:
    """Rule 1: the first `limit` issues as entries, then one summary per kind and
    outcome (count, first line, last line) for the rest."""
    out: list[ReportEntry] = []
    # (near miss?, kind, outcome) -> [count, first line, last line]
    groups: dict[tuple[bool, str, EntryOutcome], list[int]] = {}
    for issue in issues:
        if len(out) < limit:
            out.append(issue_entry(issue))
            continue
        near = issue.outcome == "unknown"
        kind = _suggestion(issue) if near else issue.kind
        outcome: EntryOutcome = "ignored" if issue.outcome == "ignored" else "skipped"
        group = groups.get((near, kind, outcome))
        if group is None:
            groups[(near, kind, outcome)] = [1, issue.line, issue.line]
        else:
            group[0] += 1
            group[2] = issue.line
    for (near, kind, outcome), (count, first, last) in groups.items():
        key = "report.summary_near_miss" if near else "report.summary_issues"
        reason = msg(
            key,
            count=count,
            kind=kind,
            outcome=msg(f"report.outcome_{outcome}"),
            first=first,
            last=last,
            max=limit,
        )
        out.append(ReportEntry(kind, first, outcome, None, reason, count=count, last_line=last))
    return out
