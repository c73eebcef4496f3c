# Owns: the ports (docs/rules.md the ports) — the only ways the core reaches the world — as
# typing.Protocol classes, the small value types they return, and the `Ports`
# bundle delivery receives. Adapters (markertools_adapters.*) implement them; the
# shared contract test suite (tests/contract/) holds every storage adapter to the
# semantics written in these docstrings.
#
# Invariants:
#   Rule 1: every state transition is compare-and-set: the adapter changes a row only
#           when its status still equals the expected one, atomically, and says
#           whether it did (CTL-4, SCH-4, ATT-2). Never read-then-write in Python.
#   Rule 2: a port may raise; delivery catches it and rejects only that block (TRN-8).
#   Rule 3: no port method returns a mutable view of adapter state.
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from decimal import Decimal
from typing import Protocol, runtime_checkable

import attrs

from markertools.domain.approvals import ApprovalRequest, ApprovalRule
from markertools.domain.change import TaskChange
from markertools.domain.errors import MarkertoolsError
from markertools.domain.lease import Affinity, Checkpoint, FleetSnapshot, Lease
from markertools.domain.model import (
    Attempt,
    AuditRecord,
    Automation,
    CostRow,
    FinishedTurn,
    LineageLink,
    Project,
    Quota,
    StartKind,
    Task,
    Todo,
    TurnCost,
    TurnOutcome,
)
from markertools.text.msg import Msg

# ---- values returned by ports --------------------------------------------------


@attrs.frozen
class TaskListing:
    """task-list answer (TLS-2): newest first (created_at desc, then id desc)."""

    rows: tuple[Task, ...]
    total: int  # number of matching tasks (before the limit)
    counts: tuple[tuple[str, int], ...]  # (status, count) for the whole match, by status name


@attrs.frozen
class TodoListing:
    """todo-list / injection answer: rows in listing order (see TodoStore.list_todos)."""

    rows: tuple[Todo, ...]
    total: int


@attrs.frozen
class KillResult:
    """What the executor did on cancel (CTL-2). `signalled` False = no live process."""

    signalled: bool
    detail: str = ""


@attrs.frozen
class FileListing:
    """A task-files directory listing (FIL-3): the first entries, and how many were left out."""

    entries: tuple[str, ...]  # first 50 names sorted, directories with a trailing "/"
    omitted: int  # entries left out


@attrs.frozen
class FileText:
    """A task-files read (FIL-4): the text (at most the requested code points), whether it
    was truncated, and the file's size when known."""

    path: str
    text: str  # at most the requested code points
    truncated: bool
    total_chars: int | None = None  # when known (None when the reader stopped early)
    size_bytes: int | None = None  # additive: the file's size in bytes, when known


@attrs.frozen
class FileRefused:
    """A task-files read or listing refused, with the catalogue message `reason`."""

    reason: Msg


FileAnswer = FileListing | FileText | FileRefused


@attrs.frozen
class Claim:
    """What `TaskClaimer.claim_task` hands a worker (INJ-1): the claimed task (now
    `running` on the host), what kind of start this is (`start_kind`, decided from the
    data in the claim's transaction) and the follow-ups that were queued for it - taken,
    i.e. marked consumed, in the same transaction. A CONTINUATION claim's follow-ups are
    the agent's next input; send them, not a report's texts (the queue is the only
    channel, TRN-6)."""

    task: Task
    start: StartKind
    followups: tuple[str, ...] = ()

    @property
    def epoch(self) -> int:
        """FLT-1: the claim's fencing number (the claimed task's `epoch`): larger than
        every earlier claim's of the task. Pass the Claim as `claim=` to every write of
        the attempt; once another claim holds the task, such writes raise LeaseLost."""
        return self.task.epoch

    @property
    def task_id(self) -> str:
        return self.task.id


