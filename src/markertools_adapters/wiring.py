# Owns: the one wiring point that bundles a store object and the non-storage adapters into
# the `Ports` delivery takes (`store_ports`). Works with any store object that implements
# the storage ports (MemoryStore, the SQLite store, ...).
#
# Invariants: builds values only; never opens files, databases or processes itself.
from __future__ import annotations

from typing import Any

from markertools._ports import (
    ChangeWaiter,
    Clock,
    Ports,
    RandomSource,
    TaskExecutor,
    TaskFiles,
)


def store_ports(
    store: Any,
    *,
    clock: Clock,
    random: RandomSource,
    executor: TaskExecutor | None = None,
    files: TaskFiles | None = None,
    waiter: ChangeWaiter | None = None,
) -> Ports:
    """Ports with `store` filling every storage port (tasks, todos, automations, projects,
    costs, attempts, audit, follow-ups, permissions). `executor` defaults to the
    NoopExecutor (kill requests are reported and audited, nothing is signalled)."""
    if executor is None:
        from markertools_adapters.executors import NoopExecutor

        executor = NoopExecutor()
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
    )
