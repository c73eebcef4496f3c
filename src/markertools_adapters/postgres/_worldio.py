# Owns: WorldStore on PostgreSQL - filling an empty schema from a `World` in one
# transaction, and exporting every record back in the canonical order from one snapshot.
#
# Must never: load into a schema that already holds records (a world load is a fresh
# start, never a merge); export from more than one snapshot.
#
# Invariants:
#   Rule 1: load_world is one transaction: records are encoded (and duplicate keys found)
#           in Python first, so an error names the record; any failure rolls the whole
#           load back. Permission entries of one (user, project) are merged, as in the
#           memory model; an entry with no grants survives (permission_entries).
#   Rule 2: export_world reads every table inside one REPEATABLE READ transaction, in the
#           memory model's canonical order: ids ascending (COLLATE "C" = code point
#           order), costs by (task, round) then insertion, audit and follow-ups in
#           insertion order, permission entries by (user, project) with sorted grants.
#   Rule 3: the world's `now` is kept (world_clock) for `world dump` / `deliver --db`.
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, TypeVar

from markertools._model import Followup, PermissionGrant
from markertools_adapters.postgres._automations import automation_row, insert_automation_rows
from markertools_adapters.postgres._codec import (
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
from markertools_adapters.postgres._conn import Conn, Database
from markertools_adapters.postgres._text import dec, enc
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
K = TypeVar("K")


def _describe(record: Any) -> str:
    for attr in ("id", "user", "task_id", "sender"):
        value = getattr(record, attr, None)
        if isinstance(value, str):
            return f"{type(record).__name__} {value!r}"
    return type(record).__name__


def _encoded(
    records: Sequence[Any],
    encode: Callable[[Any], tuple[object, ...]],
    key: Callable[[Any], K] | None = None,
) -> list[tuple[object, ...]]:
    """Encode every record; a bad value or a duplicate key raises ValueError naming it."""
    seen: set[K] = set()
    out = []
    for record in records:
        if key is not None:
            k = key(record)
            if k in seen:
                raise ValueError(f"duplicate {_describe(record)}")
            seen.add(k)
        try:
            out.append(encode(record))
        except (TypeError, ValueError, OverflowError) as exc:
            raise ValueError(f"{_describe(record)}: {exc}") from exc
    return out


def _permission_rows(
    grants: Iterable[PermissionGrant],
) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """(permission_entries rows, permission_grants rows), merged per (user, project)."""
    merged: dict[tuple[str, str], set[str]] = {}
    for grant in grants:
        where = f"permissions {grant.user!r}/{grant.project!r}"
        for value in (grant.user, grant.project, *grant.grants):
            if not isinstance(value, str):
                raise ValueError(f"{where}: expected strings, got {type(value).__name__}")
        merged.setdefault((grant.user, grant.project), set()).update(grant.grants)
    entries: list[tuple[object, ...]] = [(enc(user), enc(project)) for user, project in merged]
    rows: list[tuple[object, ...]] = [
        (enc(user), enc(project), enc(name))
        for (user, project), names in merged.items()
        for name in sorted(names)
    ]
    return entries, rows


def load_into(conn: Conn, world: World) -> None:
    """Insert every record of `world` (the caller holds the write transaction)."""
    entries, grant_rows = _permission_rows(world.permissions)
    batches: list[tuple[str, list[tuple[object, ...]]]] = [
        (PROJECTS.insert_sql, _encoded(world.projects, PROJECTS.encode, lambda r: r.id)),
        ('INSERT INTO permission_entries ("user", project) VALUES (%s, %s)', entries),
        (
            'INSERT INTO permission_grants ("user", project, "grant") VALUES (%s, %s, %s)',
            grant_rows,
        ),
        (TASKS.insert_sql, _encoded(world.tasks, TASKS.encode, lambda r: r.id)),
        (TODOS.insert_sql, _encoded(world.todos, TODOS.encode, lambda r: r.id)),
        ("", _encoded(world.automations, automation_row, lambda r: r.id)),
        (COSTS.insert_sql, _encoded(world.costs, COSTS.encode)),
        (QUOTAS.insert_sql, _encoded(world.quotas, QUOTAS.encode, lambda r: r.user)),
        (
            ATTEMPTS.insert_sql,
            _encoded(world.attempts, ATTEMPTS.encode, lambda r: (r.task_id, r.attempt_no)),
        ),
        (AUDIT.insert_sql, _encoded(world.audit, AUDIT.encode)),
        (
            "INSERT INTO followups (task_id, text) VALUES (%s, %s)",
            _encoded(
                world.followups,
                lambda f: (enc(_text(f.task_id)), enc(_text(f.text))),
            ),
        ),
    ]
    nonempty = conn.execute(
        " UNION ALL ".join(f"(SELECT '{t}' FROM {t} LIMIT 1)" for t in WORLD_TABLES)
    ).fetchall()
    if nonempty:
        raise ValueError(
            f"cannot load a world into a schema that already has {nonempty[0][0]}"
            " (a world load only fills an empty schema)"
        )
    for insert_sql, rows in batches:
        if not rows:
            continue
        if not insert_sql:
            insert_automation_rows(conn, rows)
            continue
        with conn.cursor() as cur:
            cur.executemany(insert_sql, rows)


def _set_now(conn: Conn, now: float) -> None:
    if isinstance(now, bool) or not isinstance(now, (int, float)):
        raise TypeError(f"now: expected a number, got {type(now).__name__}")
    conn.execute(
        "INSERT INTO world_clock (id, now) VALUES (1, %s)"
        " ON CONFLICT (id) DO UPDATE SET now = excluded.now",
        (float(now),),
    )


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _rows(conn: Conn, codec: RecordCodec[Any], order: str) -> tuple[Any, ...]:
    rows = conn.execute(f"SELECT {codec.select_list} FROM {codec.table} ORDER BY {order}")
    return tuple(codec.decode(row) for row in rows.fetchall())


def export_from(conn: Conn, now: float) -> World:
    """Every record in canonical order (the caller holds one snapshot)."""
    held: dict[tuple[str, str], list[str]] = {
        (dec(user), dec(project)): []
        for user, project in conn.execute('SELECT "user", project FROM permission_entries')
    }
    for user, project, grant in conn.execute(
        'SELECT "user", project, "grant" FROM permission_grants'
    ).fetchall():
        held.setdefault((dec(user), dec(project)), []).append(dec(grant))
    grants = tuple(
        PermissionGrant(user=user, project=project, grants=tuple(sorted(held[(user, project)])))
        for user, project in sorted(held)
    )
    followups = tuple(
        Followup(task_id=dec(str(task_id)), text=dec(str(text)))
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
        quotas=_rows(conn, QUOTAS, '"user"'),
        attempts=_rows(conn, ATTEMPTS, "task_id, attempt_no"),
        audit=_rows(conn, AUDIT, "seq"),
        followups=followups,
    )


class WorldMixin:
    _db: Database

    def load_world(self, world: World) -> None:
        """Fill this empty schema from `world` and remember `world.now` (world_now)."""
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
        with self._db.snapshot() as conn:
            return export_from(conn, now)
