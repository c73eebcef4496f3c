# Owns: what a kind handler receives and how it is registered: `TurnContext` - the
# delivery's immutable `TurnFacts` (sender as first read, ports, locale, plan, turn id,
# deadline, cancel signal) and its per-turn caches (the sender as last read, permission
# and quota answers, lineage facts, the @NAME table, this turn's children, follow-ups to
# queue after the report), which handlers change only through its methods - and
# `Handler` / `handler_table`, a handler keyed by the params class it takes. Also the
# helpers every handler family shares (id drawing, permission refusals).
#
# Must never: import a handler or the delivery loop; hold exactly-once bookkeeping of
# its own (the derived ids and the restored blocks are `once.TurnJournal`'s; the
# context only hands them on); let a handler write one of its attributes.
#
# Invariants:
#   Rule 1: every port read it makes is cached for the turn where the rule says "once
#           per turn" (DOM-6 permissions, CRE-3 quota, LIN-1 generation, LIN-3 children).
#   Rule 2: `summarize_error` never raises, whatever the exception (TRN-8).
#   Rule 3: a handler table holds one handler per params class (`handler_table` refuses
#           a second), and a handler's function takes exactly that class (mypy checks
#           `Handler(ParamsClass, function)`).
from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any, Final, Generic, Literal, TypeVar

import attrs

from markertools.deliver.lineage import LINEAGE_MAX_STEPS, generation, in_lineage
from markertools.deliver.once import TurnJournal
from markertools.deliver.render import shown
from markertools.deliver.report import EntryOutcome, ReportEntry
from markertools.domain.decision import PermissionAnswer
from markertools.domain.errors import summarize_error as summarize_error  # for the handlers
from markertools.domain.model import Task, quota_exhausted, sender_cancelled
from markertools.domain.ports import Ports, TaskListing
from markertools.parse.kinds import kind_of
from markertools.parse.kindspec import param_text
from markertools.parse.params import Params
from markertools.parse.plan import Command, TurnPlan
from markertools.text.msg import Msg, msg

__all__ = ["Handler", "HandlerTable", "TurnContext", "TurnFacts", "handler_table"]
__all__ += ["new_id", "permission_refusal", "summarize_error"]

StopCause = Literal["deadline", "cancelled"]  # TRN-11: why a delivery stopped waiting
P = TypeVar("P", bound=Params)

ID_BYTES: Final[int] = 6  # todo and automation ids: prefix + 12 hex digits
_ID_DRAWS: Final[int] = 8


@attrs.frozen
class TurnFacts:
    """What one delivery knows before its first block; none of it changes."""

    sender: Task  # as read when the delivery started (TurnContext.sender: as last read)
    ports: Ports
    locale: str
    plan: TurnPlan
    turn_id: str | None = None  # TRN-9: ids of created things derive from it
    deadline_at: float | None = None  # TRN-11: clock time when waiting must stop
    deadline_seconds: float | None = None  # TRN-11: the deadline as the caller gave it
    cancel: Callable[[], bool] | None = None  # TRN-11: the caller's cancellation signal
    source: str = "block"  # TOL-2: "tool" when the block is a same-turn tool call
    waited: float = 0.0  # TOL-11: seconds a call already waited before its delivery


