# Owns: the TodoStore port on SQLite (get / list / insert / update), as a mixin of
# SqliteStore over `self._db`.
#
# Must never: update a todo whose status is not the expected one; scan the todos table
# (the listing filters on the (project_id, status) index).
#
# Invariants:
#   Rule 1: update_todo is BEGIN IMMEDIATE + `UPDATE ... WHERE id = ? AND status = ?` +
#           rowcount check (compare-and-set, like transition_task).
#   Rule 2: listing order is sort_order ascending with nulls last, then created_at, then
#           id - the memory model's order.
from __future__ import annotations

import sqlite3
from collections.abc import Collection, Mapping
from typing import Final

from markertools._model import Todo
from markertools._ports import TodoListing
from markertools_adapters.sqlite._codec import TODOS, quote
from markertools_adapters.sqlite._conn import Connection, fold, placeholders

_SELECT: Final[str] = f"SELECT {TODOS.select_list} FROM todos"


class TodoMixin:
    _db: Connection

    def get_todo(self, todo_id: str) -> Todo | None:
        row = self._db.read_one(f"{_SELECT} WHERE id = ?", (todo_id,))
        return None if row is None else TODOS.decode(row)

    def list_todos(
        self, project_id: str, *, statuses: Collection[str], q: str | None, limit: int
    ) -> TodoListing:
        wanted = sorted(set(statuses))
        where = f"project_id = ? AND status IN ({placeholders(len(wanted))})"
        params: list[object] = [project_id, *wanted]
        if q is not None:
            folded = fold(q)
            where += (
                " AND (instr(mt_fold(title), ?) > 0"
                " OR ifnull(instr(mt_fold(description), ?), 0) > 0)"
            )
            params += [folded, folded]
        with self._db.lock:
            conn = self._db.conn
            conn.execute("BEGIN")  # one snapshot for the rows and the total (read-only)
            try:
                rows = conn.execute(
                    f"{_SELECT} WHERE {where}"
                    " ORDER BY sort_order IS NULL, sort_order, created_at, id LIMIT ?",
                    [*params, max(0, limit)],
                ).fetchall()
                total = conn.execute(f"SELECT count(*) FROM todos WHERE {where}", params).fetchone()
            finally:
                conn.execute("COMMIT")
        return TodoListing(rows=tuple(TODOS.decode(row) for row in rows), total=int(total[0]))

    def insert_todo(self, todo: Todo) -> None:
        values = TODOS.encode(todo)
        try:
            with self._db.lock:
                self._db.conn.execute(TODOS.insert_sql, values)
        except sqlite3.IntegrityError as exc:
            raise ValueError(f"todo {todo.id!r} already exists") from exc

    def update_todo(
        self, todo_id: str, expected_status: str, changes: Mapping[str, object]
    ) -> Todo | None:
        sets = TODOS.encode_changes(changes)
        with self._db.write() as conn:
            if sets:
                assignments = ", ".join(f"{quote(name)} = ?" for name, _ in sets)
                cursor = conn.execute(
                    f"UPDATE todos SET {assignments} WHERE id = ? AND status = ?",
                    [*(value for _, value in sets), todo_id, expected_status],
                )
                if cursor.rowcount != 1:
                    return None
                row = conn.execute(f"{_SELECT} WHERE id = ?", (todo_id,)).fetchone()
            else:
                row = conn.execute(
                    f"{_SELECT} WHERE id = ? AND status = ?", (todo_id, expected_status)
                ).fetchone()
        return None if row is None else TODOS.decode(row)