@attrs.frozen
class PendingTurn:
    """FLT-2: a turn whose delivery began (its first effect may have happened) and did
    not finish: what the next runner of the task needs to complete it. `text` is None
    when the turn was delivered as a parsed plan (it cannot be redelivered from here)."""

    task_id: str
    turn_id: str
    epoch: int
    outcome: str
    locale: str
    text: str | None
    recorded_at: float


@attrs.frozen
class RequeueResult:
    """ATT-2 outcome: `ok` False means nothing changed; `error` says why."""

    ok: bool
    attempt: Attempt | None = None
    error: str | None = None


class AutomationNameTaken(MarkertoolsError):
    """AutomationStore.insert_automation refused an active automation because an active
    automation of the same project already has its name (AUT-3). Raised by the store
    itself, atomically with the insert, so two concurrent deliveries that both saw the
    name free cannot both register it; nothing was written."""

    def __init__(self, project_id: str, name: str) -> None:
        super().__init__(project_id, name)  # picklable: args rebuild the exception
        self.project_id = project_id
        self.name = name

    def __str__(self) -> str:
        return f"an active automation of project {self.project_id!r} is already named {self.name!r}"


# ---- ports -------------------------------------------------------------------------


@runtime_checkable
class Clock(Protocol):
    """Port: the current time and sleeping (DOM-5); tests pass a virtual clock."""

    def now(self) -> float:
        """Epoch seconds, UTC (DOM-5)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Block for `seconds` (a virtual clock advances instantly)."""
        ...


@runtime_checkable
class RandomSource(Protocol):
    """Port: randomness for nonces (INJ-7) and generated ids; tests pass a seeded one."""

    def token_hex(self, nbytes: int) -> str:
        """`2*nbytes` lowercase hex characters (nonces INJ-7, generated ids)."""
        ...


class TaskStore(Protocol):
    """Port: the task table - reads, lineage walks, inserts and compare-and-set transitions."""

    def get_task(self, task_id: str) -> Task | None: ...

    def get_tasks(self, task_ids: Sequence[str]) -> Mapping[str, Task]:
        """All existing tasks among `task_ids` in ONE storage query (WAI-4); missing ids absent."""
        ...

    def lineage(self, task_id: str, max_steps: int) -> tuple[LineageLink, ...]:
        """The parent walk in ONE query: the task itself (depth 0), its parent (depth 1), ...

        Stops after depth `max_steps`, or when a parent id names no row (that id is not
        included), or at a task with no parent. No cycle detection: a cycle repeats
        until the depth bound, identically in every adapter. Unknown task -> ().
        """
        ...

    def count_children(self, parent_id: str) -> int:
        """Direct children (parent_task_id = parent_id) that are not coordinator subtasks."""
        ...

    def insert_task(self, task: Task) -> None:
        """Insert a new task; an existing id raises."""
        ...

    def transition_task(
        self, task_id: str, expected_status: str, changes: TaskChange | Mapping[str, object]
    ) -> Task | None:
        """Compare-and-set: apply `changes` (a `TaskChange`, may include `status`) only if
        the row exists and its status is `expected_status`; return the new row, else None.

        A field -> value mapping is accepted too (older callers): it goes through
        `TaskChange.of`, so a field a transition cannot change raises ValueError naming it
        before anything changes. The core passes TaskChange values only; a TaskChange is
        itself a read-only mapping of the fields it sets."""
        ...

    def list_tasks(
        self, project_id: str, *, status: str | None, q: str | None, limit: int
    ) -> TaskListing:
        """TLS-1/2: tasks of the project, optional exact status, optional case-insensitive
        substring `q` of the prompt; newest first (created_at desc, id desc)."""
        ...


