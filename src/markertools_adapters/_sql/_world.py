# Owns: WorldStore on both SQL adapters - filling an empty database from a `World` in one
# write transaction, and exporting every record back in the canonical order from one
# snapshot - as a mixin over `self._db` and `self._tables`; plus the virtual clock of a
# database made from a world (`world_now` / `set_world_now`).
#
# Must never: load into a database that already holds records (a world load is a fresh
# start, never a merge); export from more than one snapshot.
#
# Invariants:
#   Rule 1: load_world is one write transaction: every record is encoded and every key
#           checked in Python first (duplicate keys, and two active automations of one
#           project sharing a name - AUT-3), so an error names the record; any failure
#           rolls the whole load back. Permission entries of one (user, project) are
#           merged, as in the memory model; an entry with no grants survives
#           (permission_entries).
#   Rule 2: export_world reads every table inside one read transaction, in the memory
#           model's canonical order: ids ascending (SQLite's BINARY and PostgreSQL's
#           COLLATE "C" are code point order, Python's str order), costs by (task, round)
#           then insertion, audit and follow-ups in insertion order, permission entries by
#           (user, project) with their grants sorted.
#   Rule 3: load then export is the identity on canonical worlds (tested with hypothesis).
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, Final

from markertools import Automation, Followup, InvalidArgument, InvalidType, PermissionGrant
from markertools_adapters._sql._automations import automation_insert_sql, automation_row
from markertools_adapters._sql._codec import RecordCodec, Tables, text_value
from markertools_adapters._sql._dialect import Database, Executor
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

Rows = list[tuple[object, ...]]


def _describe(record: Any) -> str:
    for attr in ("id", "user", "task_id", "sender"):
        value = getattr(record, attr, None)
        if isinstance(value, str):
            return f"{type(record).__name__} {value!r}"
    return type(record).__name__


def _encoded(
    records: Sequence[Any],
    encode: Callable[[Any], tuple[object, ...]],
    key: Callable[[Any], Hashable] | None = None,
) -> Rows:
    """Encode every record; a bad value or a duplicate key raises ValueError naming it."""
    seen: set[Hashable] = set()
    out = []
    for record in records:
        if key is not None:
            k = key(record)
            if k in seen:
                raise InvalidArgument(f"duplicate {_describe(record)}")
            seen.add(k)
        try:
            out.append(encode(record))
        except (TypeError, ValueError, OverflowError) as exc:
            raise InvalidArgument(f"{_describe(record)}: {exc}") from exc
    return out


def _check_active_names(automations: Iterable[Automation]) -> None:
    """AUT-3 (the partial unique index of step 3), checked first to name the record."""
    seen: set[tuple[str, str]] = set()
    for automation in automations:
        if automation.status != "active":
            continue
        key = (automation.project_id, automation.name)
        if key in seen:
            raise InvalidArgument(
                f"{_describe(automation)}: an active automation of project "
                f"{automation.project_id!r} is already named {automation.name!r}"
            )
        seen.add(key)


def _permission_rows(tables: Tables, grants: Iterable[PermissionGrant]) -> tuple[Rows, Rows]:
    """(permission_entries rows, permission_grants rows), merged per (user, project)."""
    merged: dict[tuple[str, str], set[str]] = {}
    for grant in grants:
        where = f"permissions {grant.user!r}/{grant.project!r}"
        try:
            for value in (grant.user, grant.project, *grant.grants):
                text_value(value, where)
        except TypeError as exc:
            raise InvalidArgument(str(exc)) from exc
        merged.setdefault((grant.user, grant.project), set()).update(grant.grants)
    t = tables.dialect.bind_text
    entries: Rows = [(t(user), t(project)) for user, project in merged]
    rows: Rows = [
        (t(user), t(project), t(name))
        for (user, project), names in merged.items()
        for name in sorted(names)
    ]
    return entries, rows


def _followup_row(tables: Tables, followup: Followup) -> tuple[object, ...]:
    t = tables.dialect.bind_text
    return (
        t(text_value(followup.task_id, "task_id")),
        t(text_value(followup.text, "text")),
        tables.dialect.bool_in(bool(followup.consumed)),
    )


