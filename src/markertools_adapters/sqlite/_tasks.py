# Owns: the TaskStore port on SQLite (get / get_tasks / lineage / count_children /
# insert / transition / list), as a mixin of SqliteStore over `self._db`.
#
# Must never: read a task and then decide a write in Python outside the write lock;
# scan the tasks table (every lookup here has an index, see _schema step 2).
#
# Invariants:
#   Rule 1 (CTL-4): transition_task is BEGIN IMMEDIATE + `UPDATE ... WHERE id = ? AND
#           status = ?` + rowcount check: of two concurrent transitions from the same
#           status exactly one changes the row; the other gets None ("changed meanwhile").
#   Rule 2 (LIN-4): lineage is ONE recursive-CTE query with the memory model's walk:
#           depth 0 = the task, stop at a missing parent row or a null parent, no cycle
#           detection, stop after depth `max_steps`.
#   Rule 3 (WAI-4): get_tasks reads all ids with one `WHERE id IN (...)` statement (ids
#           beyond SQLite's variable limit are split into chunks of _IN_CHUNK).
from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Final

from markertools._model import LineageLink, Task
from markertools._ports import TaskListing
from markertools_adapters.sqlite._codec import TASKS, quote
from markertools_adapters.sqlite._conn import Connection, fold, placeholders

_IN_CHUNK: Final[int] = 500
_SELECT: Final[str] = f"SELECT {TASKS.select_list} FROM tasks"

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


class TaskMixin:
    _db: Connection

    def get_task(self, task_id: str) -> Task | None:
        row = self._db.read_one(f"{_SELECT} WHERE id = ?", (task_id,))
        return None if row is None else TASKS.decode(row)

    def get_tasks(self, task_ids: Sequence[str]) -> Mapping[str, Task]:
        ids = list(dict.fromkeys(task_ids))
        found: dict[str, Task] = {}
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            rows = self._db.read(f"{_SELECT} WHERE id IN ({placeholders(len(chunk))})", chunk)
            for row in rows:
                task = TASKS.decode(row)
                found[task.id] = task
        return {task_id: found[task_id] for task_id in ids if task_id in found}

    def lineage(self, task_id: str, max_steps: int) -> tuple[LineageLink, ...]:
        if max_steps < 0:  # not even depth 0 is within the bound (as the memory model)
            return ()
        rows = self._db.read(_LINEAGE_SQL, (task_id, max_steps))
        return tuple(LineageLink(row[0], row[1], row[2]) for row in rows)

    def count_children(self, parent_id: str) -> int:
        row = self._db.read_one(
            "SELECT count(*) FROM tasks WHERE parent_task_id = ?"
            " AND (coordinator_part IS NULL OR coordinator_part = '')",
            (parent_id,),
        )
        return int(row[0]) if row is not None else 0

    def insert_task(self, task: Task) -> None:
        values = TASKS.encode(task)
        try:
            with self._db.lock:
                self._db.conn.execute(TASKS.insert_sql, values)
        except sqlite3.IntegrityError as exc:
            raise ValueError(f"task {task.id!r} already exists") from exc

    def transition_task(
        self, task_id: str, expected_status: str, changes: Mapping[str, object]
    ) -> Task | None:
        sets = TASKS.encode_changes(changes)
        with self._db.write() as conn:
            if sets:
                assignments = ", ".join(f"{quote(name)} = ?" for name, _ in sets)
                cursor = conn.execute(
                    f"UPDATE tasks SET {assignments} WHERE id = ? AND status = ?",
                    [*(value for _, value in sets), task_id, expected_status],
                )
                if cursor.rowcount != 1:
                    return None
                row = conn.execute(f"{_SELECT} WHERE id = ?", (task_id,)).fetchone()
            else:
                row = conn.execute(
                    f"{_SELECT} WHERE id = ? AND status = ?", (task_id, expected_status)
                ).fetchone()
        return None if row is None else TASKS.decode(row)

    def list_tasks(
        self, project_id: str, *, status: str | None, q: str | None, limit: int
    ) -> TaskListing:
        where, params = _listing_filter(project_id, status, q)
        with self._db.lock:
            conn = self._db.conn
            conn.execute("BEGIN")  # one snapshot for the rows and the counts (read-only)
            try:
                rows = conn.execute(
                    f"{_SELECT} WHERE {where} ORDER BY created_at DESC, id DESC LIMIT ?",
                    [*params, max(0, limit)],
                ).fetchall()
                counts = conn.execute(
                    f"SELECT status, count(*) FROM tasks WHERE {where}"
                    " GROUP BY status ORDER BY status",
                    params,
                ).fetchall()
            finally:
                conn.execute("COMMIT")
        return TaskListing(
            rows=tuple(TASKS.decode(row) for row in rows),
            total=sum(int(count) for _, count in counts),
            counts=tuple((str(name), int(count)) for name, count in counts),
        )