class TodoStore(Protocol):
    """Port: a project's todo list - reads, listing, inserts and compare-and-set updates."""

    def get_todo(self, todo_id: str) -> Todo | None: ...

    def list_todos(
        self, project_id: str, *, statuses: Collection[str], q: str | None, limit: int
    ) -> TodoListing:
        """Todos of the project with status in `statuses`, optional case-insensitive substring
        `q` of title or description. Order: sort_order ascending with nulls last, then
        created_at ascending, then id ascending."""
        ...

    def insert_todo(self, todo: Todo) -> None: ...

    def update_todo(
        self, todo_id: str, expected_status: str, changes: Mapping[str, object]
    ) -> Todo | None:
        """Compare-and-set on the todo's status, like transition_task."""
        ...


class AutomationStore(Protocol):
    """Automation definitions (docs/rules.md AUT, SCH). Names are unique among a project's
    active automations (AUT-3): insert_automation enforces it and raises
    AutomationNameTaken, which automation-create reports as a rejection."""

    def get_automation(self, automation_id: str) -> Automation | None: ...

    def active_automation_names(self, project_id: str) -> frozenset[str]:
        """Names of the project's automations whose status is "active" (AUT-3)."""
        ...

    def insert_automation(self, automation: Automation) -> None:
        """Insert a new automation. An existing id raises ValueError. An active
        `automation` whose name an active automation of the same project already has
        raises AutomationNameTaken and writes nothing - checked atomically with the insert
        (a unique index, a lock), so of concurrent inserts of one name exactly one wins."""
        ...

    def due_automations(self, now: float) -> tuple[Automation, ...]:
        """Active automations with is_due(a, now) (SCH-5), ordered by id."""
        ...

    def claim_automation(self, automation_id: str, slot: float, now: float) -> bool:
        """SCH-4 compare-and-set: record a run of `slot` at `now` only if the automation is
        still due for exactly that slot; of concurrent claimers exactly one wins."""
        ...


class ProjectLookup(Protocol):
    """Port: a project by id (None when there is no such project)."""

    def get_project(self, project_id: str) -> Project | None: ...


class CostLookup(Protocol):
    """Port: a task's cost rows, a user's quota and unpriced tokens (COS, QUO)."""

    def task_costs(self, task_id: str) -> tuple[CostRow, ...]: ...

    def get_quota(self, user: str) -> Quota | None: ...

    def unpriced_tokens(self, user: str) -> int:
        """Actual (not estimated) tokens on unpriced cost rows of the user's tasks (QUO-2).
        A row is unpriced when `priced` is false or `usd` is null (see _exec_read.is_priced)."""
        ...


class AttemptLedger(Protocol):
    """Port: the attempts ledger of platform restarts (ATT-1..5)."""

    def requeue_platform(
        self,
        task_id: str,
        expected_status: str,
        kind: str,
        checkpoint_round: int,
        now: float,
        *,
        reason: str | None = None,
    ) -> RequeueResult:
        """ATT-2 in ONE transaction: record the ending attempt (attempt_no = auto_resume_count
        + 1, texts cut to 2000), clear result_text / error_text / interrupted_reason, raise
        auto_resume_count, set status queued - only if the task's status is still
        `expected_status`. Any failure rolls everything back and is returned, not raised.
        `reason` (FLT-2), when given, is the ledger row's interruption reason (the cause:
        a shutdown, a lost lease, a store outage) instead of the task's own.
        APR-5: the same transaction expires the task's pending approval requests
        (answered_by "requeue", the reason `requeue_expiry_reason` gives)."""
        ...

    def latest_attempt(self, task_id: str) -> Attempt | None:
        """ATT-3: None when the table is missing, there are no rows or a row is malformed;
        never raises."""
        ...

    def list_attempts(self, task_id: str) -> tuple[Attempt, ...]:
        """ATT-5: the task's attempts ordered by attempt_no."""
        ...


class AuditLog(Protocol):
    """Port: the audit log; delivery writes one record per executed or rejected block
    and per discarded turn (TRN-3, TRN-7)."""

    def record_audit(self, record: AuditRecord) -> None: ...


