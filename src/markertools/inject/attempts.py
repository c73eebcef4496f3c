# Owns: the attempts ledger's pure rules (docs/rules.md ATT): the row recorded when a platform
# requeue ends an attempt (ATT-1/2), the task row after that requeue, checking a stored
# row (ATT-3), the resume preamble (ATT-4) and the timeline read-back decision (ATT-5).
# Storage adapters apply `ending_attempt` + `requeued_task` in ONE transaction.
#
# Invariants:
#   Rule 1 (ATT-1): a ledger row's result_text / error_text hold at most their first 2000
#           code points; attempt_no = the task's auto_resume_count before the requeue + 1.
#   Rule 2 (ATT-3): `checked_attempt` turns anything that is not a well-formed row into
#           None; it never raises.
#   Rule 3 (ATT-4, INJ-7): the preamble exists only for `platform_fresh` rows; previous
#           output and error (first 1000 code points each) appear only inside data framing
#           with a sentence that they are records, not instructions.
#   Rule 4: pure: randomness (framing nonces) arrives as a RandomSource argument.
#   Rule 5 (APR-5): the preamble names the approval requests the ended attempt was
#           waiting for (`unanswered_at_requeue`: expired by that requeue), framed as data.
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

import attrs

from markertools._root import InvalidArgument
from markertools.domain.approvals import (
    ANSWERED_BY_REQUEUE,
    ApprovalRequest,
    describe_request,
    flat,
)
from markertools.domain.decision import Allowed, Decision, Denied, PermissionAnswer
from markertools.domain.model import Attempt, Task
from markertools.domain.ports import RandomSource
from markertools.inject.framing import frame_data
from markertools.text.msg import Msg, msg

ATTEMPT_TEXT_CHARS: Final[int] = 2000  # ATT-1: stored output / error
PREAMBLE_TEXT_CHARS: Final[int] = 1000  # ATT-4: shown output / error
REASON_CHARS: Final[int] = 500  # the interruption reason is one line of at most this
ATTEMPT_KINDS: Final[tuple[str, ...]] = ("goal_breakpoint", "platform_fresh")
NO_CHECKPOINT: Final[int] = -1


def cut(text: str | None, limit: int) -> str | None:
    """The first `limit` code points of `text` (DOM-4); None stays None."""
    if text is None:
        return None
    return text if len(text) <= limit else text[:limit]


