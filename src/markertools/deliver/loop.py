# Owns: `deliver_turn` — running one completed turn's plan against the ports: the
# discards (TRN-3/4/5), one handler call per command through the registry, audit records
# and the queued report. Together with the handlers (`deliver/handlers/`) this is the
# only code that calls ports ("gather / decide / apply": handlers gather facts through
# the context, call pure gates, apply outcomes through ports).
#
# Invariants:
#   Rule 1: one ReportEntry per block (TRN-6): executed blocks in execution order, then
#           skipped / ignored / near-miss blocks in order of appearance.
#   Rule 2: nothing a block contains and no port failure escapes: a handler that raises
#           rejects only its block with the error summarised (TRN-8).
#   Rule 3: non-completed turns, goal / coordinator senders and cancelled senders execute
#           nothing and queue nothing; an audit record notes the discard (TRN-3/4/5). The
#           text of a goal / coordinator sender's turn is not even parsed (TRN-4).
#   Rule 4: every executed or rejected block writes one audit record (TRN-7).
from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from markertools.deliver.codec import (
    entry_from_json,
    entry_to_json,
    replayed,
    report_from_json,
    report_to_json,
)
from markertools.deliver.context import TurnContext, summarize_error
from markertools.deliver.handlers.registry import HANDLERS
from markertools.deliver.render import render_report
from markertools.deliver.report import (
    DeliveryReport,
    NotDelivered,
    NotDeliveredCode,
    ReportEntry,
    issue_entries,
)
from markertools.domain.model import (
    AuditRecord,
    Task,
    TurnOutcome,
    checked_value,
    is_goal_task,
    sender_cancelled,
)
from markertools.domain.ports import Ports
from markertools.parse.plan import Command, TurnPlan
from markertools.text.msg import DEFAULT_LOCALE, Locale, Msg, msg

__all__ = [
    "DEFAULT_DELIVERY_DEADLINE",
    "TurnContext",
    "deliver_turn",
    "run_command",
    "summarize_error",
]

# TRN-11: how long all the polls and waits of one delivery may wait together when the
# caller passes no `deadline` (raise or lower it with `deadline=`; `deadline=None` is the
# explicit opt-in to no bound). Without it the blocks of one turn could hold a delivery
# for hours (5 task-polls and 2 wait-threads of up to 3600 s each).
DEFAULT_DELIVERY_DEADLINE: Final[float] = 600.0
MAX_TURN_ID_CHARS: Final[int] = 256
REPORT_POSITION: Final[int] = -1  # the journal row of the queued report (TRN-9)
FINISHED_POSITION: Final[int] = -2  # the journal row of the finished delivery's report
# Kinds whose blocks only read (or only add to the report's follow-ups): on a resumed
# delivery they run again instead of being journalled (TRN-9).
RERUN_KINDS: Final[frozenset[str]] = frozenset(
    {
        "task-poll",
        "wait-threads",
        "task-list",
        "todo-list",
        "task-cost",
        "quota-status",
        "task-files",
        "goal-convert",
    }
)
SENDER_UNREADABLE: Final[str] = "sender-unreadable"  # additive TRN-10 codes: a redelivery
JOURNAL_UNREADABLE: Final[str] = "journal-unreadable"  # may succeed, so never finished
FINAL_DISCARDS: Final[frozenset[str]] = frozenset(c.value for c in NotDeliveredCode)


def _audit(ctx: TurnContext, entry: ReportEntry) -> ReportEntry:
    """TRN-7: one audit record for the entry. A failing audit log - or a failing clock,
    which the record needs for its time - is noted on the entry, never raised (TRN-8)."""
    try:
        record = AuditRecord(
            sender=ctx.sender.id,
            kind=entry.kind,
            target=entry.target,
            outcome=entry.outcome,
            reason=entry.reason.render(DEFAULT_LOCALE),
            time=ctx.now(),
        )
        ctx.ports.audit.record_audit(record)
    except Exception as exc:
        reason = msg("deliver.audit_failed", reason=entry.reason, error=summarize_error(exc))
        return attrs.evolve(entry, reason=reason)
    return entry


