# Owns: the TaskStore port on PostgreSQL (get / get_tasks / lineage / count_children /
# insert / transition / list), as a mixin of PostgresStore over `self._db`.
#
# Must never: read a task and then decide a write in Python; scan the tasks table (every
# lookup here has an index, see _schema step 2).
#
# Invariants:
#   Rule 1 (CTL-4): transition_task is ONE statement `UPDATE ... WHERE id = %s AND
#           status = %s RETURNING ...` under READ COMMITTED: a concurrent writer's change is
#           waited for and the WHERE re-checked on the newest row version, so of two
#           transitions from the same status exactly one changes the row; the other gets
#           None ("changed meanwhile").
#   Rule 2 (LIN-4): lineage is ONE recursive-CTE query with the reference walk: depth 0 =
#           the task, stop at a missing parent row or a null parent, no cycle detection
#           (UNION ALL), stop after depth `max_steps`; a negative bound walks nothing.
#   Rule 3 (WAI-4): get_tasks reads all ids with ONE `WHERE id = ANY(%s)` statement.
#   Rule 4: list_tasks returns rows and per-status counts from ONE statement (one
#           snapshot); `q` follows _fold (SQL for ASCII needles, Python otherwise).
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final

import psycopg

from markertools._model import LineageLink, Task
from markertools._ports import TaskListing
from markertools_adapters.postgres._codec import TASKS, quote
from markertools_adapters.postgres._conn import Database
from markertools_adapters.postgres._fold import ascii_needle, fold_sql, python_match
from markertools_adapters.postgres._text import dec, dec_opt, enc, enc_opt

_SELECT: Final[str] = f"SELECT {TASKS.select_list} FROM tasks"
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


class TaskMixin:
    _db: Database

    def get_task(self, task_id: str) -> Task | None:
        row = self._db.read_one(f"{_SELECT} WHERE id = %s", (enc(task_id),))
        return None if row is None else TASKS.decode(row)

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

    def count_children(self, parent_id: str) -> int:
        row = self._db.read_one(
            "SELECT count(*) FROM tasks WHERE parent_task_id = %s"
            " AND (coordinator_part IS NULL OR coordinator_part = '')",
            (enc(parent_id),),
        )
        return int(row[0]) if row is not None else 0

    def insert_task(self, task: Task) -> None:
        values = TASKS.encode(task)
        try:
            self._db.run(TASKS.insert_sql, values)
        except psycopg.errors.UniqueViolation as exc:
            raise ValueError(f"task {task.id!r} already exists") from exc

    def transition_task(
        self, task_id: str, expected_status: str, changes: Mapping[str, object]
    ) -> Task | None:
        sets = TASKS.encode_changes(changes)
        if sets:
            assignments = ", ".join(f"{quote(name)} = %s" for name, _ in sets)
            row = self._db.read_one(
                f"UPDATE tasks SET {assignments} WHERE id = %s AND status = %s"
                f" RETURNING {TASKS.select_list}",
                [*(value for _, value in sets), enc(task_id), enc(expected_status)],
            )
        else:
            row = self._db.read_one(
                f"{_SELECT} WHERE id = %s AND status = %s", (enc(task_id), enc(expected_status))
            )
        return None if row is None else TASKS.decode(row)

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
