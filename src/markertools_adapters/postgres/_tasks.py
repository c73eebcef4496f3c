# Owns: the TaskStore port on PostgreSQL, as a mixin of PostgresStore over `self._db`:
# the PostgreSQL-specific reads (get_tasks, lineage, list_tasks) on top of the shared
# one-row operations (markertools_adapters._sql TaskRows: get / count_children / insert /
# transition - the compare-and-set is ONE `UPDATE ... WHERE id = %s AND status = %s
# RETURNING ...` under READ COMMITTED, Database.update_one).
#
# Must never: read a task and then decide a write in Python; scan the tasks table (every
# lookup here has an index, see _schema step 2).
#
# Invariants:
#   Rule 1 (LIN-4): lineage is ONE recursive-CTE query with the reference walk: depth 0 =
#           the task, stop at a missing parent row or a null parent, no cycle detection
#           (UNION ALL), stop after depth `max_steps`; a negative bound walks nothing.
#   Rule 2 (WAI-4): get_tasks reads all ids with ONE `WHERE id = ANY(%s)` statement.
#   Rule 3: list_tasks returns rows and per-status counts from ONE statement (one
#           snapshot); `q` follows _fold (SQL for ASCII needles, Python otherwise).
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final

from markertools import LineageLink, Task, TaskListing
from markertools_adapters._sql import TaskRows
from markertools_adapters.postgres._codec import TASKS
from markertools_adapters.postgres._conn import Database
from markertools_adapters.postgres._fold import ascii_needle, fold_sql, python_match
from markertools_adapters.postgres._text import dec, dec_opt, enc, enc_opt

_SELECT: Final[str] = TASKS.select_sql
_ORDER: Final[str] = "ORDER BY created_at DESC, id DESC"

_LINEAGE_SQL: Final[str] = """
WITH RECURSIVE walk(id, parent_task_id, coordinator_part, depth) AS (
    SELECT id, parent_task_id, coordinator_part, 0 FROM tasks WHERE id = %(id)s AND %(max)s >= 0
    UNION ALL
    SELECT t.id, t.parent_task_id, t.coordinator_part, walk.depth + 1
    FROM walk JOIN tasks AS t ON t.id = walk.parent_task_id
    WHERE walk.depth < %(max)s
)
SELECT id, parent_task_id, coordinator_part FROM walk ORDER BY depth
"""

# Rows (at most %(limit)s) and the per-status counts of the whole match, in one statement:
# the counts row is always there; r.* is NULL when no row is listed.
_LISTING_SQL: Final[str] = """
WITH m AS MATERIALIZED ({select} WHERE {where}),
     c AS (SELECT coalesce(json_agg(json_build_array(status, n) ORDER BY status), '[]'::json)
           AS counts FROM (SELECT status, count(*) AS n FROM m GROUP BY status) AS s)
SELECT c.counts, r.* FROM c LEFT JOIN LATERAL
    (SELECT * FROM m {order} LIMIT %(limit)s) AS r ON true
"""


def _where(status: str | None, needle: str | None) -> str:
    where = ["project_id = %(project)s"]
    if status is not None:
        where.append("status = %(status)s")
    if needle is not None:
        where.append(f"strpos({fold_sql('prompt')}, %(needle)s) > 0")
    return " AND ".join(where)


class TaskMixin(TaskRows):
    _db: Database

    def get_tasks(self, task_ids: Sequence[str]) -> Mapping[str, Task]:
        ids = list(dict.fromkeys(task_ids))
        if not ids:
            return {}
        rows = self._db.read(f"{_SELECT} WHERE id = ANY(%s)", ([enc(i) for i in ids],))
        found = {task.id: task for task in map(TASKS.decode, rows)}
        return {task_id: found[task_id] for task_id in ids if task_id in found}

    def lineage(self, task_id: str, max_steps: int) -> tuple[LineageLink, ...]:
        rows = self._db.read(_LINEAGE_SQL, {"id": enc(task_id), "max": max_steps})
        return tuple(LineageLink(dec(row[0]), dec_opt(row[1]), dec_opt(row[2])) for row in rows)

    def list_tasks(
        self, project_id: str, *, status: str | None, q: str | None, limit: int
    ) -> TaskListing:
        params: dict[str, Any] = {
            "project": enc(project_id),
            "status": enc_opt(status),
            "limit": max(0, limit),
        }
        if q is not None and ascii_needle(q) is None:
            return self._list_tasks_in_python(params, q, max(0, limit))
        params["needle"] = ascii_needle(q) if q is not None else None
        query = _LISTING_SQL.format(
            select=_SELECT, where=_where(status, params["needle"]), order=_ORDER
        )
        rows = self._db.read(query, params)
        counts = tuple((dec(str(name)), int(n)) for name, n in rows[0][0])
        listed = tuple(TASKS.decode(row[1:]) for row in rows if row[1] is not None)
        return TaskListing(rows=listed, total=sum(n for _, n in counts), counts=counts)

    def _list_tasks_in_python(self, params: dict[str, Any], q: str, limit: int) -> TaskListing:
        """_fold Rule 2: a non-ASCII needle is matched with Python's str.lower."""
        where = _where(params["status"], None)
        rows = self._db.read(f"{_SELECT} WHERE {where} {_ORDER}", params)
        matches = [t for t in map(TASKS.decode, rows) if python_match(q, t.prompt)]
        counts = Counter(t.status for t in matches)
        return TaskListing(
            rows=tuple(matches[:limit]), total=len(matches), counts=tuple(sorted(counts.items()))
        )
