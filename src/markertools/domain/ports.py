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
from typing import Protocol, runtime_checkable

import attrs

from markertools.domain.model import (
    Attempt,
    AuditRecord,
    Automation,
    CostRow,
    LineageLink,
    Project,
    Quota,
    Task,
    Todo,
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
    entries: tuple[str, ...]  # first 50 names sorted, directories with a trailing "/"
    omitted: int  # entries left out


@attrs.frozen
class FileText:
    path: str
    text: str  # at most the requested code points
    truncated: bool
    total_chars: int | None = None  # when known (None when the reader stopped early)
    size_bytes: int | None = None  # additive: the file's size in bytes, when known


@attrs.frozen
class FileRefused:
    reason: Msg


FileAnswer = FileListing | FileText | FileRefused


@attrs.frozen
class RequeueResult:
    """ATT-2 outcome: `ok` False means nothing changed; `error` says why."""

    ok: bool
    attempt: Attempt | None = None
    error: str | None = None


class AutomationNameTaken(Exception):
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
    def now(self) -> float:
        """Epoch seconds, UTC (DOM-5)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Block for `seconds` (a virtual clock advances instantly)."""
        ...


@runtime_checkable
class RandomSource(Protocol):
    def token_hex(self, nbytes: int) -> str:
        """`2*nbytes` lowercase hex characters (nonces INJ-7, generated ids)."""
        ...


class TaskStore(Protocol):
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
        self, task_id: str, expected_status: str, changes: Mapping[str, object]
    ) -> Task | None:
        """Compare-and-set: apply `changes` (field -> value, may include `status`) only if the
        row exists and its status is `expected_status`; return the new row, else None."""
        ...

    def list_tasks(
        self, project_id: str, *, status: str | None, q: str | None, limit: int
    ) -> TaskListing:
        """TLS-1/2: tasks of the project, optional exact status, optional case-insensitive
        substring `q` of the prompt; newest first (created_at desc, id desc)."""
        ...


class TodoStore(Protocol):
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
    def get_project(self, project_id: str) -> Project | None: ...


class CostLookup(Protocol):
    def task_costs(self, task_id: str) -> tuple[CostRow, ...]: ...

    def get_quota(self, user: str) -> Quota | None: ...

    def unpriced_tokens(self, user: str) -> int:
        """Actual (not estimated) tokens on unpriced cost rows of the user's tasks (QUO-2).
        A row is unpriced when `priced` is false or `usd` is null (see _exec_read.is_priced)."""
        ...


class AttemptLedger(Protocol):
    def requeue_platform(
        self, task_id: str, expected_status: str, kind: str, checkpoint_round: int, now: float
    ) -> RequeueResult:
        """ATT-2 in ONE transaction: record the ending attempt (attempt_no = auto_resume_count
        + 1, texts cut to 2000), clear result_text / error_text / interrupted_reason, raise
        auto_resume_count, set status queued - only if the task's status is still
        `expected_status`. Any failure rolls everything back and is returned, not raised."""
        ...

    def latest_attempt(self, task_id: str) -> Attempt | None:
        """ATT-3: None when the table is missing, there are no rows or a row is malformed;
        never raises."""
        ...

    def list_attempts(self, task_id: str) -> tuple[Attempt, ...]:
        """ATT-5: the task's attempts ordered by attempt_no."""
        ...


class AuditLog(Protocol):
    def record_audit(self, record: AuditRecord) -> None: ...


class FollowupQueue(Protocol):
    def enqueue_followup(self, task_id: str, text: str) -> None:
        """Queue `text` as the task's next turn input, after those already queued."""
        ...


class PermissionLookup(Protocol):
    def has_permission(self, user: str | None, project_id: str, permission: str) -> bool:
        """DOM-6. May raise: callers treat a failure per GAT-2 / GAT-4."""
        ...


class TaskExecutor(Protocol):
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