class TurnContext:
    """The facts and caches of one delivery, shared by the handlers of its blocks.

    `facts` never change. The caches - the sender as last read, permission answers
    (looked up at most once per permission per turn), the quota verdict (once per turn,
    CRE-3 / AUT-4), the sender's generation and children count, the `@NAME` table
    (VAL-8), the children created this turn (LIN-3), follow-ups to queue after the
    report - are read through properties and changed only by its methods. Exactly-once
    bookkeeping (derived ids, restored blocks) is the `TurnJournal`'s.
    """

    def __init__(
        self,
        sender: Task,
        ports: Ports,
        locale: str,
        plan: TurnPlan,
        *,
        turn_id: str | None = None,
        deadline_at: float | None = None,
        deadline_seconds: float | None = None,
        cancel: Callable[[], bool] | None = None,
        journal: TurnJournal | None = None,
        source: str = "block",
        waited: float = 0.0,
    ) -> None:
        self.facts: Final = TurnFacts(
            sender,
            ports,
            locale,
            plan,
            turn_id,
            deadline_at,
            deadline_seconds,
            cancel,
            source,
            waited,
        )
        self.journal: Final = journal or TurnJournal(ports.journal, sender.id, turn_id)
        self._sender = sender
        self._sender_fresh = False  # the sender was just read (by a poll / wait round)
        self._cancelled = False  # the sender was seen cancelled (TRN-5, WAI-5)
        self._stop_cause: StopCause | None = None  # set once waiting must stop (TRN-11)
        self._children_created = 0
        self._followups: list[str] = []
        self._permissions: dict[str, PermissionAnswer] = {}
        self._quota_exhausted: bool | None = None
        self._quota_failure: Exception | None = None
        self._generation: int | None = None
        self._existing_children: int | None = None
        self._created: dict[str, str] = {}  # @NAME -> created task id
        self._ambiguous_names = _duplicate_create_names(plan)
        self._listing: TaskListing | None = None

    # ---- the facts, and the caches as read-only views ----------------------------------

    @property
    def ports(self) -> Ports:
        return self.facts.ports

    @property
    def locale(self) -> str:
        return self.facts.locale

    @property
    def plan(self) -> TurnPlan:
        return self.facts.plan

    @property
    def turn_id(self) -> str | None:
        return self.facts.turn_id

    @property
    def deadline_at(self) -> float | None:
        return self.facts.deadline_at

    @property
    def deadline_seconds(self) -> float | None:
        return self.facts.deadline_seconds

    @property
    def waited(self) -> float:
        """TOL-11: how long a same-turn call already waited before it was delivered (the
        tool server waits without a thread first); a poll's or wait's clock starts that
        far back. 0 for blocks."""
        return self.facts.waited

    @property
    def sender(self) -> Task:
        """The sender as last read (a poll or wait round, or the loop between blocks)."""
        return self._sender

    @property
    def cancelled(self) -> bool:
        """True once the sender was seen cancelled (TRN-5, WAI-5)."""
        return self._cancelled

    @property
    def stopped(self) -> bool:
        """True once `stop_waiting()` saw the deadline pass or the cancel signal set."""
        return self._stop_cause is not None

    @property
    def stop_cause(self) -> StopCause | None:
        """Why `stopped` is set: "deadline" or "cancelled" (TRN-11)."""
        return self._stop_cause

    @property
    def children_created(self) -> int:
        """LIN-3: children this turn created (restored creations included)."""
        return self._children_created

    @property
    def listing(self) -> TaskListing | None:
        """The listing the last task-list block read (a same-turn call's result fields
        show these rows, not a second read)."""
        return self._listing

    def remember_listing(self, listing: TaskListing) -> None:
        self._listing = listing

    @property
    def followups_after_report(self) -> tuple[str, ...]:
        """Follow-ups to queue after the report message (GOA-2), in order."""
        return tuple(self._followups)

    # ---- facts read through the ports ------------------------------------------------

    def now(self) -> float:
        return self.ports.clock.now()

    def stop_waiting(self) -> bool:
        """TRN-11: True (and stays True) once the delivery's deadline passed or its
        cancellation signal is set; polls and waits then end with "stopped waiting", and
        `stop_cause` says which of the two it was."""
        if self._stop_cause is None:
            cancel = self.facts.cancel
            if cancel is not None:
                with contextlib.suppress(Exception):
                    if bool(cancel()):
                        self._stop_cause = "cancelled"
            deadline_at = self.facts.deadline_at
            if self._stop_cause is None and deadline_at is not None and self.now() >= deadline_at:
                self._stop_cause = "deadline"
        return self._stop_cause is not None

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
            count = self.ports.tasks.count_children(self.sender.id)
            # TRN-9: children an earlier delivery of this turn created are this turn's
            # (counted in `children_created` as their blocks are restored), not earlier ones
            self._existing_children = max(0, count - self.journal.restored_children)
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
        elif not self._cancelled:
            self.observe_sender(self.ports.tasks.get_task(self._sender.id))
            self._sender_fresh = False
        return self._cancelled

    def observe_sender(self, task: Task | None) -> None:
        """Record a fresh read of the sender (poll/wait read it with their targets)."""
        self._sender_fresh = True
        if sender_cancelled(task):
            self._cancelled = True
        elif task is not None:
            self._sender = task

    # ---- TRN-9, handed on from the turn's journal --------------------------------------

    def derived_id(self, prefix: str, nbytes: int) -> str | None:
        """TRN-9: the running block's derived id (None without a turn id)."""
        return self.journal.derived_id(prefix, nbytes)

    def insert_once(
        self, insert: Callable[[Any], None], lookup: Callable[[str], object], thing: Any
    ) -> None:
        """TRN-9: insert `thing`, recognising one an earlier delivery of the turn made."""
        self.journal.insert_once(insert, lookup, thing)

    def created_earlier(self, lookup: Callable[[str], object], thing_id: str) -> bool:
        """TRN-9: True when an earlier delivery of the turn created `thing_id`."""
        return self.journal.created_earlier(lookup, thing_id)

    def restore(self, cmd: Command, entry: ReportEntry) -> None:
        """TRN-9 / VAL-8: block `cmd` was applied by an earlier delivery of the turn with
        `entry`; a task it created counts as this turn's child again and its @NAME
        resolves (the kind's row says whether it creates one and which field names it)."""
        spec = kind_of(cmd.kind)
        if spec is not None and spec.creates_task and entry.outcome == "done" and entry.target:
            self.register_created(param_text(cmd.params, spec.task_name_field), entry.target)

    # ---- what handlers add to the turn -------------------------------------------------

    def queue_after_report(self, text: str) -> None:
        """GOA-2: queue `text` for the sender after this turn's report message."""
        self._followups.append(text)

    def register_created(self, name: str | None, task_id: str) -> None:
        """LIN-3 / VAL-8: a task this turn created, under its @NAME (when unambiguous)."""
        self._children_created += 1
        if name is not None and name not in self._ambiguous_names:
            self._created[name] = task_id

    # ---- @NAME references (VAL-8) -----------------------------------------------------

    def name_ambiguous(self, name: str) -> bool:
        """VAL-8: True when two task-creating blocks of this turn use `name`."""
        return name in self._ambiguous_names

    def resolve_task_id(self, raw: str) -> str | Msg:
        """A literal id is returned as is; `@NAME` becomes the id created this turn, or a
        Msg saying why it cannot be resolved (a tool call never resolves one: TOL-2)."""
        if not raw.startswith("@"):
            return raw
        if self.facts.source == "tool":  # TOL-2: a call is a one-block turn; it names ids
            return msg("deliver.ref_in_call", ref=shown(raw))
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
    """VAL-8: names used by two task-creating blocks of the turn - two commands, or a
    command and a block that will not run (skipped, unclosed, over the cap)."""
    seen: set[str] = set()
    dup: set[str] = set()
    for cmd in plan.commands:
        spec = kind_of(cmd.kind)
        name = param_text(cmd.params, spec.task_name_field) if spec is not None else None
        if name is not None:
            (dup if name in seen else seen).add(name)
    dup.update(seen.intersection(plan.unexecuted_create_names))
    return frozenset(dup)