def _discard(
    ports: Ports,
    sender_id: str,
    plan: TurnPlan | None,
    why: Msg,
    locale: str,
    code: str,
    turn_id: str | None,
) -> DeliveryReport:
    """Nothing runs, nothing is queued; one audit record notes the discard and how many
    blocks the turn had (`plan` None: a goal / coordinator turn, never parsed, TRN-4).
    The report says why (TRN-10)."""
    if plan is None:
        reason = msg("deliver.discarded_unparsed", why=why)
    else:
        reason = msg("deliver.discarded", blocks=len(plan.commands) + len(plan.issues), why=why)
    try:
        now = ports.clock.now()
        ports.audit.record_audit(
            AuditRecord(
                sender=sender_id,
                kind="turn",
                target=None,
                outcome="discarded",
                reason=reason.render(DEFAULT_LOCALE),
                time=now,
            )
        )
    except (
        Exception
    ) as exc:  # nothing ran and nothing is queued; a failing audit cannot change that
        _warn("audit", exc)
    report = DeliveryReport(
        delivered=False, locale=locale, turn_id=turn_id, not_delivered=NotDelivered(code, why)
    )
    journal = ports.journal if turn_id is not None else None
    if journal is not None and turn_id is not None and code in FINAL_DISCARDS:
        try:
            journal.record_block(sender_id, turn_id, FINISHED_POSITION, report_to_json(report))
        except Exception as exc:
            _warn("journal.record_block", exc)
    return report


def execute(cmd: Command, ctx: TurnContext) -> ReportEntry:
    """Run one command through its handler; an exception propagates (the caller rolls
    the block's transaction back and rejects it, TRN-8)."""
    handler = HANDLERS.get(cmd.kind)
    if handler is None:
        return ctx.rejected(cmd, None, msg("deliver.no_handler", kind=cmd.kind))
    return with_notes(handler(cmd, ctx), cmd.notes)


def failed_entry(cmd: Command, ctx: TurnContext, exc: BaseException) -> ReportEntry:
    """TRN-8: the block is rejected with the error summarised."""
    _warn(f"{cmd.kind} (line {cmd.line})", exc)
    target = getattr(cmd.params, "task_id", None)
    entry = ctx.rejected(
        cmd,
        target if isinstance(target, str) else None,
        msg("deliver.port_failed", error=summarize_error(exc)),
    )
    return with_notes(entry, cmd.notes)


def run_command(cmd: Command, ctx: TurnContext) -> ReportEntry:
    """Run one command through its handler; TRN-8: any exception rejects only this block."""
    try:
        return execute(cmd, ctx)
    except Exception as exc:
        return failed_entry(cmd, ctx, exc)


def with_notes(entry: ReportEntry, notes: tuple[Msg, ...]) -> ReportEntry:
    """Append the parse notes of a command (clamps applied, fields ignored: VAL-4) to its
    entry, so the report states the values used."""
    if not notes:
        return entry
    return attrs.evolve(entry, reason=msg("deliver.with_notes", reason=entry.reason, notes=notes))


def _cancel_signal(cancel: object) -> Callable[[], bool] | None:
    """TRN-11: a `threading.Event` (anything with `is_set`) or a callable, as a callable."""
    if cancel is None:
        return None
    is_set = getattr(cancel, "is_set", None)
    if callable(is_set):
        return lambda: bool(is_set())
    if callable(cancel):
        return lambda: bool(cancel())
    raise ValueError("cancel must be a threading.Event (or anything with is_set()) or a callable")


def _check_turn_id(turn_id: object, ports: Ports) -> str | None:
    if turn_id is None:
        return None
    if not isinstance(turn_id, str) or not turn_id.strip() or len(turn_id) > MAX_TURN_ID_CHARS:
        raise ValueError(
            f"turn_id must be a non-blank string of at most {MAX_TURN_ID_CHARS} characters"
        )
    if ports.journal is None:
        raise ValueError(
            "turn_id needs a store with a delivery journal (ports.journal): without one "
            "a redelivery can not be recognised"
        )
    return turn_id