class FollowupQueue(Protocol):
    """Port: the queue of follow-up messages, each a task's next turn input."""

    def enqueue_followup(self, task_id: str, text: str) -> None:
        """Queue `text` as the task's next turn input, after those already queued."""
        ...


class PermissionLookup(Protocol):
    """Port: may this user do this on this project (DOM-6)? Raising = a failed lookup."""

    def has_permission(self, user: str | None, project_id: str, permission: str) -> bool:
        """DOM-6. May raise: callers treat a failure per GAT-2 / GAT-4."""
        ...


class TaskExecutor(Protocol):
    """Port: stops a task's processes on cancel (CTL-2): process group, container, cloud run."""

    def kill(self, task: Task) -> KillResult:
        """Kill the task's process group or container (CTL-2). No live process is not an
        error (signalled=False). Raises when the kill itself failed."""
        ...


class TaskFiles(Protocol):
    """task-files reads (FIL-1..5). `local_host` is the host the resolver serves."""

    @property
    def local_host(self) -> str | None: ...

    def read(self, task: Task, path: str | None, max_chars: int) -> FileAnswer:
        """List the worktree's top level (path None or "") or read one file, safely."""
        ...


class ChangeWaiter(Protocol):
    """Optional early wake-up for poll/wait (e.g. PostgreSQL LISTEN/NOTIFY)."""

    def wait_for_change(self, task_ids: Sequence[str], seconds: float) -> None:
        """Return after `seconds`, or earlier when one of `task_ids` changed status."""
        ...


class DeliveryJournal(Protocol):
    """TRN-9: what delivery records so a turn delivered again (same sender and turn id)
    applies each block's effect at most once: one row per (sender, turn id, position),
    opaque JSON text the delivery loop writes and reads back (`markertools.deliver.codec`).
    Positions: 0.. the blocks in execution order, -1 the queued report, -2 the finished
    delivery's report, -3 the digest of the turn's input (a turn id delivered again with
    other input is refused). Three methods are all a store needs."""

    def block_entries(self, sender: str, turn_id: str) -> Mapping[int, str]:
        """Position -> stored row of everything already recorded for this turn."""
        ...

    def record_block(self, sender: str, turn_id: str, position: int, entry: str) -> None:
        """Store a row (a second write for the same key keeps the first); inside
        `atomic()` it commits with the block's effect."""
        ...

    def atomic(self) -> AbstractContextManager[None]:
        """One transaction around a block's effect and its `record_block`: both happen
        or neither (a store without transactions may make this a no-op)."""
        ...


@attrs.frozen
class StoredToken:
    """A task token as a store keeps it (TOL-3): only the SHA-256 hash of the secret, the
    task it binds, its expiry (epoch seconds) and whether it was revoked."""

    token_hash: str
    task_id: str
    expires_at: float
    revoked: bool = False


class TaskTokenStore(Protocol):
    """Port: task tokens (TOL-3). The secret itself is never stored, only its hash."""

    def get_task(self, task_id: str) -> Task | None: ...

    def insert_task_token(self, token_hash: str, task_id: str, expires_at: float) -> bool:
        """Store a token's hash for `task_id` only while the task exists and is `running`,
        atomically with that check; False (nothing written) otherwise. A hash stored
        already raises ValueError."""
        ...

    def task_token(self, token_hash: str) -> StoredToken | None:
        """The stored token with this hash, or None."""
        ...

    def revoke_task_tokens(self, task_id: str) -> int:
        """Revoke every unrevoked token of the task; how many were revoked. Every store
        also revokes them in the same transaction as any change that takes the task out
        of `running` (transition_task, finish_turn, requeue_platform, ...)."""
        ...


