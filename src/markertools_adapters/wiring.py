# Owns: the one wiring point that bundles a store object and the non-storage adapters into
# the `Ports` delivery takes (`store_ports`), and the types of such stores: `StoragePorts`
# (every storage port at once), `WorkerStore` (plus the worker loop's methods and the
# unit of work at the end of a turn, TRN-9) and `Store` (what markertools_adapters.connect
# returns: a WorkerStore that carries its `Ports` and closes as a context manager; the
# bundled stores carry them through `markertools_adapters._carries.CarriesPorts`).
#
# Invariants: builds values only; never opens files, databases or processes itself.
#   Rule 1: `StoragePorts` is exactly the intersection of the storage port Protocols of
#           markertools.domain.ports, so mypy checks that a store passed here implements every
#           one of them (tests/adapters/wiring/test_wiring_types.py keeps the list complete).
#   Rule 2 (CTL-2): the executor is never chosen for the caller: `store_ports` (and
#           `connect`) refuse a missing or None executor with NoExecutor (a
#           MarkertoolsError and a TypeError, FLT-8), so a task-cancel never reports
#           "done" while nothing was signalled unless the worker named NoopExecutor itself.
from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Final, Protocol, Self

from markertools import (
    ApprovalStore,
    AttemptLedger,
    AuditLog,
    AutomationAdmin,
    AutomationStore,
    CallLedger,
    ChangeWaiter,
    Clock,
    CostLookup,
    DeliveryJournal,
    Fencing,
    FollowupQueue,
    FollowupTaker,
    LeaseStore,
    PermissionLookup,
    Ports,
    ProjectLookup,
    RandomSource,
    RecordWriter,
    TaskClaimer,
    TaskExecutor,
    TaskFiles,
    TaskStore,
    TaskTokenStore,
    TodoStore,
    TurnFinisher,
)
from markertools_adapters.errors import MarkertoolsError

if TYPE_CHECKING:
    from markertools_adapters.world import World


class StoragePorts(
    TaskStore,
    TodoStore,
    AutomationStore,
    ProjectLookup,
    CostLookup,
    AttemptLedger,
    AuditLog,
    FollowupQueue,
    PermissionLookup,
    Protocol,
):
    """One object filling every storage field of `Ports` (Rule 1)."""


class WorkerStore(
    StoragePorts,
    TaskClaimer,
    FollowupTaker,
    AutomationAdmin,
    RecordWriter,
    TurnFinisher,
    CallLedger,
    TaskTokenStore,
    LeaseStore,
    ApprovalStore,
    Protocol,
):
    """A store a whole worker loop runs on (docs/worker-loop.md): every storage port plus
    claiming tasks, taking follow-ups, managing automations, the record writers, the
    unit of work at the end of a turn (`finish_turn`, TRN-9) and the same-turn tool ports
    (the call ledger, task tokens: TOL-3, TOL-4) and leases, affinity, checkpoints and the
    fleet snapshot (LeaseStore: WRK-6, WRK-7, WRK-10) and approvals (ApprovalStore:
    APR-1..5). Every bundled store is one;
    `markertools_adapters.kit.StoreKit` makes one from three primitives."""


class Store(WorkerStore, Protocol):
    """What `markertools_adapters.connect(...)` returns (docs/worker-loop.md): a WorkerStore
    that carries the `Ports` delivery takes (`store.ports`: the store itself in every
    storage field, the clock, random source, executor, files reader and change waiter it
    was connected with), loads and exports worlds, and closes - `close()` or `with`."""

    @property
    def ports(self) -> Ports: ...

    def load_world(self, world: World) -> None: ...

    def export_world(self, now: float) -> World: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


def storage_port_methods() -> frozenset[str]:
    """The public method names of every storage port: what a store must implement."""
    return frozenset(
        name
        for proto in StoragePorts.__mro__[1:]
        if proto.__module__ == "markertools.domain.ports"
        for name in vars(proto)
        if not name.startswith("_")
    )


