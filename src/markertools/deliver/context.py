# Owns: the per-turn `TurnContext` the kind handlers receive (facts read once per turn,
# permission and quota answers, the @NAME table, follow-ups to queue after the report),
# the `Handler` signature; it passes on `summarize_error` (TRN-8, domain/errors.py) to the
# handlers. Handlers import this module;
# it imports no handler and not the delivery loop.
#
# Invariants:
#   Rule 1: every port read it makes is cached for the turn where the rule says "once
#           per turn" (DOM-6 permissions, CRE-3 quota, LIN-1 generation, LIN-3 children).
#   Rule 2: `summarize_error` never raises, whatever the exception (TRN-8).
from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable
from typing import Any, Final, Literal

from markertools.deliver.lineage import LINEAGE_MAX_STEPS, generation, in_lineage
from markertools.deliver.render import shown
from markertools.deliver.report import EntryOutcome, ReportEntry
from markertools.domain.decision import PermissionAnswer
from markertools.domain.errors import summarize_error as summarize_error  # for the handlers
from markertools.domain.model import Task, quota_exhausted, sender_cancelled
from markertools.domain.ports import Ports
from markertools.parse.plan import Command, TurnPlan
from markertools.text.msg import Msg, msg

Handler = Callable[[Command, "TurnContext"], ReportEntry]
StopCause = Literal["deadline", "cancelled"]  # TRN-11: why a delivery stopped waiting

ID_BYTES: Final[int] = 6  # todo and automation ids: prefix + 12 hex digits
_ID_DRAWS: Final[int] = 8


class TurnContext:
    """Per-turn facts and caches shared by the handlers of one delivery.

    Mutable on purpose (it is the turn's scratchpad, never stored): the sender as last
    read, permission answers (looked up at most once per permission per turn), the quota
    verdict (checked once per turn, CRE-3 / AUT-4), the `@NAME` table (VAL-8), the count
    of children created this turn (LIN-3) and follow-ups to queue after the report.
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
    ) -> None:
        self.sender = sender
        self.ports = ports
        self.locale = locale
        self.plan = plan
        self.turn_id = turn_id  # TRN-9: ids of created things derive from it
        self.position = 0  # the running block's position in execution order
        self.deadline_at = deadline_at  # TRN-11: clock time when waiting must stop
        self.deadline_seconds = deadline_seconds  # TRN-11: the deadline as the caller gave it
        self._cancel = cancel
        self.stopped = False  # set once the deadline passed or cancellation was asked
        self.stop_cause: StopCause | None = None  # why `stopped` was set
        self.restored_children = 0  # TRN-9: creates of this turn applied by an earlier delivery
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

    def stop_waiting(self) -> bool:
        """TRN-11: True (and stays True) once the delivery's deadline passed or its
        cancellation signal is set; polls and waits then end with "stopped waiting", and
        `stop_cause` says which of the two it was."""
        if not self.stopped:
            if self._cancel is not None:
                with contextlib.suppress(Exception):
                    self.stopped = bool(self._cancel())
                if self.stopped:
                    self.stop_cause = "cancelled"
            if not self.stopped and self.deadline_at is not None:
                self.stopped = self.now() >= self.deadline_at
                if self.stopped:
                    self.stop_cause = "deadline"
        return self.stopped

    def derived_id(self, prefix: str, nbytes: int) -> str | None:
        """TRN-9: with a turn id, the id of the thing the running block creates, derived
        from (sender, turn id, position) - the same on every delivery of the turn, so a
        re-insert is recognised, never duplicated. None without a turn id."""
        if self.turn_id is None:
            return None
        seed = f"{self.sender.id}\x00{self.turn_id}\x00{self.position}".encode()
        return prefix + hashlib.sha256(seed).hexdigest()[: nbytes * 2]

    def insert_once(
        self, insert: Callable[[Any], None], lookup: Callable[[str], object], thing: Any
    ) -> None:
        """Insert `thing`; TRN-9: when that fails because its derived id already exists
        (an earlier delivery of this turn created it but could not record the block),
        it is recognised, never created twice. Any other failure propagates."""
        try:
            insert(thing)
        except Exception:
            if self.turn_id is None or lookup(thing.id) is None:
                raise

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
            self._existing_children = max(0, count - self.restored_children)
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