def _check_deadline(deadline: object) -> float | None:
    if deadline is None:
        return None
    if (
        isinstance(deadline, bool)
        or not isinstance(deadline, int | float)
        or not math.isfinite(deadline)
        or deadline < 0
    ):
        raise ValueError(f"deadline must be a finite number of seconds >= 0; got {deadline!r}")
    return float(deadline)


def deliver_turn(
    turn: str | TurnPlan,
    *,
    sender: str | Task,
    outcome: str,
    ports: Ports,
    locale: str = DEFAULT_LOCALE,
    turn_id: str | None = None,
    deadline: float | None = DEFAULT_DELIVERY_DEADLINE,
    cancel: object = None,
) -> DeliveryReport:
    """Deliver one turn's marker blocks as `sender` (TRN-1..11).

    Args:
        turn: the turn's text, or an already parsed plan.
        sender: the task whose turn it is (its id, or the Task).
        outcome: how the turn ended, a `TurnOutcome` or its exact string; only
            "completed" delivers (TRN-3).
        ports: what delivery may touch.
        locale: a `Locale` or "en" / "zh" for the report.
        turn_id: the worker's id for this turn (TRN-9). With one (and `ports.journal`),
            each block's effect is applied at most once: delivering the turn again after
            it finished returns the first report with `replayed=True` and changes
            nothing; after a crash mid-delivery it applies only the blocks not applied
            yet. Without one, every call executes.
        deadline: seconds from the delivery's start (on the clock port) after which
            every poll and wait stops and reports "stopped waiting" (TRN-11); by default
            DEFAULT_DELIVERY_DEADLINE (600 s) for all the waiting of the turn together.
            None means no bound: each poll and wait lasts up to its own timeout.
        cancel: a `threading.Event` or a callable; once set, polls and waits stop.

    Returns the report; its message and then any "/goal ..." follow-up have been queued
    for the sender through `ports.followups` unless `report_queued` is False (then
    `report_error` says why). Raises ValueError (only) for an outcome, locale, turn id,
    deadline or cancel signal outside what is documented here.
    """
    outcome = checked_value(TurnOutcome, outcome, "outcome")
    locale = checked_value(Locale, locale, "locale")
    turn_id = _check_turn_id(turn_id, ports)
    seconds = _check_deadline(deadline)
    stop = _cancel_signal(cancel)
    sender_id = sender if isinstance(sender, str) else sender.id
    journal = ports.journal if turn_id is not None else None
    applied: dict[int, str] = {}
    if journal is not None and turn_id is not None:
        try:
            applied = dict(journal.block_entries(sender_id, turn_id))
        except Exception as exc:
            _warn("journal.block_entries", exc)
            return _unsafe(sender_id, turn_id, locale, exc)
        stored = applied.get(FINISHED_POSITION)
        if stored is not None:
            try:
                return replayed(report_from_json(stored))
            except ValueError as exc:
                _warn("journal (a stored report is damaged)", exc)
    started = _clock_now(ports)

    def discard(plan: TurnPlan | None, why: Msg, code: str) -> DeliveryReport:
        return _discard(ports, sender_id, plan, why, locale, code, turn_id)

    # The sender is read first: a goal or coordinator sender's turn is never parsed
    # (TRN-4), whatever its outcome; any other discard still counts the turn's blocks.
    read_error: Exception | None = None
    sender_task: Task | None = None
    try:
        sender_task = ports.tasks.get_task(sender_id)
    except Exception as exc:
        read_error = exc
    why_outcome = msg("deliver.why_outcome", outcome=outcome)
    if sender_task is not None and (is_goal_task(sender_task) or sender_task.is_coordinator):
        if outcome != "completed":
            why, code = why_outcome, NotDeliveredCode.OUTCOME_NOT_COMPLETED
        else:
            why = msg("deliver.why_goal_or_coordinator")
            code = (
                NotDeliveredCode.COORDINATOR_TASK
                if sender_task.is_coordinator
                else NotDeliveredCode.GOAL_TASK
            )
        return discard(turn if isinstance(turn, TurnPlan) else None, why, code)
    if isinstance(turn, TurnPlan):
        plan = turn
    else:
        from markertools.parse.turn import parse_turn

        plan = parse_turn(turn)

    if outcome != "completed":
        return discard(plan, why_outcome, NotDeliveredCode.OUTCOME_NOT_COMPLETED)
    if read_error is not None:
        why = msg("deliver.why_sender_unreadable", error=summarize_error(read_error))
        return discard(plan, why, SENDER_UNREADABLE)
    if sender_task is None:
        return discard(plan, msg("deliver.why_sender_missing"), NotDeliveredCode.UNKNOWN_SENDER)
    if sender_cancelled(sender_task):
        return discard(plan, msg("deliver.why_cancelled"), NotDeliveredCode.SENDER_CANCELLED)

    if started is None and seconds is not None:  # the clock failed once: ask it again
        started = _clock_now(ports)
    deadline_at = None if seconds is None or started is None else started + seconds
    ctx = TurnContext(
        sender_task,
        ports,
        locale,
        plan,
        turn_id=turn_id,
        deadline_at=deadline_at,
        deadline_seconds=seconds,
        cancel=stop,
    )
    restored = _restored_entries(applied, len(plan.commands))
    ctx.restored_children = sum(
        1
        for index, entry in restored.items()
        if plan.commands[index].kind == "task-create" and entry.outcome == "done"
    )
    entries: list[ReportEntry] = []
    unrecorded = 0
    for index, cmd in enumerate(plan.commands):
        ctx.position = index
        if index in restored:  # TRN-9: applied by an earlier delivery of this turn
            entry = restored[index]
            if cmd.kind == "task-create" and entry.outcome == "done" and entry.target:
                ctx.register_created(getattr(cmd.params, "name", None), entry.target)  # VAL-8
            entries.append(entry)
            continue
        if index > 0 and not ctx.cancelled:
            # an unreadable sender does not stop the turn; its blocks report their own errors
            with contextlib.suppress(Exception):
                ctx.refresh_sender()
        if ctx.cancelled:
            entry = _audit(ctx, ctx.rejected(cmd, None, msg("deliver.sender_cancelled")))
        elif journal is None or turn_id is None or cmd.kind in RERUN_KINDS:
            entry = _audit(ctx, run_command(cmd, ctx))
        else:
            try:
                with journal.atomic():  # the effect, its audit record and its journal row
                    entry = _audit(ctx, execute(cmd, ctx))
                    journal.record_block(sender_id, turn_id, index, entry_to_json(entry))
            except Exception as exc:  # rolled back: a redelivery runs it again
                entry = _audit(ctx, failed_entry(cmd, ctx, exc))
                unrecorded += 1
        entries.append(entry)
    entries.extend(issue_entries(plan.issues))  # TRN-12: at most 50, the rest summarised

    message = render_report(tuple(entries), locale)
    followups = (message, *ctx.followups_after_report)
    report = DeliveryReport(
        delivered=True,
        entries=tuple(entries),
        message=message,
        followups=followups,
        locale=locale,
        turn_id=turn_id,
    )
    queued, error = _queue(ctx, report, applied.get(REPORT_POSITION), unrecorded)
    report = attrs.evolve(report, followups=queued, report_queued=error is None, report_error=error)
    _log_turn(report, sender_id, started, _clock_now(ports))
    return report


