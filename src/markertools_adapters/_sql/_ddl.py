# Owns: the schema statements that are byte-for-byte the same in both SQL schemas
# (sqlite/_schema.py and postgres/_schema.py use them in their migration steps): the
# lookup indexes of step 2 and the automation indexes of steps 2 and 3.
#
# Must never: change a text here. Each is part of a migration step that has shipped (or
# ships with step 3): a database that ran it must stay identical to a fresh one. A new
# index is a new step in both schemas, never an edit.
from __future__ import annotations

from typing import Final

# ---- step 2 (both schemas): every lookup a port does has an index ----------------------

LOOKUP_INDEXES: Final[tuple[str, ...]] = (
    # task-list (TLS-2): newest first within a project, and per-status counts
    "CREATE INDEX tasks_project_created ON tasks (project_id, created_at DESC, id DESC)",
    "CREATE INDEX tasks_project_status ON tasks (project_id, status, created_at DESC, id DESC)",
    # LIN-3 direct children
    "CREATE INDEX tasks_parent ON tasks (parent_task_id)",
    # QUO-2 unpriced tokens of a creator's tasks
    "CREATE INDEX tasks_creator ON tasks (created_by)",
    "CREATE INDEX todos_project_status ON todos (project_id, status)",
    "CREATE INDEX automations_project_status_name ON automations (project_id, status, name)",
    "CREATE INDEX costs_task ON costs (task_id)",
    "CREATE INDEX followups_task ON followups (task_id)",
)
# SCH-5: the due listing is a range scan of the derived next_run_at column (added by step 2
# just before this index, with the engine's float type).
DUE_INDEX: Final[str] = "CREATE INDEX automations_due ON automations (status, next_run_at)"

# ---- step 3 (both schemas): AUT-3 ---------------------------------------------------------

ACTIVE_NAME_INDEX: Final[str] = (
    "CREATE UNIQUE INDEX automations_active_name ON automations (project_id, name)"
    " WHERE status = 'active'"
)

# ---- step 5 (both schemas): the worker loop ---------------------------------------------

# claim_next_task: the oldest queued task of a project, in the order the claim reads it
CLAIM_INDEX: Final[str] = "CREATE INDEX tasks_claim ON tasks (project_id, status, created_at, id)"

# ---- step 6 (both schemas): money in micro-dollars ---------------------------------------

# the costs lookup of step 2, created again when SQLite rebuilds the costs table
COSTS_INDEX: Final[str] = next(i for i in LOOKUP_INDEXES if " costs_task " in i)
