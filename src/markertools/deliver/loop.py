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

import attrs

from markertools.deliver.context import TurnContext, summarize_error
from markertools.deliver.handlers.registry import HANDLERS
from markertools.deliver.render import render_report
from markertools.deliver.report import DeliveryReport, EntryOutcome, ReportEntry
from markertools.domain.model import AuditRecord, Task, is_goal_task, sender_cancelled
from markertools.domain.ports import Ports
from markertools.parse.plan import BlockIssue, Command, TurnPlan
from markertools.text.msg import DEFAULT_LOCALE, LOCALES, Msg, msg

__all__ = ["TurnContext", "deliver_turn", "run_command", "summarize_error"]


def issue_entry(issue: BlockIssue) -> ReportEntry:
    """A plan issue as a report entry: near-miss ("unknown") fences count as skipped."""
    outcome: EntryOutcome = "ignored" if issue.outcome == "ignored" else "skipped"
    return ReportEntry(issue.kind, issue.line, outcome, None, issue.reason)


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
    ports: Ports, sender_id: str, plan: TurnPlan | None, why: Msg, locale: str
) -> DeliveryReport:
    """Nothing runs, nothing is queued; one audit record notes the discard and how many
    blocks the turn had (`plan` None: a goal / coordinator turn, never parsed, TRN-4)."""
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
    except Exception:
        pass  # nothing ran and nothing is queued; a failing audit cannot change that
    return DeliveryReport(delivered=False, locale=locale)


def run_command(cmd: Command, ctx: TurnContext) -> ReportEntry:
    """Run one command through its handler; TRN-8: any exception rejects only this block."""
    handler = HANDLERS.get(cmd.kind)
    if handler is None:
        return ctx.rejected(cmd, None, msg("deliver.no_handler", kind=cmd.kind))
    try:
        entry = handler(cmd, ctx)
    except Exception as exc:
        target = getattr(cmd.params, "task_id", None)
        entry = ctx.rejected(
            cmd,
            target if isinstance(target, str) else None,
            msg("deliver.port_failed", error=summarize_error(exc)),
        )
    return with_notes(entry, cmd.notes)


def with_notes(entry: ReportEntry, notes: tuple[Msg, ...]) -> ReportEntry:
    """Append the parse notes of a command (clamps applied, fields ignored: VAL-4) to its
    entry, so the report states the values used."""
    if not notes:
        return entry
    return attrs.evolve(entry, reason=msg("deliver.with_notes", reason=entry.reason, notes=notes))


def deliver_turn(
    turn: str | TurnPlan,
    *,
    sender: str | Task,
    outcome: str,
    ports: Ports,
    locale: str = DEFAULT_LOCALE,
) -> DeliveryReport:
    """Deliver one turn's marker blocks as `sender` (TRN-1..8).

    `turn` is the turn's text or an already parsed plan; `outcome` is how the turn ended
    (only "completed" delivers). Returns the report; the report message and then any
    "/goal ..." follow-up have been queued for the sender through `ports.followups`.
    """
    if locale not in LOCALES:
        locale = DEFAULT_LOCALE
    sender_id = sender if isinstance(sender, str) else sender.id
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
        why = why_outcome if outcome != "completed" else msg("deliver.why_goal_or_coordinator")
        return _discard(ports, sender_id, turn if isinstance(turn, TurnPlan) else None, why, locale)
    if isinstance(turn, TurnPlan):
        plan = turn
    else:
        from markertools.parse.turn import parse_turn

        plan = parse_turn(turn)

    if outcome != "completed":
        return _discard(ports, sender_id, plan, why_outcome, locale)
    if read_error is not None:
        why = msg("deliver.why_sender_unreadable", error=summarize_error(read_error))
        return _discard(ports, sender_id, plan, why, locale)
    if sender_task is None:
        return _discard(ports, sender_id, plan, msg("deliver.why_sender_missing"), locale)
    if sender_cancelled(sender_task):
        return _discard(ports, sender_id, plan, msg("deliver.why_cancelled"), locale)

    ctx = TurnContext(sender_task, ports, locale, plan)
    entries: list[ReportEntry] = []
    for index, cmd in enumerate(plan.commands):
        if index > 0 and not ctx.cancelled:
            # an unreadable sender does not stop the turn; its blocks report their own errors
            with contextlib.suppress(Exception):
                ctx.refresh_sender()
        if ctx.cancelled:
            entry = ctx.rejected(cmd, None, msg("deliver.sender_cancelled"))
        else:
            entry = run_command(cmd, ctx)
        entries.append(_audit(ctx, entry))
    entries.extend(issue_entry(issue) for issue in plan.issues)

    message = render_report(tuple(entries), locale)
    followups = [message, *ctx.followups_after_report]
    queued: list[str] = []
    for text in followups:
        try:
            ports.followups.enqueue_followup(sender_task.id, text)
            queued.append(text)
        except Exception:
            break  # keep the queue's order: never queue "/goal" without its report
    return DeliveryReport(
        delivered=True,
        entries=tuple(entries),
        message=message,
        followups=tuple(queued),
        locale=locale,
    )