class CallLedger(Protocol):
    """Port: what same-turn tool calls need beyond the block ports (TOL-4, TOL-7): the
    per-turn use of each kind (blocks and calls share the caps) and the follow-ups a call
    holds until its turn's report is queued."""

    def turn_usage(self, task_id: str, turn: int) -> Mapping[str, int]:
        """Canonical kind -> how many tool calls of that kind the task made in `turn`."""
        ...

    def record_turn_use(self, task_id: str, turn: int, kind: str) -> int:
        """Count one more call of canonical `kind` in (task, turn), atomically; returns
        the new count (1 for the first) - the call's position for the kind's cap."""
        ...

    def hold_followup(self, task_id: str, turn: int, text: str) -> None:
        """Keep `text` (a "/goal ..." follow-up) until the turn's report is queued."""
        ...

    def release_held_followups(self, task_id: str) -> tuple[str, ...]:
        """Queue every held follow-up of the task (after what is queued already, in the
        order they were held) and forget them, atomically; the texts queued. Stores also
        do this at the start of `take_followups` / `claim_task`, so a turn that queued no
        report still hands them to the next turn."""
        ...


class TaskClaimer(Protocol):
    """The worker loop: take the next queued task of a project (oldest first)."""

    def claim_next_task(self, project_id: str, host: str) -> Task | None:
        """Compare-and-set the oldest queued task of `project_id` to running on `host`,
        advancing its `turn` by 1 (TOL-4), and return it; None when none is queued. Two
        hosts never claim one task. The order is `markertools.pick_claim`'s: a task with
        another host's live affinity or a creator over quota is passed over (WRK-6,
        WRK-8), one with this host's affinity comes first.
        (Kept for compatibility: `claim_task` also says what kind of start it is.)"""
        ...

    def claim_task(
        self,
        project_id: str,
        host: str,
        *,
        now: float | None = None,
        lease_seconds: float | None = None,
    ) -> Claim | None:
        """INJ-1: claim like `claim_next_task` and, in the same transaction, take the
        task's queued follow-ups (consumed, in queue order) and read its latest attempt;
        the Claim's `start` is `markertools.start_kind(task, latest_attempt, followups)`.
        None when no task is queued.
        With `lease_seconds` (WRK-6) the same transaction writes the task's lease (host,
        now + lease_seconds; `now` defaults to the store's clock) and the claim skips
        tasks whose affinity belongs to another host until it ends (tasks with affinity
        to this host first, then oldest first), and tasks whose creator's quota is
        exhausted (WRK-8, `quota_exhausted`: held by quota)."""
        ...


class FollowupTaker(Protocol):
    """Port (worker side): take a task's queued follow-ups, each exactly once."""

    def take_followups(self, task_id: str, *, claim: Claim | None = None) -> tuple[str, ...]:
        """The task's queued follow-ups, in queue order, marked consumed atomically (a
        second call returns only those queued since). Held follow-ups of the task
        (CallLedger) are queued first. When at least one is handed out a new turn starts:
        the task's `turn` advances by 1 in the same transaction (TOL-4). With `claim`
        (FLT-1) it is fenced: LeaseLost, nothing taken, once the claim lost the task."""
        ...

    def set_thread_id(self, task_id: str, thread_id: str | None) -> None:
        """Store the agent session (e.g. the Codex thread) the task runs in."""
        ...


class AutomationAdmin(Protocol):
    """SCH-7: managing automations."""

    def list_automations(self, project_id: str | None) -> tuple[Automation, ...]:
        """The automations of a project (None: of every project)."""
        ...

    def set_automation_status(
        self, automation_id: str, expected_status: str, status: str
    ) -> Automation | None:
        """Compare-and-set the automation's status; None when missing or changed."""
        ...

    def update_automation(
        self, automation_id: str, changes: Mapping[str, object]
    ) -> Automation | None:
        """Change prompt / interval / first run / once, keeping SCH-1..3 consistent;
        None when the automation does not exist."""
        ...