def _restored_entries(applied: Mapping[int, str], blocks: int) -> dict[int, ReportEntry]:
    """The stored entries of the blocks an earlier delivery of this turn applied; a
    damaged one is left out (its block runs again, its derived id recognised)."""
    out: dict[int, ReportEntry] = {}
    for index, stored in applied.items():
        if 0 <= index < blocks:
            try:
                out[index] = entry_from_json(stored)
            except ValueError as exc:
                _warn("journal (a stored entry is damaged)", exc)
    return out


def _queue(
    ctx: TurnContext, report: DeliveryReport, stored: str | None, unrecorded: int
) -> tuple[tuple[str, ...], str | None]:
    """Queue the report, then the "/goal" follow-up (TRN-6, GOA-2). With a turn id the
    queueing is journalled like a block, in one transaction with the finished report
    (TRN-9: once per turn); a turn with blocks that could not be recorded is not reported
    yet. Returns (queued, None) or (queued so far, why the report is not queued)."""
    journal, turn_id, task_id = ctx.ports.journal, ctx.turn_id, ctx.sender.id
    followups = report.followups
    if journal is None or turn_id is None:
        queued: list[str] = []
        for text in followups:
            try:
                ctx.ports.followups.enqueue_followup(task_id, text)
            except Exception as exc:  # keep the queue's order: never "/goal" without its report
                _warn("followups.enqueue_followup", exc)
                return tuple(queued), summarize_error(exc)
            queued.append(text)
        return tuple(queued), None
    if stored is not None:  # queued by an earlier delivery of this turn
        try:
            earlier = tuple(str(t) for t in json.loads(stored)["followups"])
        except (ValueError, TypeError, KeyError):
            earlier = followups
        try:
            body = report_to_json(attrs.evolve(report, followups=earlier))
            journal.record_block(task_id, turn_id, FINISHED_POSITION, body)
        except Exception as exc:  # the next delivery rebuilds it again
            _warn("journal.record_block", exc)
        return earlier, None
    if unrecorded:
        return (), (
            f"{unrecorded} block(s) could not be recorded; the report is queued once every "
            "block is: deliver the turn again with the same turn id"
        )
    try:
        with journal.atomic():
            for text in followups:
                ctx.ports.followups.enqueue_followup(task_id, text)
            body = json.dumps({"followups": list(followups)}, ensure_ascii=False)
            journal.record_block(task_id, turn_id, REPORT_POSITION, body)
            journal.record_block(task_id, turn_id, FINISHED_POSITION, report_to_json(report))
    except Exception as exc:
        _warn("followups.enqueue_followup", exc)
        return (), summarize_error(exc) + " (deliver the turn again with the same turn id)"
    return followups, None


