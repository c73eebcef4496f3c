# Owns: `deliver_turn` - running one completed turn's plan against the ports: the
# discards (TRN-3/4/5), one handler call per command (found by its params' class through
# the registry), audit records (TRN-7) and the report. Exactly-once (TRN-9) is not
# decided here: the loop asks the turn's `TurnJournal` (deliver/once.py) for a replay, a
# restored block, to run a block and to queue the report. Together with the handlers
# (`deliver/handlers/`) this is the only code that calls ports ("gather / decide /
# apply": handlers gather facts through the context, call pure gates, apply outcomes
# through ports).
#
# Must never: name a kind (what a kind needs beyond its handler is a column of its row
# in the kind table, parse/kinds.py: `replay`, `creates_task`); raise for anything a
# block contains.
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
#   Rule 5 (TRN-6): the report is queued when the turn has at least one entry (a block run,
#           skipped, ignored or a near miss); a turn without any queues nothing.
#   Rule 6 (FLT-7): a sender that is not `running` applies nothing (`sender-not-running`
#           naming its status; `sender-cancelled` for an interrupted one), audited.
#   Rule 7 (FLT-1): with `claim=` the claim is checked against the sender before
#           anything is written and every write is fenced (deliver/once.py Rule 6): a
#           stale claim raises LeaseLost, never a report.
from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Final

import attrs

from markertools._root import InvalidArgument
from markertools.deliver.context import TurnContext, summarize_error
from markertools.deliver.failures import log_turn, warn
from markertools.deliver.handlers.registry import handler_for
from markertools.deliver.once import (
    OUTCOME_MARK,
    TurnIdReused,
    TurnJournal,
    pending_entry,
    turn_digest,
)
from markertools.deliver.render import render_report
from markertools.deliver.report import (
    DeliveryReport,
    NotDelivered,
    NotDeliveredCode,
    ReportEntry,
    issue_entries,
)
from markertools.domain.errors import LeaseLost
from markertools.domain.model import (
    AuditRecord,
    Task,
    TurnOutcome,
    checked_value,
    is_goal_task,
    sender_cancelled,
)
from markertools.domain.ports import Claim, Ports
from markertools.parse.kinds import kind_of
from markertools.parse.kindspec import param_text
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
            source=ctx.facts.source,
        )
        ctx.ports.audit.record_audit(record)
    except Exception as exc:
        reason = msg("deliver.audit_failed", reason=entry.reason, error=summarize_error(exc))
        return attrs.evolve(entry, reason=reason)
    return entry