class RecordWriter(Protocol):
    """Incremental writers for an existing store (projects, permissions, quotas, costs)."""

    def put_project(self, project: Project) -> None: ...

    def set_permissions(self, user: str, project_id: str, grants: Collection[str]) -> None: ...

    def put_quota(self, quota: Quota) -> None: ...

    def charge_quota(self, user: str, usd: Decimal | int | float | str) -> Quota | None:
        """Add `usd` (money: whole micro-dollars, exact; a negative amount is a
        ValueError) to the user's spent amount atomically; None when the user has no
        quota."""
        ...

    def record_cost(self, row: CostRow) -> None:
        """Append a cost row. A row for a task the store lacks is refused with the
        store's documented unknown-task error (markertools_adapters.errors.UnknownTask for
        the bundled stores), nothing written."""
        ...


class TurnFinisher(Protocol):
    """TRN-9: the unit of work at the end of a turn."""

    def finish_turn(
        self,
        task_id: str,
        turn_id: str,
        *,
        outcome: TurnOutcome | str,
        result_text: str | None = None,
        error_text: str | None = None,
        cost: TurnCost | CostRow | None = None,
        requeue: bool = False,
        claim: Claim | None = None,
    ) -> FinishedTurn:
        """In ONE transaction, at most once per (task_id, turn_id): compare-and-set the
        task from `running` to `finished_status(outcome, requeue=requeue)` with
        `result_text` / `error_text` (when given); record `cost` as the task's cost row
        (a TurnCost gets the task's next round: 1 + the highest round so far, or 1); and
        charge the task creator's quota with a priced cost's dollars (no creator or no
        quota record: nothing charged). A task no longer running is left as it is, its
        cost still recorded and charged (`changed=False`). Calling it again with the
        same (task_id, turn_id) changes nothing and returns the first result with
        `replayed=True` - when the input is the same: another outcome, result, error or
        cost for a finished turn id raises TurnFinishedDifferently (FLT-6), nothing
        written. An unknown task raises the unknown-task error and writes nothing; a bad
        outcome is a ValueError (TRN-10). With `claim` (FLT-1) it is fenced: LeaseLost,
        nothing written, once the claim no longer holds the task (a replay of a turn the
        claim finished itself is still answered)."""
        ...

    def charge_turn(
        self,
        task_id: str,
        turn_id: str,
        cost: TurnCost | CostRow,
        *,
        claim: Claim | None = None,
    ) -> FinishedTurn:
        """FLT-2: the cost row and the quota charge of a turn that is not the task's last,
        in ONE transaction, once per (task_id, turn_id) (a TurnCost gets the task's next
        round, as in finish_turn). The task's status is left alone (`changed=False`). A
        repeat with the same cost replays (`replayed=True`); another cost raises
        TurnFinishedDifferently. Fenced with `claim` as finish_turn is."""
        ...


class Fencing(Protocol):
    """Port (FLT-1, FLT-2): fenced writes and the turns a crash left half-delivered.
    Every bundled store implements it (`Ports.fencing`)."""

    def fenced(self, claim: Claim) -> AbstractContextManager[None]:
        """One transaction (as `DeliveryJournal.atomic`: every store call inside joins
        it) that first checks, inside itself, that `claim` still holds its task (the
        task's epoch is the claim's and the task is `running`) and raises LeaseLost -
        nothing written - when it does not. Nested calls join the outer transaction."""
        ...

    def pending_turns(self, task_id: str) -> tuple[PendingTurn, ...]:
        """FLT-2: the task's turns whose delivery began and did not finish, oldest
        first."""
        ...