# ---- handlers: keyed by the params class they take (Rule 3) ------------------------------


@attrs.frozen
class Handler(Generic[P]):
    """A kind's handler and the params class it takes. Delivery dispatches a command to
    the handler keyed by `type(cmd.params)`, so `run` receives params of exactly that
    class: `Handler(TaskCreateParams, handle_create)` type-checks only when
    `handle_create` takes a TaskCreateParams."""

    params: type[P]
    run: Callable[[Command, P, TurnContext], ReportEntry]


# One handler per params class. The values are Handler[Any]: each entry's own pairing of
# class and function is what `Handler(...)` checked; a mapping cannot say it per key.
HandlerTable = Mapping[type[Params], Handler[Any]]


def handler_table(*handlers: Handler[Any]) -> HandlerTable:
    """The table of `handlers`; a params class registered twice raises RuntimeError."""
    table: dict[type[Params], Handler[Any]] = {}
    for handler in handlers:
        if handler.params in table:
            raise RuntimeError(f"{handler.params.__name__} has two handlers")
        table[handler.params] = handler
    return table


# ---- shared by the handler families --------------------------------------------------------


def permission_refusal(ctx: TurnContext, permission: str, prefix: str) -> Msg | None:
    """None when the sender's creator holds `permission`; else the refusal, keyed
    `<prefix>.permission_failed` (lookup failed, GAT-4) or `<prefix>.no_permission`."""
    answer = ctx.permission(permission)
    if answer.granted and not answer.failed:
        return None
    if answer.failed:
        return msg(f"{prefix}.permission_failed", permission=permission, error=answer.error or "?")
    return msg(
        f"{prefix}.no_permission",
        permission=permission,
        user=shown(ctx.sender.created_by),
        project=shown(ctx.sender.project_id),
    )


def new_id(ctx: TurnContext, prefix: str, lookup: Callable[[str], object]) -> str:
    """An id from the random port (`prefix` + hex), redrawn while `lookup(id)` finds a row
    (returns something other than None). With a turn id: the derived id (TRN-9), as is."""
    derived = ctx.derived_id(prefix, ID_BYTES)
    if derived is not None:
        return derived
    candidate = prefix + ctx.ports.random.token_hex(ID_BYTES)
    for _ in range(_ID_DRAWS):
        if lookup(candidate) is None:
            return candidate
        candidate = prefix + ctx.ports.random.token_hex(ID_BYTES)
    return prefix + ctx.ports.random.token_hex(ID_BYTES * 2)