def _discard(
    ports: Ports,
    journal: TurnJournal,
    sender_id: str,
    plan: TurnPlan | None,
    why: Msg,
    locale: str,
    code: str,
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
        warn("audit", exc)
    report = DeliveryReport(
        delivered=False,
        locale=locale,
        turn_id=journal.turn_id,
        not_delivered=NotDelivered(code, why),
    )
    if code in FINAL_DISCARDS:  # TRN-9: discarded for good, so finished: a redelivery replays
        journal.record_discard(report)
    return report


def execute(cmd: Command, ctx: TurnContext) -> ReportEntry:
    """Run one command through its handler; an exception propagates (the caller rolls
    the block's transaction back and rejects it, TRN-8)."""
    handler = handler_for(cmd)
    if handler is None:
        return ctx.rejected(cmd, None, msg("deliver.no_handler", kind=cmd.kind))
    return with_notes(handler.run(cmd, cmd.params, ctx), cmd.notes)


def failed_entry(cmd: Command, ctx: TurnContext, exc: BaseException) -> ReportEntry:
    """TRN-8: the block is rejected with the error summarised, against the task its kind's
    `target_field` names (when it has one)."""
    warn(f"{cmd.kind} (line {cmd.line})", exc)
    spec = kind_of(cmd.kind)
    target = param_text(cmd.params, spec.target_field if spec is not None else None)
    entry = ctx.rejected(cmd, target, msg("deliver.port_failed", error=summarize_error(exc)))
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
    raise InvalidArgument("cancel must be a threading.Event (or anything with is_set()) or a callable")


def _check_turn_id(turn_id: object, ports: Ports) -> str | None:
    if turn_id is None:
        return None
    if not isinstance(turn_id, str) or not turn_id.strip() or len(turn_id) > MAX_TURN_ID_CHARS:
        raise InvalidArgument(
            f"turn_id must be a non-blank string of at most {MAX_TURN_ID_CHARS} characters"
        )
    if ports.journal is None:
        raise InvalidArgument(
            "turn_id needs a store with a delivery journal (ports.journal): without one "
            "a redelivery can not be recognised"
        )
    return turn_id


def checked_claim(claim: object, sender_id: str, ports: Ports) -> Claim | None:
    """FLT-1: a `claim=` argument checked before anything runs: a Claim of the sender's
    task, on a store that can fence (`ports.fencing`). ValueError otherwise."""
    if claim is None:
        return None
    if not isinstance(claim, Claim):
        raise InvalidArgument(f"claim must be the Claim the store handed out; got {type(claim).__name__}")
    if claim.task.id != sender_id:
        raise InvalidArgument(
            f"claim is for task {claim.task.id!r}, not the sender {sender_id!r}: pass the "
            "claim of the task whose turn this is"
        )
    if ports.fencing is None:
        raise InvalidArgument(
            "claim= needs a store that can fence its writes (ports.fencing); every bundled "
            "store can - a store of your own implements markertools.Fencing"
        )
    return claim


def holds(claim: Claim, task: Task | None) -> None:
    """FLT-1: raise LeaseLost unless `task` (the sender as read) is still held by `claim`."""
    if task is None or task.epoch != claim.epoch or task.status != "running":
        raise LeaseLost(
            claim.task.id,
            claim.epoch,
            None if task is None else task.epoch,
            None if task is None else task.status,
        )


def _check_deadline(deadline: object) -> float | None:
    if deadline is None:
        return None
    if (
        isinstance(deadline, bool)
        or not isinstance(deadline, int | float)
        or not math.isfinite(deadline)
        or deadline < 0
    ):
        raise InvalidArgument(f"deadline must be a finite number of seconds >= 0; got {deadline!r}")
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
    claim: Claim | None = None,
) -> DeliveryReport:
    """Deliver one turn's marker blocks as `sender` (TRN-1..11, FLT-1, FLT-2, FLT-7).

    Args:
        turn: the turn's text, or an already parsed plan.
        sender: the task whose turn it is (its id, or the Task).
        outcome: how the turn ended, a `TurnOutcome` or its exact string; only
            "completed" delivers (TRN-3).
        ports: what delivery may touch.
        locale: a `Locale` or "en" / "zh" for the report.
        turn_id: the worker's id for this turn (TRN-9), unique per sender task - e.g.
            Codex's turn id. With one (and `ports.journal`), each block's effect is
            applied at most once: delivering the turn again after it finished returns
            the first report with `replayed=True` and changes nothing; after a crash
            mid-delivery it applies only the blocks not applied yet. The input's digest
            (`turn_digest`) and the outcome are journalled with it: the same turn id with
            other input or another outcome raises `TurnIdReused` and changes nothing
            (FLT-6). Before the first block runs the turn is recorded as pending (FLT-2:
            its text, outcome and locale), so the task's next runner completes it if this
            delivery never finishes (`recover_pending_turns`). Without one, every call
            executes.
        deadline: seconds from the delivery's start (on the clock port) after which
            every poll and wait stops and reports "stopped waiting" (TRN-11); by default
            DEFAULT_DELIVERY_DEADLINE (600 s) for all the waiting of the turn together.
            None means no bound: each poll and wait lasts up to its own timeout.
        cancel: a `threading.Event` or a callable; once set, polls and waits stop.
        claim: the `Claim` the worker got for this attempt (FLT-1). With it every write of
            the delivery is fenced: once another claim holds the task (it was requeued
            and claimed again) or the task left `running`, the delivery raises
            `LeaseLost` and writes nothing more. Without it the writes are not fenced -
            unsafe in a fleet, where a paused worker could write for a task another
            worker runs. Needs `ports.fencing` (every bundled store has it).

    Returns the report; its message and then any "/goal ..." follow-up have been queued
    for the sender through `ports.followups` (`report.queued_followups`) unless
    `report_queued` is False (then `report_error` says why) - or the turn had no block at
    all, which queues nothing (TRN-6). The queue is the only channel to the agent: send
    what `take_followups` (or a Claim) hands out, never `queued_followups` directly.

    A sender that is not `running` delivers nothing (FLT-7): the report says so
    (`sender-not-running` naming the status, or `sender-cancelled`).

    Raises ValueError for an outcome, locale, turn id, deadline, cancel signal or claim
    outside what is documented here - `TurnIdReused` (also a ValueError) when `turn_id`
    was delivered before with other input or another outcome (TRN-9, FLT-6): then
    nothing ran and nothing was written - and `LeaseLost` when `claim` no longer holds
    the task: nothing more was written (blocks applied before it stay applied, and the
    turn stays pending for the task's next runner). All three are MarkertoolsErrors.
    """
    outcome = checked_value(TurnOutcome, outcome, "outcome")
    locale = checked_value(Locale, locale, "locale")
    turn_id = _check_turn_id(turn_id, ports)
    seconds = _check_deadline(deadline)
    stop = _cancel_signal(cancel)
    sender_id = sender if isinstance(sender, str) else sender.id
    claim = checked_claim(claim, sender_id, ports)
    fence = None
    if claim is not None and ports.fencing is not None:
        fencing, held = ports.fencing, claim

        def fence() -> AbstractContextManager[None]:
            return fencing.fenced(held)

    digest = None if turn_id is None else f"{turn_digest(turn)}{OUTCOME_MARK}{outcome}"
    started = _clock_now(ports)
    pending = None
    if turn_id is not None:  # FLT-2: what the next runner needs to complete this turn
        pending = pending_entry(
            0 if claim is None else claim.epoch,
            str(outcome),
            str(locale),
            turn if isinstance(turn, str) else None,
            started if started is not None else 0.0,
        )
    try:  # TRN-9: what an earlier delivery of this turn id did, read once
        journal = TurnJournal.read(
            ports.journal, sender_id, turn_id, digest, pending=pending, fence=fence
        )
    except (TurnIdReused, LeaseLost):  # a caller error, or the claim was lost
        raise
    except Exception as exc:
        warn("journal.block_entries", exc)
        return _unsafe(sender_id, turn_id, locale, exc)
    finished = journal.finished()
    if finished is not None:  # TRN-9: the turn was delivered: its first report, replayed
        return finished

    def discard(plan: TurnPlan | None, why: Msg, code: str) -> DeliveryReport:
        return _discard(ports, journal, sender_id, plan, why, locale, code)

    # The sender is read first: a goal or coordinator sender's turn is never parsed
    # (TRN-4), whatever its outcome; any other discard still counts the turn's blocks.
    read_error: Exception | None = None
    sender_task: Task | None = None
    try:
        sender_task = ports.tasks.get_task(sender_id)
    except Exception as exc:
        read_error = exc
    if claim is not None and read_error is None:  # Rule 7 (FLT-1): before any write
        holds(claim, sender_task)
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
    used = _turn_usage(ports, sender_task)  # TOL-4: this turn's tool calls count first
    if isinstance(turn, TurnPlan):
        plan = turn
        if used:
            from markertools.parse.turn import cap_plan

            plan = cap_plan(plan, used)
    else:
        from markertools.parse.turn import parse_turn

        plan = parse_turn(turn, used)

    if outcome != "completed":
        return discard(plan, why_outcome, NotDeliveredCode.OUTCOME_NOT_COMPLETED)
    if read_error is not None:
        why = msg("deliver.why_sender_unreadable", error=summarize_error(read_error))
        return discard(plan, why, SENDER_UNREADABLE)
    if sender_task is None:
        return discard(plan, msg("deliver.why_sender_missing"), NotDeliveredCode.UNKNOWN_SENDER)
    if sender_cancelled(sender_task):
        return discard(plan, msg("deliver.why_cancelled"), NotDeliveredCode.SENDER_CANCELLED)
    if sender_task.status != "running":  # Rule 6 (FLT-7)
        why = msg("deliver.why_not_running", status=sender_task.status)
        return discard(plan, why, NotDeliveredCode.SENDER_NOT_RUNNING)

    if started is None and seconds is not None:  # the clock failed once: ask it again
        started = _clock_now(ports)
    deadline_at = None if seconds is None or started is None else started + seconds
    journal.restore(plan)
    ctx = TurnContext(
        sender_task,
        ports,
        locale,
        plan,
        turn_id=turn_id,
        deadline_at=deadline_at,
        deadline_seconds=seconds,
        cancel=stop,
        journal=journal,
    )
    entries = [_block(index, cmd, ctx) for index, cmd in enumerate(plan.commands)]
    entries.extend(issue_entries(plan.issues))  # TRN-12: at most 50, the rest summarised

    message = render_report(tuple(entries), locale)
    # TRN-6: a turn without any block (no command, no issue) queues nothing - the agent
    # asked for nothing and is told nothing; a turn whose blocks were all skipped or
    # ignored queues its report (the agent must learn why)
    texts = (message, *ctx.followups_after_report) if entries else ()
    report = DeliveryReport(
        delivered=True,
        entries=tuple(entries),
        message=message,
        queued_followups=texts,
        locale=locale,
        turn_id=turn_id,
    )
    release = None
    if ports.calls is not None:  # TOL-7: held "/goal"s right after the report - FLT-2: in
        calls = ports.calls  # the transaction that queues the report

        def release() -> tuple[str, ...]:
            return tuple(calls.release_held_followups(sender_id))

    queued, error = journal.queue_report(report, ports.followups, release)
    report = attrs.evolve(
        report, queued_followups=queued, report_queued=error is None, report_error=error
    )
    log_turn(report, sender_id, started, _clock_now(ports))
    return report


