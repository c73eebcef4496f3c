# Owns: the in-memory TodoStore port methods (docs/rules.md TDL/TDC/TDU), as a mixin of MemoryStore.
# Operates on `self._state` (MemoryState) under `self._state.lock`.
#
# Invariants:
#   Rule 1: update_todo is compare-and-set on the status, atomic under the state lock.
#   Rule 2: list order is sort_order ascending (nulls last), created_at, id; `q` matches
#           title or description case-insensitively (str.lower), as plain text (no
#           wildcards).
#   Rule 3: returned rows are frozen values, never views of the tables.
from __future__ import annotations

from collections.abc import Collection, Mapping

import attrs

from markertools import TODO_STATUSES, InvalidArgument, Todo, TodoListing, refuse_bad_status
from markertools_adapters.memory._state import MemoryState, compare_and_set

_UPDATABLE = frozenset(a.name for a in attrs.fields(Todo) if a.name not in {"id", "project_id"})


def todo_sort_key(todo: Todo) -> tuple[bool, int, float, str]:
    return (
        todo.sort_order is None,
        todo.sort_order if todo.sort_order is not None else 0,
        todo.created_at,
        todo.id,
    )


def todo_matches(todo: Todo, q: str | None) -> bool:
    if q is None:
        return True
    needle = q.lower()
    return needle in todo.title.lower() or needle in (todo.description or "").lower()


class TodoMixin:
    _state: MemoryState

    def get_todo(self, todo_id: str) -> Todo | None:
        with self._state.lock:
            return self._state.todos.get(todo_id)

    def list_todos(
        self, project_id: str, *, statuses: Collection[str], q: str | None, limit: int
    ) -> TodoListing:
        wanted = frozenset(statuses)
        with self._state.lock:
            matching = [
                t
                for t in self._state.todos.values()
                if t.project_id == project_id and t.status in wanted and todo_matches(t, q)
            ]
        matching.sort(key=todo_sort_key)
        return TodoListing(rows=tuple(matching[: max(0, limit)]), total=len(matching))

    def insert_todo(self, todo: Todo) -> None:
        refuse_bad_status("todo", todo.status, TODO_STATUSES)
        with self._state.lock:
            if todo.id in self._state.todos:
                raise InvalidArgument(f"todo id {todo.id!r} already exists")
            self._state.todos[todo.id] = todo

    def update_todo(
        self, todo_id: str, expected_status: str, changes: Mapping[str, object]
    ) -> Todo | None:
        unknown = sorted(set(changes) - _UPDATABLE)
        if unknown:
            raise InvalidArgument(f"todo fields cannot be changed: {', '.join(unknown)}")
        if "status" in changes:
            refuse_bad_status("todo", changes["status"], TODO_STATUSES)
        return compare_and_set(self._state, self._state.todos, todo_id, expected_status, changes)
