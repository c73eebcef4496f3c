# Owns: WorldStore on SQLite - filling an empty database from a `World` in one
# transaction, and exporting every record back in the canonical order.
#
# Must never: load into a database that already holds records (a world load is a fresh
# start, never a merge); export from more than one snapshot.
#
# Invariants:
#   Rule 1: load_world is one BEGIN IMMEDIATE transaction: any bad record (duplicate
#           key, wrong type, integer beyond 64 bits) rolls the whole load back, and the
#           error names the record.
#   Rule 2: export_world reads every table inside one read transaction, ordered as the
#           WorldStore contract says: ids ascending (SQLite's BINARY collation on UTF-8
#           is code-point order, the same as Python's str order), audit and follow-ups in
#           insertion order, costs by (task_id, round) then insertion order, permission
#           entries by (user, project) with their grants sorted (the memory model's order).
#   Rule 3: load then export is the identity on canonical worlds (tested with hypothesis).
from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, Final

from markertools._model import Followup, PermissionGrant
from markertools_adapters.sqlite._automations import insert_automation_row
from markertools_adapters.sqlite._codec import (
    ATTEMPTS,
    AUDIT,
    AUTOMATIONS,
    COSTS,
    PROJECTS,
    QUOTAS,
    TASKS,
    TODOS,
    RecordCodec,
)
from markertools_adapters.sqlite._conn import Connection
from markertools_adapters.world import World

WORLD_TABLES: Final[tuple[str, ...]] = (
    "projects",
    "permission_entries",
    "permission_grants",
    "tasks",
    "todos",
    "automations",
    "costs",
    "quotas",
    "task_attempts",
    "audit",
    "followups",
)


def _describe(record: Any) -> str:
    for attr in ("id", "user", "task_id", "sender"):
        value = getattr(record, attr, None)
        if isinstance(value, str):
            return f"{type(record).__name__} {value!r}"
    return type(record).__name__


def _insert_all(conn: sqlite3.Connection, codec: RecordCodec[Any], records: Sequence[Any]) -> None:
    for record in records:
        try:
            conn.execute(codec.insert_sql, codec.encode(record))
        except sqlite3.IntegrityError as exc:
            raise ValueError(f"{_describe(record)}: {exc}") from exc
        except (TypeError, OverflowError, UnicodeError) as exc:
            raise ValueError(f"{_describe(record)}: {exc}") from exc


def load_into(conn: sqlite3.Connection, world: World) -> None:
    """Insert every record of `world` (the caller holds the write transaction)."""
    for table in WORLD_TABLES:
        if conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None:
            raise ValueError(f"cannot load a world into a database that already has {table}")
    _insert_all(conn, PROJECTS, world.projects)
    for entry in world.permissions:
        # entries for the same (user, project) merge, as in the memory model
        try:
            conn.execute(
                "INSERT OR IGNORE INTO permission_entries (user, project) VALUES (?, ?)",
                (entry.user, entry.project),
            )
            conn.executemany(
                'INSERT OR IGNORE INTO permission_grants ("user", project, "grant")'
                " VALUES (?, ?, ?)",
                [(entry.user, entry.project, grant) for grant in entry.grants],
            )
        except (sqlite3.Error, TypeError, UnicodeError) as exc:
            raise ValueError(f"permissions {entry.user!r}/{entry.project!r}: {exc}") from exc
    _insert_all(conn, TASKS, world.tasks)
    _insert_all(conn, TODOS, world.todos)
    for automation in world.automations:
        try:
            insert_automation_row(conn, automation)
        except (sqlite3.IntegrityError, TypeError, OverflowError, UnicodeError) as exc:
            raise ValueError(f"{_describe(automation)}: {exc}") from exc
    _insert_all(conn, COSTS, world.costs)
    _insert_all(conn, QUOTAS, world.quotas)
    _insert_all(conn, ATTEMPTS, world.attempts)
    _insert_all(conn, AUDIT, world.audit)
    for followup in world.followups:
        conn.execute(
            "INSERT INTO followups (task_id, text) VALUES (?, ?)", (followup.task_id, followup.text)
        )


def _set_now(conn: sqlite3.Connection, now: float) -> None:
    if isinstance(now, bool) or not isinstance(now, (int, float)):
        raise TypeError(f"now: expected a number, got {type(now).__name__}")
    conn.execute(
        "INSERT INTO world_clock (id, now) VALUES (1, ?)"
        " ON CONFLICT (id) DO UPDATE SET now = excluded.now",
        (float(now),),
    )


def _rows(conn: sqlite3.Connection, codec: RecordCodec[Any], order: str) -> tuple[Any, ...]:
    rows = conn.execute(f"SELECT {codec.select_list} FROM {codec.table} ORDER BY {order}")
    return tuple(codec.decode(row) for row in rows.fetchall())


def export_from(conn: sqlite3.Connection, now: float) -> World:
    """Every record in canonical order (the caller holds one read transaction)."""
    held: dict[tuple[str, str], list[str]] = {
        (str(user), str(project)): []
        for user, project in conn.execute("SELECT user, project FROM permission_entries")
    }
    for user, project, grant in conn.execute(
        'SELECT "user", project, "grant" FROM permission_grants'
    ).fetchall():
        held.setdefault((str(user), str(project)), []).append(str(grant))
    grants = tuple(
        PermissionGrant(user=user, project=project, grants=tuple(sorted(held[(user, project)])))
        for user, project in sorted(held)
    )
    followups = tuple(
        Followup(task_id=str(task_id), text=str(text))
        for task_id, text in conn.execute(
            "SELECT task_id, text FROM followups ORDER BY seq"
        ).fetchall()
    )
    return World(
        now=now,
        projects=_rows(conn, PROJECTS, "id"),
        permissions=grants,
        tasks=_rows(conn, TASKS, "id"),
        todos=_rows(conn, TODOS, "id"),
        automations=_rows(conn, AUTOMATIONS, "id"),
        costs=_rows(conn, COSTS, "task_id, round, seq"),
        quotas=_rows(conn, QUOTAS, "user"),
        attempts=_rows(conn, ATTEMPTS, "task_id, attempt_no"),
        audit=_rows(conn, AUDIT, "seq"),
        followups=followups,
    )


class WorldMixin:
    _db: Connection

    def load_world(self, world: World) -> None:
        """Fill this empty database from `world` and remember `world.now` (world_now)."""
        with self._db.write() as conn:
            load_into(conn, world)
            _set_now(conn, world.now)

    def world_now(self) -> float | None:
        """The virtual time recorded by `load_world` / `set_world_now`; None = real time."""
        row = self._db.read_one("SELECT now FROM world_clock WHERE id = 1")
        return None if row is None else float(row[0])

    def set_world_now(self, now: float) -> None:
        with self._db.write() as conn:
            _set_now(conn, now)

    def export_world(self, now: float) -> World:
        with self._db.lock:
            conn = self._db.conn
            conn.execute("BEGIN")
            try:
                return export_from(conn, now)
            finally:
                conn.execute("COMMIT")