if TYPE_CHECKING:  # Rule 1: mypy --strict proves the bundled stores are StoragePorts
    from markertools_adapters.memory import MemoryStore
    from markertools_adapters.postgres import PostgresStore
    from markertools_adapters.sqlite import SqliteStore

    def _memory_store(store: MemoryStore) -> StoragePorts:
        return store

    def _sqlite_store(store: SqliteStore) -> StoragePorts:
        return store

    def _postgres_store(store: PostgresStore) -> StoragePorts:
        return store

    def _memory_worker(store: MemoryStore) -> WorkerStore:
        return store

    def _sqlite_worker(store: SqliteStore) -> WorkerStore:
        return store

    def _postgres_worker(store: PostgresStore) -> WorkerStore:
        return store

    def _memory_connected(store: MemoryStore) -> Store:
        return store

    def _sqlite_connected(store: SqliteStore) -> Store:
        return store

    def _postgres_connected(store: PostgresStore) -> Store:
        return store


NO_EXECUTOR: Final[str] = (
    "store_ports needs executor=: the TaskExecutor that stops a cancelled task's processes"
    " (CTL-2) - e.g. make_executor('local') or DockerExecutor() from"
    " markertools_adapters.executors; pass NoopExecutor() to choose, knowingly, that a"
    " task-cancel changes the status and signals nothing"
)
NO_EXECUTOR_CONNECT: Final[str] = (
    'connect needs executor=: what stops a cancelled task\'s processes (CTL-2) - "local"'
    ' (process groups), "docker" (containers) or a TaskExecutor; pass "noop" to'
    " choose, knowingly, that a task-cancel changes the status and signals nothing"
)


class NoExecutor(MarkertoolsError, TypeError):
    """Rule 2: `store_ports` or `connect` was called without an executor (or with None):
    refused before anything is opened or delivered. Also a TypeError, as before (FLT-8)."""


def executor_missing(caller: str) -> NoExecutor:
    """The NoExecutor `caller` ("store_ports" or "connect") raises, its text saying what
    to pass."""
    return NoExecutor(NO_EXECUTOR_CONNECT if caller == "connect" else NO_EXECUTOR)


def store_ports(
    store: StoragePorts,
    *,
    clock: Clock,
    random: RandomSource,
    executor: TaskExecutor | None = None,
    files: TaskFiles | None = None,
    waiter: ChangeWaiter | None = None,
    journal: DeliveryJournal | bool | None = True,
) -> Ports:
    """Ports with `store` filling every storage port (tasks, todos, automations, projects,
    costs, attempts, audit, follow-ups, permissions).

    `executor` is required (Rule 2): what a task-cancel block's kill reaches (CTL-2).
    There is no default, so a worker never reports a cancel as done while nothing was
    stopped without having chosen that: `NoopExecutor()` is that choice, named.
    `journal`: True (the default) uses `store` as the delivery journal when it has one
    (every bundled store does, TRN-9); False or None: none; or a journal object.

    Raises:
        NoExecutor: `executor` is missing or None (a MarkertoolsError and a TypeError).
    """
    if executor is None:
        raise executor_missing("store_ports")
    return Ports(
        tasks=store,
        todos=store,
        automations=store,
        projects=store,
        costs=store,
        attempts=store,
        audit=store,
        followups=store,
        permissions=store,
        executor=executor,
        clock=clock,
        random=random,
        files=files,
        waiter=waiter,
        journal=_journal_of(store) if journal is True else (journal or None),
        calls=_calls_of(store),
        fencing=_fencing_of(store),
        approvals=_approvals_of(store),
    )


def _approvals_of(store: object) -> ApprovalStore | None:
    """APR-1..5: the store as the approvals port when it has one (every bundled store
    does)."""
    needed = ("insert_approval", "get_approval", "pending_approvals", "answer_approval")
    if all(callable(getattr(store, name, None)) for name in needed):
        return store  # type: ignore[return-value]
    return None


def _fencing_of(store: object) -> Fencing | None:
    """FLT-1: the store as the fencing port when it has one (every bundled store does)."""
    if all(callable(getattr(store, name, None)) for name in ("fenced", "pending_turns")):
        return store  # type: ignore[return-value]
    return None


def _calls_of(store: object) -> CallLedger | None:
    """TOL-4: the store as the call ledger when it has one (every bundled store does)."""
    needed = ("turn_usage", "record_turn_use", "hold_followup", "release_held_followups")
    if all(callable(getattr(store, name, None)) for name in needed):
        return store  # type: ignore[return-value]
    return None


def _journal_of(store: object) -> DeliveryJournal | None:
    needed = ("block_entries", "record_block", "atomic")
    if all(callable(getattr(store, name, None)) for name in needed):
        return store  # type: ignore[return-value]
    return None