def _block(index: int, cmd: Command, ctx: TurnContext) -> ReportEntry:
    """The entry of block `index`: restored when an earlier delivery of the turn applied
    it (TRN-9), rejected once the sender is cancelled (TRN-5), else run - through the
    turn's journal, which decides whether the run is journalled."""
    journal = ctx.journal
    restored = journal.restored(index)
    if restored is not None:  # TRN-9: applied by an earlier delivery of this turn
        ctx.restore(cmd, restored)  # VAL-8 / LIN-3: the task it created counts again
        return restored
    if index > 0 and not ctx.cancelled:
        # an unreadable sender does not stop the turn; its blocks report their own errors
        with contextlib.suppress(Exception):
            ctx.refresh_sender()
    if ctx.cancelled:
        return _audit(ctx, ctx.rejected(cmd, None, msg("deliver.sender_cancelled")))
    return journal.run(
        index,
        cmd,
        lambda: execute(cmd, ctx),
        lambda entry: _audit(ctx, entry),
        lambda exc: _audit(ctx, failed_entry(cmd, ctx, exc)),
    )


def _unsafe(sender_id: str, turn_id: str | None, locale: str, exc: BaseException) -> DeliveryReport:
    """The journal can not be read: nothing runs (running could apply a block twice)."""
    why = msg("deliver.why_journal_unreadable", error=summarize_error(exc))
    return DeliveryReport(
        delivered=False,
        locale=locale,
        turn_id=turn_id,
        not_delivered=NotDelivered(JOURNAL_UNREADABLE, why),
    )


def _turn_usage(ports: Ports, sender: Task | None) -> dict[str, int]:
    """TOL-4: canonical kind -> tool calls the sender made in its current turn ({} when
    there is no call ledger, no sender, or the ledger fails: blocks keep their caps)."""
    if ports.calls is None or sender is None:
        return {}
    try:
        return {k: int(v) for k, v in ports.calls.turn_usage(sender.id, sender.turn).items()}
    except Exception as exc:
        warn("calls.turn_usage", exc)
        return {}


def _clock_now(ports: Ports) -> float | None:
    try:
        return ports.clock.now()
    except Exception:
        return None
