# Owns: the TodoStore port on PostgreSQL (get / list / insert / update), as a mixin of
# PostgresStore over `self._db`.
#
# Must never: update a todo whose status is not the expected one; change a todo's id or
# project (the reference model refuses both).
#
# Invariants:
#   Rule 1: update_todo is ONE `UPDATE ... WHERE id = %s AND status = %s RETURNING ...`
#           (compare-and-set, like transition_task).
#   Rule 2: listing order is sort_order ascending with nulls last, then created_at, then
#           id (code point order) - the memory model's order; rows and total come from
#           ONE statement; `q` follows _fold (SQL for ASCII needles, Python otherwise).
from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final

import psycopg

from markertools._model import Todo
from markertools._ports import TodoListing
from markertools_adapters.postgres._codec import TODOS, quote
from markertools_adapters.postgres._conn import Database
from markertools_adapters.postgres._fold import ascii_needle, fold_sql, python_match
from markertools_adapters.postgres._text import enc

_SELECT: Final[str] = f"SELECT {TODOS.select_list} FROM todos"
_ORDER: Final[str] = "ORDER BY sort_order ASC NULLS LAST, created_at, id"
_BASE_WHERE: Final[str] = "project_id = %(project)s AND status = ANY(%(statuses)s)"
_NEEDLE_WHERE: Final[str] = (
    f" AND (strpos({fold_sql('title')}, %(needle)s) > 0"
    f" OR coalesce(strpos({fold_sql('description')}, %(needle)s), 0) > 0)"
)
_LISTING_SQL: Final[str] = """
WITH m AS MATERIALIZED ({select} WHERE {where}),
     c AS (SELECT count(*) AS total FROM m)
SELECT c.total, r.* FROM c LEFT JOIN LATERAL
    (SELECT * FROM m {order} LIMIT %(limit)s) AS r ON true
"""


class TodoMixin:
    _db: Database

    def get_todo(self, todo_id: str) -> Todo | None:
        row = self._db.read_one(f"{_SELECT} WHERE id = %s", (enc(todo_id),))
        return None if row is None else TODOS.decode(row)

    def list_todos(
        self, project_id: str, *, statuses: Collection[str], q: str | None, limit: int
    ) -> TodoListing:
        params: dict[str, Any] = {
            "project": enc(project_id),
            "statuses": sorted({enc(s) for s in statuses}),
            "limit": max(0, limit),
        }
        if q is not None and ascii_needle(q) is None:
            rows = self._db.read(f"{_SELECT} WHERE {_BASE_WHERE} {_ORDER}", params)
            matches = [
                t for t in map(TODOS.decode, rows) if python_match(q, t.title, t.description)
            ]
            return TodoListing(rows=tuple(matches[: params["limit"]]), total=len(matches))
        where = _BASE_WHERE
        if q is not None:
            params["needle"] = ascii_needle(q)
            where += _NEEDLE_WHERE
        query = _LISTING_SQL.format(select=_SELECT, where=where, order=_ORDER)
        rows = self._db.read(query, params)
        listed = tuple(TODOS.decode(row[1:]) for row in rows if row[1] is not None)
        return TodoListing(rows=listed, total=int(rows[0][0]))

    def insert_todo(self, todo: Todo) -> None:
        values = TODOS.encode(todo)
        try:
            self._db.run(TODOS.insert_sql, values)
        except psycopg.errors.UniqueViolation as exc:
            raise ValueError(f"todo id {todo.id!r} already exists") from exc

    def update_todo(
        self, todo_id: str, expected_status: str, changes: Mapping[str, object]
    ) -> Todo | None:
        sets = TODOS.encode_changes(changes)
        if sets:
            assignments = ", ".join(f"{quote(name)} = %s" for name, _ in sets)
            row = self._db.read_one(
                f"UPDATE todos SET {assignments} WHERE id = %s AND status = %s"
                f" RETURNING {TODOS.select_list}",
                [*(value for _, value in sets), enc(todo_id), enc(expected_status)],
            )
        else:
            row = self._db.read_one(
                f"{_SELECT} WHERE id = %s AND status = %s", (enc(todo_id), enc(expected_status))
            )
        return None if row is None else TODOS.decode(row)
