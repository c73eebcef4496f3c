# Owns: the TodoStore port on SQLite, as a mixin of SqliteStore over `self._db`: the
# listing, on top of the shared one-row operations (markertools_adapters._sql TodoRows:
# get / insert / update, compare-and-set under BEGIN IMMEDIATE like transition_task).
#
# Must never: update a todo whose status is not the expected one; scan the todos table
# (the listing filters on the (project_id, status) index).
#
# Invariants:
#   Rule 1: listing order is sort_order ascending with nulls last, then created_at, then
#           id - the memory model's order; rows and total come from one snapshot.
from __future__ import annotations

from collections.abc import Collection

from markertools import TodoListing
from markertools_adapters._sql import TodoRows
from markertools_adapters.sqlite._codec import SQLITE, TODOS
from markertools_adapters.sqlite._conn import Connection, fold


class TodoMixin(TodoRows):
    _db: Connection

    def list_todos(
        self, project_id: str, *, statuses: Collection[str], q: str | None, limit: int
    ) -> TodoListing:
        wanted = sorted(set(statuses))
        where = f"project_id = ? AND status IN ({SQLITE.params(len(wanted))})"
        params: list[object] = [project_id, *wanted]
        if q is not None:
            folded = fold(q)
            where += (
                " AND (instr(mt_fold(title), ?) > 0"
                " OR ifnull(instr(mt_fold(description), ?), 0) > 0)"
            )
            params += [folded, folded]
        with self._db.snapshot() as conn:  # one snapshot for the rows and the total
            rows = conn.execute(
                f"{TODOS.select_sql} WHERE {where}"
                " ORDER BY sort_order IS NULL, sort_order, created_at, id LIMIT ?",
                [*params, max(0, limit)],
            ).fetchall()
            total = conn.execute(f"SELECT count(*) FROM todos WHERE {where}", params).fetchone()
        return TodoListing(rows=tuple(TODOS.decode(row) for row in rows), total=int(total[0]))
