# Owns: `deliver_turn` — running one completed turn's plan against the ports — and the
# per-turn `TurnContext` the kind handlers (`_exec_*.py`) receive. Together with those
# handlers this is the only code that calls ports ("gather / decide / apply": handlers
# gather facts through the context, call pure gates, apply outcomes through ports).
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
from collections.abc import Callable, Mapping
from typing import Final

import attrs

from markertools._decision import PermissionAnswer
from markertools._lineage import LINEAGE_MAX_STEPS, generation, in_lineage
from markertools._model import AuditRecord, Task, is_goal_task, quota_exhausted, sender_cancelled
from markertools._msg import DEFAULT_LOCALE, LOCALES, Msg, msg
from markertools._plan import BlockIssue, Command, TurnPlan
from markertools._ports import Ports
from markertools._render import render_report, shown
from markertools._report import DeliveryReport, EntryOutcome, ReportEntry

Handler = Callable[[Command, "TurnContext"], ReportEntry]

ERROR_SUMMARY_CHARS: Final[int] = 300


def summarize_error(exc: BaseException) -> str:
    """One line, at most ERROR_SUMMARY_CHARS code points: `TypeName: message`.

    Never raises (TRN-8): an exception whose `str()` itself fails, or returns something
    other than a str, is summarised by its type name alone."""
    name = getattr(type(exc), "__name__", "Exception")
    try:
        detail = str(exc)
    except Exception:  # str() also raises when __str__ returns something else
        detail = "(the error message could not be read)"
    text = " ".join(f"{name}: {detail}".split())
    return text if len(text) <= ERROR_SUMMARY_CHARS else text[: ERROR_SUMMARY_CHARS - 1] + "…"


