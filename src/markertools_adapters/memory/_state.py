# Owns: the in-memory world's tables (`MemoryState`), shared by the memory store's
# per-area mixins. A plain container guarded by one re-entrant lock: every mixin method
# that reads-then-writes holds `state.lock`, which is what makes its compare-and-set
# atomic in memory (house rule 6).
from __future__ import annotations

import threading

import attrs

from markertools._model import (
    Attempt,
    AuditRecord,
    Automation,
    CostRow,
    Project,
    Quota,
    Task,
    Todo,
)


@attrs.define
class MemoryState:
    tasks: dict[str, Task] = attrs.Factory(dict)
    projects: dict[str, Project] = attrs.Factory(dict)
    # (user, project) -> grants
    permissions: dict[tuple[str, str], frozenset[str]] = attrs.Factory(dict)
    todos: dict[str, Todo] = attrs.Factory(dict)
    automations: dict[str, Automation] = attrs.Factory(dict)
    costs: list[CostRow] = attrs.Factory(list)
    quotas: dict[str, Quota] = attrs.Factory(dict)
    # (task_id, attempt_no) -> attempt
    attempts: dict[tuple[str, int], Attempt] = attrs.Factory(dict)
    audit: list[AuditRecord] = attrs.Factory(list)
    # (task_id, text) in queue order
    followups: list[tuple[str, str]] = attrs.Factory(list)
    lock: threading.RLock = attrs.field(factory=threading.RLock, eq=False, repr=False)
