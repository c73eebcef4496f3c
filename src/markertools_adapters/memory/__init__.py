"""In-memory adapters: every storage port of `markertools.domain.ports` in one `MemoryStore`.

The reference model: the SQLite and PostgreSQL adapters must behave exactly like it (the
shared contract suite in tests/contract/ checks them against the same semantics). Each
area's port methods live in a mixin operating on one `MemoryState` under its lock.
"""

from __future__ import annotations

from markertools import is_priced
from markertools_adapters._carries import CarriesPorts
from markertools_adapters.memory._approvals import ApprovalMixin
from markertools_adapters.memory._attempts import AttemptMixin
from markertools_adapters.memory._automations import AutomationMixin
from markertools_adapters.memory._core import CoreMixin
from markertools_adapters.memory._journal import JournalMixin
from markertools_adapters.memory._leases import LeaseMixin
from markertools_adapters.memory._state import MemoryState
from markertools_adapters.memory._todos import TodoMixin
from markertools_adapters.memory._tools import ToolsMixin
from markertools_adapters.memory._worker import WorkerMixin
from markertools_adapters.world import World

__all__ = ["MemoryState", "MemoryStore", "is_priced"]


class MemoryStore(
    CoreMixin,
    TodoMixin,
    AutomationMixin,
    AttemptMixin,
    WorkerMixin,
    LeaseMixin,
    JournalMixin,
    ToolsMixin,
    ApprovalMixin,
    CarriesPorts,
):
    """Tasks, todos, automations, projects, permissions, costs and quotas, the attempts
    ledger, the audit log, the follow-up queue and approvals, in memory. Thread-safe."""

    def __init__(self, state: MemoryState | None = None) -> None:
        self._state = state if state is not None else MemoryState()

    def close(self) -> None:
        """Nothing to release (the Store protocol: every store closes)."""

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    def from_world(cls, world: World) -> MemoryStore:
        store = cls()
        store.load_world(world)
        return store