class ApprovalStore(Protocol):
    """Port: approval requests and a project's approval rules (APR-1..5,
    docs/approvals.md). Every bundled store implements it (`Ports.approvals`). A request
    moves only pending -> approved | denied | expired, once, by compare-and-set (house
    rule 6): of two answers exactly one wins."""

    def insert_approval(self, request: ApprovalRequest) -> ApprovalRequest:
        """APR-1: store `request` (checked with `check_request`) for its task, atomically
        with the check that the task exists and is `running`: the stored row, whose
        `project_id` and `attempt` (the task's auto_resume_count) come from the task row.
        A task that is missing or not running, an id stored already or a bad field raise
        ValueError, nothing written. A request may be stored answered already (a rule
        answered it, APR-2)."""
        ...

    def get_approval(self, approval_id: str) -> ApprovalRequest | None: ...

    def list_approvals(
        self,
        project_id: str | None = None,
        *,
        statuses: Collection[str] | None = None,
        task_id: str | None = None,
    ) -> tuple[ApprovalRequest, ...]:
        """Requests of a project (None: every project), optionally only these statuses
        and one task's; by asked_at, then id."""
        ...

    def pending_approvals(
        self, task_ids: Sequence[str]
    ) -> Mapping[str, tuple[ApprovalRequest, ...]]:
        """APR-4: the pending requests of the RUNNING tasks among `task_ids`, in ONE
        storage query: task id -> its requests (by asked_at, then id); tasks without one
        are absent."""
        ...

    def answer_approval(
        self,
        approval_id: str,
        status: str,
        *,
        answered_by: str,
        reason: str | None,
        now: float,
    ) -> ApprovalRequest | None:
        """APR-3 compare-and-set: set `status` ("approved" or "denied"), `answered_by`,
        `answer_reason` and `answered_at` = now only while the request is pending, its
        expiry is after `now` and its task is running; the new row, else None (nothing
        changed). Another status is a ValueError."""
        ...

    def expire_approval(
        self, approval_id: str, *, answered_by: str, reason: str, now: float
    ) -> ApprovalRequest | None:
        """APR-1: compare-and-set a pending request to `expired` (whatever the time or its
        task's status), recording who expired it (`expiry`, `withdrawn`, ...) and why; the
        new row, else None (answered meanwhile, or unknown)."""
        ...

    def add_approval_rule(self, rule: ApprovalRule) -> ApprovalRule:
        """APR-2: store `rule` (checked with `approval_rules.check_rule`) after the
        project's other rules: the stored rule, its `position` one above the project's
        highest. An id stored already or a bad rule raise ValueError, nothing written."""
        ...

    def approval_rules(self, project_id: str) -> tuple[ApprovalRule, ...]:
        """APR-2: the project's rules in the order they are tried (position, then id)."""
        ...

    def get_approval_rule(self, rule_id: str) -> ApprovalRule | None: ...

    def remove_approval_rule(self, rule_id: str) -> bool:
        """Delete the rule; False when there was none."""
        ...


@attrs.frozen
class Ports:
    """Everything delivery may touch. One adapter object may fill several fields."""

    tasks: TaskStore
    todos: TodoStore
    automations: AutomationStore
    projects: ProjectLookup
    costs: CostLookup
    attempts: AttemptLedger
    audit: AuditLog
    followups: FollowupQueue
    permissions: PermissionLookup
    executor: TaskExecutor
    clock: Clock
    random: RandomSource
    files: TaskFiles | None = None  # None: task-files reports that no resolver is configured
    waiter: ChangeWaiter | None = None  # None: poll/wait sleep on the clock
    journal: DeliveryJournal | None = None  # None: a turn id can not be honoured (TRN-9)
    calls: CallLedger | None = None  # None: no same-turn tool calls (deliver_call refuses)
    fencing: Fencing | None = None  # None: `claim=` is refused (the store cannot fence)
    approvals: ApprovalStore | None = None  # None: approval-answer is refused (APR-3)


