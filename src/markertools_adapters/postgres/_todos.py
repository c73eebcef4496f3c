# Owns: the TodoStore port on PostgreSQL, as a mixin of PostgresStore over `self._db`:
# the listing, on top of the shared one-row operations (markertools_adapters._sql
# TodoRows: get / insert / update - ONE `UPDATE ... RETURNING` compare-and-set, like
# transition_task).
#
# Must never: update a todo whose status is not the expected one; change a todo's id or
# project (the reference model refuses both).
#
# Invariants:
#   Rule 1: listing order is sort_order ascending with nulls last, then created_at, then
#           id (code point order) - the memory model's order; rows and total come from
#           ONE statement; `q` follows _fold (SQL for ASCII needles, Python otherwise).
from __future__ import annotations

from collections.abc import Collection
from typing import Any, Final

from markertools import TodoListing
from markertools_adapters._sql import TodoRows
from markertools_adapters.postgres._codec import TODOS
from markertools_adapters.postgres._conn import Database
from markertools_adapters.postgres._fold import ascii_needle, fold_sql, python_match
from markertools_adapters.postgres._text import enc

_SELECT: Final[str] = TODOS.select_sql
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


class TodoMixin(TodoRows):
    _db: Database

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