def one_line(text: str, limit: int) -> str:
    """`text` on one line (every control character becomes a space), cut to `limit`."""
    flat = "".join(
        " " if (ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0 or ch in "\u2028\u2029") else ch
        for ch in text
    )
    flat = " ".join(flat.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def ending_attempt(
    task: Task, kind: str, checkpoint_round: int, now: float, reason: str | None = None
) -> Attempt:
    """ATT-1/2: the ledger row for the attempt a platform requeue ends. Raises ValueError
    for a kind outside ATTEMPT_KINDS or a non-integer checkpoint round (the adapter then
    rolls back and returns the failure). `reason` (FLT-2): the cause the caller knows
    (a shutdown, a lost lease, an outage) - cut to one line of REASON_CHARS - instead of
    the task's own interruption reason."""
    if kind not in ATTEMPT_KINDS:
        raise InvalidArgument(f"attempt kind must be one of {', '.join(ATTEMPT_KINDS)}, not {kind!r}")
    if isinstance(checkpoint_round, bool) or not isinstance(checkpoint_round, int):
        raise InvalidArgument(f"checkpoint_round must be an integer, not {checkpoint_round!r}")
    return Attempt(
        task_id=task.id,
        attempt_no=task.auto_resume_count + 1,
        kind=kind,
        interrupted_reason=(
            task.interrupted_reason
            if reason is None or not reason.strip()
            else one_line(reason, REASON_CHARS)
        ),
        checkpoint_round=checkpoint_round,
        result_text=cut(task.result_text, ATTEMPT_TEXT_CHARS),
        error_text=cut(task.error_text, ATTEMPT_TEXT_CHARS),
        created_at=now,
    )


def requeued_task(task: Task) -> Task:
    """ATT-2: the task row after a platform requeue (texts and reason cleared, count up)."""
    return attrs.evolve(
        task,
        status="queued",
        result_text=None,
        error_text=None,
        interrupted_reason=None,
        auto_resume_count=task.auto_resume_count + 1,
    )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _opt_str(value: object) -> bool:
    return value is None or isinstance(value, str)


def _missing(value: object) -> bool:
    return value is None


def checked_attempt(row: object) -> Attempt | None:
    """ATT-3: `row` when it is a well-formed ledger row, else None. Never raises.

    A field that is merely missing (None: a legacy or hand-written row without a
    checkpoint round, an attempt number or a time) keeps the row: the preamble shows the
    placeholder (`?` / `未知`) for it instead of dropping the notice. A value of the
    wrong type is malformed."""
    try:
        if not isinstance(row, Attempt):
            return None
        created = row.created_at
        well_formed = (
            isinstance(row.task_id, str)
            and (_missing(row.attempt_no) or (_is_int(row.attempt_no) and row.attempt_no >= 1))
            and row.kind in ATTEMPT_KINDS
            and _opt_str(row.interrupted_reason)
            and (_missing(row.checkpoint_round) or _is_int(row.checkpoint_round))
            and _opt_str(row.result_text)
            and _opt_str(row.error_text)
            and (
                _missing(created)
                or (
                    isinstance(created, int | float)
                    and not isinstance(created, bool)
                    and math.isfinite(created)
                )
            )
        )
        return row if well_formed else None
    except Exception:
        return None


def _framed_record(
    text: str | None, label_key: str, random: RandomSource, locale: str
) -> str | None:
    if not text:
        return None
    shown = cut(text, PREAMBLE_TEXT_CHARS) or ""
    if len(text) > len(shown):
        label = msg(label_key + "_cut", shown=len(shown), total=len(text))
    else:
        label = msg(label_key)
    return frame_data(shown, label, random, locale).text


def preamble_applies(attempt: Attempt | None, task: Task) -> bool:
    """ATT-4: `attempt` (the task's latest ledger row) is the platform requeue this claim
    follows - not a row older than the task's last manual retry, which records nothing in
    the ledger (ATT-2) and would otherwise bring back a stale restart preamble."""
    if attempt is None or attempt.task_id != task.id:
        return False
    retried = task.retried_after_attempt
    if retried is None:
        return True
    return _is_int(attempt.attempt_no) and attempt.attempt_no > retried


RECOVERED_REPORT_CHARS: Final[int] = 6000  # FLT-2: a recovered turn's report shown


def recovered_section(recovered: Sequence[str], random: RandomSource, locale: str = "en") -> str:
    """FLT-2: the reports of the previous attempt's turns that the platform finished
    delivering after the interruption, framed as data, with the sentence saying they are
    done (the agent must not do them again)."""
    parts = [msg("attempts.preamble_recovered").render(locale)]
    for text in recovered:
        shown = cut(text, RECOVERED_REPORT_CHARS) or ""
        parts.append(frame_data(shown, msg("attempts.label_recovered"), random, locale).text)
    return "\n".join(parts)


def unanswered_at_requeue(
    requests: Sequence[ApprovalRequest], attempt: Attempt | None
) -> tuple[ApprovalRequest, ...]:
    """APR-5: of a task's requests, those the platform requeue that ended `attempt`
    expired unanswered: expired by "requeue", asked during that attempt (the task's
    auto_resume_count was attempt_no - 1 then), by asked_at then id."""
    if attempt is None or not _is_int(attempt.attempt_no):
        return ()
    found = [
        r
        for r in requests
        if r.task_id == attempt.task_id
        and r.status == "expired"
        and r.answered_by == ANSWERED_BY_REQUEUE
        and r.attempt == attempt.attempt_no - 1
    ]
    return tuple(sorted(found, key=lambda r: (r.asked_at, r.id)))


APPROVALS_SHOWN: Final[int] = 20  # APR-5: requests named in the preamble


def approvals_section(
    requests: Sequence[ApprovalRequest], random: RandomSource, locale: str = "en"
) -> str:
    """APR-5: the requests the previous attempt waited for and never got an answer to,
    framed as data (each line: id, kind, what it asked for)."""
    shown = requests[:APPROVALS_SHOWN]
    lines = [f"{flat(r.id)}  {r.kind}  {describe_request(r)}" for r in shown]
    if len(requests) > len(shown):
        lines.append(f"… (+{len(requests) - len(shown)})")
    framed = frame_data("\n".join(lines), msg("attempts.label_approvals"), random, locale).text
    return msg("attempts.preamble_approvals", n=len(requests)).render(locale) + "\n" + framed


def resume_preamble(
    attempt: Attempt | None,
    random: RandomSource,
    locale: str = "en",
    recovered: Sequence[str] = (),
    approvals: Sequence[ApprovalRequest] = (),
) -> str | None:
    """ATT-4: the resume preamble for the claim after a platform requeue, or None (no row,
    a malformed row, or a row that is not `platform_fresh`). The caller decides which tasks
    and starts get one (INJ-1, INJ-5; goal tasks never do). `recovered` (FLT-2): the
    reports of turns the platform finished delivering after the interruption - shown so
    the agent does not repeat them. `approvals` (APR-5): the requests the attempt was
    waiting for and never got an answer to (`unanswered_at_requeue`)."""
    row = checked_attempt(attempt)
    if row is None or row.kind != "platform_fresh":
        return None
    reason: Msg | str = (
        one_line(row.interrupted_reason, REASON_CHARS)
        if row.interrupted_reason and row.interrupted_reason.strip()
        else msg("attempts.reason_unrecorded")
    )
    unknown = msg("attempts.missing")  # ATT-3: a missing field shows the placeholder
    number: Msg | int = row.attempt_no if _is_int(row.attempt_no) else unknown
    following: Msg | int = row.attempt_no + 1 if _is_int(row.attempt_no) else unknown
    checkpoint: Msg | int = row.checkpoint_round if _is_int(row.checkpoint_round) else unknown
    parts = [
        msg("attempts.preamble_header").render(locale),
        msg("attempts.preamble_restart", n=number, next=following).render(locale),
        msg("attempts.preamble_reason", reason=reason, round=checkpoint).render(locale),
    ]
    output = _framed_record(row.result_text, "attempts.label_output", random, locale)
    error = _framed_record(row.error_text, "attempts.label_error", random, locale)
    if output is not None or error is not None:
        parts.append(msg("attempts.preamble_records").render(locale))
        parts.extend(p for p in (output, error) if p is not None)
    if recovered:
        parts.append(recovered_section(recovered, random, locale))
    if approvals:
        parts.append(approvals_section(approvals, random, locale))
    parts.append(msg("attempts.preamble_inspect").render(locale))
    return "\n".join(parts)


def timeline_decision(task: Task | None, answer: PermissionAnswer | None) -> Decision:
    """ATT-5: the attempts timeline needs `read` on the task's project (fail closed)."""
    if task is None:
        return Denied(msg("attempts.timeline_no_task"))
    if answer is None or answer.failed:
        error = answer.error if answer is not None else None
        return Denied(msg("attempts.timeline_lookup_failed", error=error or "unknown error"))
    if not answer.granted:
        return Denied(msg("attempts.timeline_no_read", project=task.project_id))
    return Allowed()