class LeaseStore(Fencing, Protocol):
    """Port: leases, affinity, goal checkpoints and the fleet snapshot (WRK-6, WRK-7,
    WRK-8, WRK-10). Every bundled store implements it; a lease goes away in the same
    transaction as any change that takes its task out of `running`."""

    def claim_task(
        self,
        project_id: str,
        host: str,
        *,
        now: float | None = None,
        lease_seconds: float | None = None,
    ) -> Claim | None:
        """See `TaskClaimer.claim_task`."""
        ...

    def renew_leases(
        self,
        host: str,
        task_ids: Collection[str | Claim],
        *,
        lease_seconds: float,
        now: float,
    ) -> tuple[str, ...]:
        """Extend to now + lease_seconds the leases `host` still holds on running tasks
        among `task_ids`; the ids still held (in the order given). A task requeued or
        taken meanwhile is left out: the host must stop it. A Claim in `task_ids` is
        fenced (FLT-1): renewed only while the task's epoch is still the claim's."""
        ...

    def record_process_group(
        self,
        task_id: str,
        host: str,
        pgid: int,
        *,
        machine_id: str | None,
        now: float,
        engine: str | None = None,
    ) -> None:
        """Record the agent's process group of the task on its lease (only while `host`
        holds it; otherwise nothing changes), and the host's engine (ENG-1, additive: a
        store without the keyword records none)."""
        ...

    def get_lease(self, task_id: str) -> Lease | None:
        """The task's lease, or None."""
        ...

    def expired_leases(self, now: float, project_id: str | None = None) -> tuple[Lease, ...]:
        """Leases of running tasks with expires_at <= now (optionally of one project),
        by task id."""
        ...

    def requeue_expired(
        self,
        task_id: str,
        expected_host: str,
        now: float,
        *,
        affinity_seconds: float,
        kind: str = "platform_fresh",
        checkpoint_round: int = -1,
        reason: str | None = None,
    ) -> RequeueResult:
        """WRK-6 in ONE transaction, only while the task is still running on
        `expected_host` with a lease expired at `now`: the ATT-2 requeue (ledger row of
        `kind`, cleared fields, auto_resume_count + 1, queued), the lease dropped and the
        affinity (expected_host, now + affinity_seconds) set. Of two concurrent callers
        exactly one gets ok=True; the other gets ok=False with the reason. `reason`
        (FLT-2) is the ledger row's interruption cause (e.g. the host stopped renewing
        its lease). The task's pending approval requests expire in the same transaction
        (APR-5), as in requeue_platform."""
        ...

    def get_affinity(self, task_id: str) -> Affinity | None:
        """The task's affinity (also one that has lapsed), or None."""
        ...

    def unleased_running(self, project_id: str | None = None) -> tuple[str, ...]:
        """Running tasks (of one project) that no lease holds - loaded as `running` from a
        world file, or claimed without a lease - by id: no host renews them, so the
        worker host recovers them like expired leases (WRK-6)."""
        ...

    def release_lease(self, task_id: str, host: str) -> None:
        """Drop the task's lease if `host` holds it (the host ended the task)."""
        ...

    def cancelled_among(self, task_ids: Collection[str]) -> tuple[str, ...]:
        """Which of these tasks are no longer running (cancelled elsewhere, or gone), in
        the order given."""
        ...

    def record_checkpoint(
        self,
        task_id: str,
        round: int,
        *,
        thread_id: str | None,
        turn_id: str | None,
        now: float,
        claim: Claim | None = None,
    ) -> None:
        """WRK-7: the task completed goal round `round` (replaces the last checkpoint).
        Fenced with `claim` (FLT-1)."""
        ...

    def last_checkpoint(self, task_id: str) -> Checkpoint | None:
        """WRK-7: the task's last checkpoint, or None."""
        ...

    def mark_awaited(self, waiter_id: str, target_ids: Collection[str]) -> None:
        """FLT-5: `waiter_id` waits for these tasks now (replacing what it waited for
        before): a queued task that a queued or running task waits for is claimed before
        every task nobody waits for."""
        ...

    def clear_awaited(self, waiter_id: str) -> None:
        """FLT-5: `waiter_id` waits for nothing any more."""
        ...

    def fleet_snapshot(self, project_id: str | None, now: float) -> FleetSnapshot:
        """WRK-10: tasks per status, hosts with live leases (expires_at > now) and their
        running tasks (turn, claim time), queued tasks held by their creator's quota."""
        ...