class TurnContext:
    """Per-turn facts and caches shared by the handlers of one delivery.

    Mutable on purpose (it is the turn's scratchpad, never stored): the sender as last
    read, permission answers (looked up at most once per permission per turn), the quota
    verdict (checked once per turn, CRE-3 / AUT-4), the `@NAME` table (VAL-8), the count
    of children created this turn (LIN-3) and follow-ups to queue after the report.
    """

    def __init__(self, sender: Task, ports: Ports, locale: str, plan: TurnPlan) -> None:
        self.sender = sender
        self.ports = ports
        self.locale = locale
        self.plan = plan
        self.cancelled = False  # set once the sender is seen cancelled (TRN-5, WAI-5)
        self.children_created = 0
        self.followups_after_report: list[str] = []
        self._permissions: dict[str, PermissionAnswer] = {}
        self._quota_exhausted: bool | None = None
        self._quota_failure: Exception | None = None
        self._created: dict[str, str] = {}  # @NAME -> created task id
        self._ambiguous_names = _duplicate_create_names(plan)
        self._generation: int | None = None
        self._existing_children: int | None = None
        self._sender_fresh = False  # the sender was just read (by a poll / wait round)

    # ---- facts -------------------------------------------------------------------

    def now(self) -> float:
        return self.ports.clock.now()

    def permission(self, permission: str) -> PermissionAnswer:
        """DOM-6: looked up for the sender's creator on the sender's project; a lookup
        that raises is a `failed` answer (GAT-2 / GAT-4 decide what that means)."""
        cached = self._permissions.get(permission)
        if cached is not None:
            return cached
        try:
            granted = self.ports.permissions.has_permission(
                self.sender.created_by, self.sender.project_id, permission
            )
            answer = PermissionAnswer.of(permission, granted is True)
        except Exception as exc:
            answer = PermissionAnswer.failure(permission, summarize_error(exc))
        self._permissions[permission] = answer
        return answer

    def quota_exhausted(self) -> bool:
        """CRE-3 / AUT-4: the sender's creator's quota, read once per turn. A failed
        lookup is remembered too: it raises again for every later block of the turn, so
        each of them is rejected with the same failure (TRN-8; fail closed, one check)."""
        if self._quota_failure is not None:
            raise self._quota_failure
        if self._quota_exhausted is None:
            user = self.sender.created_by
            try:
                quota = self.ports.costs.get_quota(user) if user is not None else None
                self._quota_exhausted = quota_exhausted(quota)
            except Exception as exc:
                self._quota_failure = exc
                raise
        return self._quota_exhausted

    def sender_generation(self) -> int:
        """LIN-1 generation of the sender: one lineage read per turn (the sender's parent
        chain does not change during its own delivery)."""
        if self._generation is None:
            links = self.ports.tasks.lineage(self.sender.id, LINEAGE_MAX_STEPS)
            self._generation = generation(links)
        return self._generation

    def existing_children(self) -> int:
        """LIN-3: the sender's direct children before this turn, read once per turn;
        `children_created` counts this turn's."""
        if self._existing_children is None:
            self._existing_children = self.ports.tasks.count_children(self.sender.id)
        return self._existing_children

    def target_in_lineage(self, target: Task | None) -> bool:
        """LIN-4 for a target of the sender's project other than the sender: one lineage
        read of the target; False without a read for any other target (or none)."""
        sender = self.sender
        if target is None or target.project_id != sender.project_id or target.id == sender.id:
            return False
        return in_lineage(self.ports.tasks.lineage(target.id, LINEAGE_MAX_STEPS), sender.id)

    def refresh_sender(self) -> bool:
        """Re-read the sender; True when it is (now) cancelled (TRN-5). Skips the read
        when the previous block has just read the sender (a poll / wait round)."""
        if self._sender_fresh:
            self._sender_fresh = False
        elif not self.cancelled:
            self.observe_sender(self.ports.tasks.get_task(self.sender.id))
            self._sender_fresh = False
        return self.cancelled

    def observe_sender(self, task: Task | None) -> None:
        """Record a fresh read of the sender (poll/wait read it with their targets)."""
        self._sender_fresh = True
        if sender_cancelled(task):
            self.cancelled = True
        elif task is not None:
            self.sender = task

    # ---- @NAME references (VAL-8) -----------------------------------------------------

    def register_created(self, name: str | None, task_id: str) -> None:
        self.children_created += 1
        if name is not None and name not in self._ambiguous_names:
            self._created[name] = task_id

    def name_ambiguous(self, name: str) -> bool:
        """VAL-8: True when two task-create blocks of this turn use `name`."""
        return name in self._ambiguous_names

    def resolve_task_id(self, raw: str) -> str | Msg:
        """A literal id is returned as is; `@NAME` becomes the id created this turn, or a
        Msg saying why it cannot be resolved."""
        if not raw.startswith("@"):
            return raw
        name = raw[1:]
        if name in self._ambiguous_names:
            return msg("deliver.ref_ambiguous", ref=shown(raw))
        created = self._created.get(name)
        if created is None:
            return msg("deliver.ref_unresolved", ref=shown(raw))
        return created

    # ---- entries -------------------------------------------------------------------

    def entry(
        self, cmd: Command, outcome: EntryOutcome, target: str | None, reason: Msg
    ) -> ReportEntry:
        return ReportEntry(cmd.kind, cmd.line, outcome, target, reason)

    def done(self, cmd: Command, target: str | None, result: Msg) -> ReportEntry:
        return self.entry(cmd, "done", target, result)

    def rejected(self, cmd: Command, target: str | None, reason: Msg) -> ReportEntry:
        return self.entry(cmd, "rejected", target, reason)


def _duplicate_create_names(plan: TurnPlan) -> frozenset[str]:
    """VAL-8: names used by two task-create blocks of the turn - two commands, or a
    command and a block that will not run (skipped, unclosed, over the cap)."""
    seen: set[str] = set()
    dup: set[str] = set()
    for cmd in plan.commands:
        name = getattr(cmd.params, "name", None) if cmd.kind == "task-create" else None
        if isinstance(name, str):
            (dup if name in seen else seen).add(name)
    dup.update(seen.intersection(plan.unexecuted_create_names))
    return frozenset(dup)


def _handlers() -> Mapping[str, Handler]:
    from markertools._exec_registry import HANDLERS

    return HANDLERS


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
    handler = _handlers().get(cmd.kind)
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
        from markertools._parse import parse_turn

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