def _unsafe(sender_id: str, turn_id: str, locale: str, exc: BaseException) -> DeliveryReport:
    """The journal can not be read: nothing runs (running could apply a block twice)."""
    why = msg("deliver.why_journal_unreadable", error=summarize_error(exc))
    return DeliveryReport(
        delivered=False,
        locale=locale,
        turn_id=turn_id,
        not_delivered=NotDelivered(JOURNAL_UNREADABLE, why),
    )


def _clock_now(ports: Ports) -> float | None:
    try:
        return ports.clock.now()
    except Exception:
        return None


def _warn(what: str, exc: BaseException) -> None:
    """A WARNING per failing port call, with its summary (logger "markertools")."""
    _logger().warning("port call failed: %s: %s", what, summarize_error(exc))


def _log_turn(report: DeliveryReport, sender: str, start: float | None, end: float | None) -> None:
    """One INFO record per delivered turn: sender, turn id, counts per outcome, ms."""
    counts: dict[str, int] = {}
    for e in report.entries:
        counts[e.outcome] = counts.get(e.outcome, 0) + e.count
    ms = (end - start) * 1000.0 if start is not None and end is not None else -1.0
    _logger().info(
        "delivered turn of %s (turn id %s): %s; report %s; %.1f ms",
        sender,
        report.turn_id,
        ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "no blocks",
        "queued" if report.report_queued else f"NOT queued ({report.report_error})",
        ms,
    )


_LOGGER: list[Any] = []


def _logger() -> Any:
    """The "markertools" logger, with a NullHandler (library convention: the embedding
    application decides where records go). Made on first use, never at import."""
    if not _LOGGER:
        import logging

        logger = logging.getLogger("markertools")
        logger.addHandler(logging.NullHandler())
        _LOGGER.append(logger)
    return _LOGGER[0]