def load_into(conn: Executor, tables: Tables, world: World) -> None:
    """Insert every record of `world` (the caller holds the write transaction)."""
    d = tables.dialect
    _check_active_names(world.automations)
    entries, grant_rows = _permission_rows(tables, world.permissions)
    batches: list[tuple[str, Rows]] = [
        (tables.projects.insert_sql, _encoded(world.projects, tables.projects.encode, _id)),
        (d.sql('INSERT INTO permission_entries ("user", project) VALUES (?, ?)'), entries),
        (
            d.sql('INSERT INTO permission_grants ("user", project, "grant") VALUES (?, ?, ?)'),
            grant_rows,
        ),
        (tables.tasks.insert_sql, _encoded(world.tasks, tables.tasks.encode, _id)),
        (tables.todos.insert_sql, _encoded(world.todos, tables.todos.encode, _id)),
        (
            automation_insert_sql(tables.automations),
            _encoded(world.automations, lambda a: automation_row(tables.automations, a), _id),
        ),
        (tables.costs.insert_sql, _encoded(world.costs, tables.costs.encode)),
        (tables.quotas.insert_sql, _encoded(world.quotas, tables.quotas.encode, _user)),
        (tables.attempts.insert_sql, _encoded(world.attempts, tables.attempts.encode, _attempt)),
        (tables.audit.insert_sql, _encoded(world.audit, tables.audit.encode)),
        (
            d.sql("INSERT INTO followups (task_id, text, consumed) VALUES (?, ?, ?)"),
            _encoded(world.followups, lambda f: _followup_row(tables, f)),
        ),
    ]
    for table in WORLD_TABLES:
        if conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None:
            raise InvalidArgument(
                f"cannot load a world into a {d.container} that already has {table}"
                f" (a world load only fills an empty {d.container})"
            )
    for insert_sql, rows in batches:
        if rows:
            d.execute_many(conn, insert_sql, rows)


def _id(record: Any) -> Hashable:
    return record.id  # type: ignore[no-any-return]


def _user(record: Any) -> Hashable:
    return record.user  # type: ignore[no-any-return]


def _attempt(record: Any) -> Hashable:
    return (record.task_id, record.attempt_no)


def set_now(conn: Executor, tables: Tables, now: float) -> None:
    if isinstance(now, bool) or not isinstance(now, (int, float)):
        raise InvalidType(f"now: expected a number, got {type(now).__name__}")
    conn.execute(
        tables.dialect.sql(
            "INSERT INTO world_clock (id, now) VALUES (1, ?)"
            " ON CONFLICT (id) DO UPDATE SET now = excluded.now"
        ),
        (float(now),),
    )


def _rows(conn: Executor, codec: RecordCodec[Any], order: str) -> tuple[Any, ...]:
    rows = conn.execute(f"{codec.select_sql} ORDER BY {order}").fetchall()
    return tuple(codec.decode(row) for row in rows)


def export_from(conn: Executor, tables: Tables, now: float) -> World:
    """Every record in canonical order (the caller holds one read transaction)."""
    text = tables.dialect.stored_text
    held: dict[tuple[str, str], list[str]] = {
        (text(user), text(project)): []
        for user, project in conn.execute(
            'SELECT "user", project FROM permission_entries'
        ).fetchall()
    }
    for user, project, grant in conn.execute(
        'SELECT "user", project, "grant" FROM permission_grants'
    ).fetchall():
        held.setdefault((text(user), text(project)), []).append(text(grant))
    grants = tuple(
        PermissionGrant(user=user, project=project, grants=tuple(sorted(held[(user, project)])))
        for user, project in sorted(held)
    )
    followups = tuple(
        Followup(task_id=text(task_id), text=text(body), consumed=bool(consumed))
        for task_id, body, consumed in conn.execute(
            "SELECT task_id, text, consumed FROM followups ORDER BY seq"
        ).fetchall()
    )
    return World(
        now=now,
        projects=_rows(conn, tables.projects, "id"),
        permissions=grants,
        tasks=_rows(conn, tables.tasks, "id"),
        todos=_rows(conn, tables.todos, "id"),
        automations=_rows(conn, tables.automations, "id"),
        costs=_rows(conn, tables.costs, "task_id, round, seq"),
        quotas=_rows(conn, tables.quotas, '"user"'),
        attempts=_rows(conn, tables.attempts, "task_id, attempt_no"),
        audit=_rows(conn, tables.audit, "seq"),
        followups=followups,
    )


class WorldMixin:
    _db: Database
    _tables: Tables

    def load_world(self, world: World) -> None:
        """Fill this empty database from `world` and remember `world.now` (world_now)."""
        with self._db.write() as conn:
            load_into(conn, self._tables, world)
            set_now(conn, self._tables, world.now)

    def world_now(self) -> float | None:
        """The virtual time recorded by `load_world` / `set_world_now`; None = real time."""
        row = self._db.read_one("SELECT now FROM world_clock WHERE id = 1")
        return None if row is None else float(row[0])

    def set_world_now(self, now: float) -> None:
        with self._db.write() as conn:
            set_now(conn, self._tables, now)

    def export_world(self, now: float) -> World:
        with self._db.snapshot() as conn:
            return export_from(conn, self._tables, now)
