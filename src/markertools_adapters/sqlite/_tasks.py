# Owns: the TaskStore port on SQLite, as a mixin of SqliteStore over `self._db`: the
# SQLite-specific reads (get_tasks, lineage, list_tasks) on top of the shared one-row
# operations (markertools_adapters._sql TaskRows: get / count_children / insert /
# transition, compare-and-set under BEGIN IMMEDIATE via Connection.update_one).
#
# Must never: read a task and then decide a write in Python outside the write lock;
# scan the tasks table (every lookup here has an index, see _schema step 2).
#
# Invariants:
#   Rule 1 (LIN-4): lineage is ONE recursive-CTE query with the memory model's walk:
#           depth 0 = the task, stop at a missing parent row or a null parent, no cycle
#           detection, stop after depth `max_steps`.
#   Rule 2 (WAI-4): get_tasks reads all ids with one `WHERE id IN (...)` statement (ids
#           beyond SQLite's variable limit are split into chunks of _IN_CHUNK).
#   Rule 3: list_tasks reads the rows and the per-status counts in one snapshot.
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from markertools import LineageLink, Task, TaskListing
from markertools_adapters._sql import TaskRows
from markertools_adapters.sqlite._codec import SQLITE, TASKS
from markertools_adapters.sqlite._conn import Connection, fold

_IN_CHUNK: Final[int] = 500

_LINEAGE_SQL: Final[str] = """
WITH RECURSIVE walk(id, parent_task_id, coordinator_part, depth) AS (
    SELECT id, parent_task_id, coordinator_part, 0 FROM tasks WHERE id = ?
    UNION ALL
    SELECT t.id, t.parent_task_id, t.coordinator_part, walk.depth + 1
    FROM walk JOIN tasks AS t ON t.id = walk.parent_task_id
    WHERE walk.depth < ?
)
SELECT id, parent_task_id, coordinator_part FROM walk ORDER BY depth
"""


def _listing_filter(project_id: str, status: str | None, q: str | None) -> tuple[str, list[object]]:
    where = ["project_id = ?"]
    params: list[object] = [project_id]
    if status is not None:
        where.append("status = ?")
        params.append(status)
    if q is not None:
        where.append("instr(mt_fold(prompt), ?) > 0")
        params.append(fold(q))
    return " AND ".join(where), params


class TaskMixin(TaskRows):
    _db: Connection

    def get_tasks(self, task_ids: Sequence[str]) -> Mapping[str, Task]:
        ids = list(dict.fromkeys(task_ids))
        found: dict[str, Task] = {}
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            rows = self._db.read(
                f"{TASKS.select_sql} WHERE id IN ({SQLITE.params(len(chunk))})", chunk
            )
            for row in rows:
                task = TASKS.decode(row)
                found[task.id] = task
        return {task_id: found[task_id] for task_id in ids if task_id in found}

    def lineage(self, task_id: str, max_steps: int) -> tuple[LineageLink, ...]:
        if max_steps < 0:  # not even depth 0 is within the bound (as the memory model)
            return ()
        rows = self._db.read(_LINEAGE_SQL, (task_id, max_steps))
        return tuple(LineageLink(row[0], row[1], row[2]) for row in rows)

    def list_tasks(
        self, project_id: str, *, status: str | None, q: str | None, limit: int
    ) -> TaskListing:
        where, params = _listing_filter(project_id, status, q)
        with self._db.snapshot() as conn:  # one snapshot for the rows and the counts
            rows = conn.execute(
                f"{TASKS.select_sql} WHERE {where} ORDER BY created_at DESC, id DESC LIMIT ?",
                [*params, max(0, limit)],
            ).fetchall()
            counts = conn.execute(
                f"SELECT status, count(*) FROM tasks WHERE {where} GROUP BY status ORDER BY status",
                params,
            ).fetchall()
        return TaskListing(
            rows=tuple(TASKS.decode(row) for row in rows),
            total=sum(int(count) for _, count in counts),
            counts=tuple((str(name), int(count)) for name, count in counts),
        )
