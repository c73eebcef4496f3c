# Owns: the row operations every keyed table does the same way in both SQL adapters:
# read one row by id, insert a new record (a duplicate key is a ValueError), and the
# compare-and-set update (`UPDATE ... SET ... WHERE id = ? AND status = ?`); and, built on
# them, the TaskStore / TodoStore methods that are the same on both engines (`TaskRows`,
# `TodoRows` mixins over `self._db` and `self._tables`).
#
# Must never: decide a compare-and-set in Python: the statements built here carry the
# expected status into the database's WHERE clause; the adapter runs them atomically.
#
# Invariants:
#   Rule 1: a `changes` mapping is validated and encoded by the codec before any
#           statement exists (key / fixed / unknown fields raise ValueError, wrong types
#           TypeError), so a refused change never reaches the database.
#   Rule 2: no changes = no UPDATE: the compare-and-set is then a read of the row with
#           that status (the memory model returns the unchanged row or None).
#   Rule 3 (CTL-4): the UPDATE and the read of the changed row are one atomic step
#           (Database.update_one): of two transitions from the same status exactly one
#           changes the row; the other gets None ("changed meanwhile").
from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, TypeVar

from markertools import (
    TASK_STATUSES,
    TODO_STATUSES,
    InvalidArgument,
    Task,
    TaskChange,
    Todo,
    created_now,
    refuse_bad_engine,
    refuse_bad_status,
)
from markertools_adapters._sql._codec import RecordCodec, Tables, quote
from markertools_adapters._sql._dialect import Database, Statement
from markertools_adapters.errors import StoreError

R = TypeVar("R")


def get_by_id(db: Database, codec: RecordCodec[R], row_id: str) -> R | None:
    read = read_by_id(codec, row_id)
    row = db.read_one(read.sql, read.params)
    return None if row is None else codec.decode(row)


def insert_new(db: Database, codec: RecordCodec[R], record: R, what: str) -> None:
    """Insert `record`; an existing key raises ValueError("<what> <key> already exists")."""
    values = codec.encode(record)
    try:
        db.run(codec.insert_sql, values)
    except StoreError as exc:
        if not codec.dialect.is_duplicate_key(exc):
            raise
        key = ", ".join(repr(getattr(record, name)) for name in codec.key)
        raise InvalidArgument(f"{what} {key} already exists") from exc


def cas_update(
    codec: RecordCodec[Any], row_id: str, expected_status: str, changes: Mapping[str, object]
) -> Statement | None:
    """The compare-and-set UPDATE for `changes` (None when there is nothing to change)."""
    sets = codec.encode_changes(changes)
    if not sets:
        return None
    dialect = codec.dialect
    assignments = ", ".join(f"{quote(name)} = ?" for name, _ in sets)
    return Statement(
        dialect.sql(f"UPDATE {codec.table} SET {assignments} WHERE id = ? AND status = ?"),
        (
            *(value for _, value in sets),
            dialect.bind_text(row_id),
            dialect.bind_text(expected_status),
        ),
    )


def read_with_status(codec: RecordCodec[Any], row_id: str, status: str) -> Statement:
    """The row `row_id` only while its status is `status` (Rule 2)."""
    dialect = codec.dialect
    return Statement(
        dialect.sql(f"{codec.select_sql} WHERE id = ? AND status = ?"),
        (dialect.bind_text(row_id), dialect.bind_text(status)),
    )


def read_by_id(codec: RecordCodec[Any], row_id: str) -> Statement:
    dialect = codec.dialect
    return Statement(dialect.sql(f"{codec.select_sql} WHERE id = ?"), (dialect.bind_text(row_id),))


def compare_and_set(
    db: Database,
    codec: RecordCodec[R],
    row_id: str,
    expected_status: str,
    changes: Mapping[str, object],
) -> R | None:
    """CTL-4 / todo updates: apply `changes` only while the row's status is
    `expected_status`; the changed row, or None (missing, or changed meanwhile)."""
    update = cas_update(codec, row_id, expected_status, changes)
    if update is None:
        read = read_with_status(codec, row_id, expected_status)
        row = db.read_one(read.sql, read.params)
    else:
        row = db.update_one(update, read_by_id(codec, row_id), codec.select_list)
    return None if row is None else codec.decode(row)


class TaskRows:
    """TaskStore methods that read or write one task row (the listing, batch read and
    lineage walk are each adapter's own)."""

    _db: Database
    _tables: Tables

    def get_task(self, task_id: str) -> Task | None:
        return get_by_id(self._db, self._tables.tasks, task_id)

    def count_children(self, parent_id: str) -> int:
        d = self._tables.dialect
        row = self._db.read_one(
            d.sql(
                "SELECT count(*) FROM tasks WHERE parent_task_id = ?"
                " AND (coordinator_part IS NULL OR coordinator_part = '')"
            ),
            (d.bind_text(parent_id),),
        )
        return int(row[0]) if row is not None else 0

    def insert_task(self, task: Task) -> None:
        refuse_bad_status("task", task.status, TASK_STATUSES)
        refuse_bad_engine(task.engine)  # ENG-1
        # FLT-5: an unset created_at is the store clock's now
        insert_new(self._db, self._tables.tasks, created_now(task, time.time()), "task")

    def transition_task(
        self, task_id: str, expected_status: str, changes: TaskChange | Mapping[str, object]
    ) -> Task | None:
        fields = TaskChange.of(changes).to_mapping()  # an unknown field raises here
        if "status" in fields:
            refuse_bad_status("task", fields["status"], TASK_STATUSES)
        return compare_and_set(self._db, self._tables.tasks, task_id, expected_status, fields)


class TodoRows:
    """TodoStore methods that read or write one todo row (the listing is each adapter's)."""

    _db: Database
    _tables: Tables

    def get_todo(self, todo_id: str) -> Todo | None:
        return get_by_id(self._db, self._tables.todos, todo_id)

    def insert_todo(self, todo: Todo) -> None:
        refuse_bad_status("todo", todo.status, TODO_STATUSES)
        insert_new(self._db, self._tables.todos, todo, "todo id")

    def update_todo(
        self, todo_id: str, expected_status: str, changes: Mapping[str, object]
    ) -> Todo | None:
        if "status" in changes:
            refuse_bad_status("todo", changes["status"], TODO_STATUSES)
        return compare_and_set(self._db, self._tables.todos, todo_id, expected_status, changes)
