# Owns: PermissionLookup adapters (DOM-6, GAT-2, GAT-4):
#   SqlitePermissions    table-backed grants in SQLite (sqlite-utils):
#                          permission_grants(user, project, grant)   direct grants
#                          role_grants(role, grant)                  what a role grants
#                          user_roles(user, project, role)           roles per project
#                        a user holds a permission on a project when a direct grant or
#                        one of its roles on that project grants it.
#   CallablePermissions  wraps the caller's own function with a timeout.
#   StaticPermissions    a fixed mapping (tests, demos, single-user workers).
# `ensure_permission_tables(db)` creates the three tables; the SQLite storage adapter
# calls it so one database serves both.
#
# Invariants:
#   Rule 1: a lookup answers True only for an explicit grant; a null user holds nothing.
#   Rule 2: a lookup that cannot answer raises - missing tables, an unreadable
#           database, a callable that raises, returns a non-bool or exceeds its timeout.
#           Delivery turns the raise into a failed answer: cancel/retry narrow to
#           lineage (GAT-2), everything else denies (GAT-4). Never guess "granted".
#   Rule 3: a database given by path is opened read-only per lookup (thread-safe; a
#           mistyped path fails instead of creating an empty database).
from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Final

import sqlite_utils

from markertools import InvalidArgument
from markertools_adapters.errors import MarkertoolsError

PERMISSION_TABLES: Final[tuple[str, ...]] = ("permission_grants", "role_grants", "user_roles")

_LOOKUP_SQL: Final[str] = """
SELECT EXISTS (
    SELECT 1 FROM permission_grants
    WHERE "user" = :user AND project = :project AND "grant" = :grant
) OR EXISTS (
    SELECT 1 FROM user_roles AS ur JOIN role_grants AS rg ON rg.role = ur.role
    WHERE ur."user" = :user AND ur.project = :project AND rg."grant" = :grant
)
"""


def ensure_permission_tables(db: sqlite_utils.Database) -> None:
    """Create the permission tables (and nothing else) when they do not exist."""
    db.table("permission_grants").create(
        {"user": str, "project": str, "grant": str},
        pk=("user", "project", "grant"),
        not_null={"user", "project", "grant"},
        if_not_exists=True,
    )
    db.table("role_grants").create(
        {"role": str, "grant": str},
        pk=("role", "grant"),
        not_null={"role", "grant"},
        if_not_exists=True,
    )
    db.table("user_roles").create(
        {"user": str, "project": str, "role": str},
        pk=("user", "project", "role"),
        not_null={"user", "project", "role"},
        if_not_exists=True,
    )


def grant_permissions(
    db: sqlite_utils.Database, user: str, project: str, grants: Iterable[str]
) -> None:
    """Add direct grants (idempotent)."""
    ensure_permission_tables(db)
    rows = [{"user": user, "project": project, "grant": g} for g in grants]
    db.table("permission_grants").insert_all(rows, ignore=True)


def define_role(db: sqlite_utils.Database, role: str, grants: Iterable[str]) -> None:
    """Add grants to a role (idempotent)."""
    ensure_permission_tables(db)
    db.table("role_grants").insert_all([{"role": role, "grant": g} for g in grants], ignore=True)


def assign_role(db: sqlite_utils.Database, user: str, project: str, role: str) -> None:
    """Give `user` the role on `project` (idempotent)."""
    ensure_permission_tables(db)
    db.table("user_roles").insert({"user": user, "project": project, "role": role}, ignore=True)


class SqlitePermissions:
    """Table-backed lookup. `db` is an open sqlite-utils Database (used as is, from the
    thread that opened it) or a path (opened read-only for each lookup)."""

    def __init__(self, db: sqlite_utils.Database | str | Path, *, timeout: float = 5.0) -> None:
        self._db = db if isinstance(db, sqlite_utils.Database) else None
        self._path = None if isinstance(db, sqlite_utils.Database) else Path(db)
        self._timeout = timeout

    def has_permission(self, user: str | None, project_id: str, permission: str) -> bool:
        if user is None:
            return False
        params = {"user": user, "project": project_id, "grant": permission}
        if self._db is not None:
            row = self._db.execute(_LOOKUP_SQL, params).fetchone()
            return bool(row[0])
        assert self._path is not None
        uri = self._path.resolve().as_uri() + "?mode=ro"
        conn = sqlite3.connect(uri, uri=True, timeout=self._timeout)
        try:
            row = conn.execute(_LOOKUP_SQL, params).fetchone()
        finally:
            conn.close()
        return bool(row[0])


class StaticPermissions:
    """Grants from a mapping {(user, project): {grant, ...}}."""

    def __init__(self, grants: Mapping[tuple[str, str], Iterable[str]]) -> None:
        self._grants = {key: frozenset(values) for key, values in grants.items()}

    def has_permission(self, user: str | None, project_id: str, permission: str) -> bool:
        if user is None:
            return False
        return permission in self._grants.get((user, project_id), frozenset())


class PermissionLookupTimeout(TimeoutError, MarkertoolsError):
    """The wrapped lookup did not answer in time; delivery treats it as a failed lookup."""


class PermissionLookupError(RuntimeError, MarkertoolsError):
    """The wrapped lookup answered something that is not a bool."""


PermissionFunction = Callable[[str, str, str], bool]


class CallablePermissions:
    """Runs `fn(user, project_id, permission)` with a timeout (Rule 2). A null user
    holds nothing (Rule 1): `fn` is never asked about one.

    Each lookup runs on a daemon thread; the caller waits at most `timeout_seconds`
    (counted from the call). A lookup that times out raises PermissionLookupTimeout;
    its thread is abandoned (Python cannot stop it) but holds one of `max_in_flight`
    slots until it returns, so hung lookups cannot pile up threads: when every slot is
    held, new lookups time out too. `fn` must return a bool: anything else raises
    PermissionLookupError (a truthy string is not a grant)."""

    def __init__(
        self, fn: PermissionFunction, timeout_seconds: float, *, max_in_flight: int = 8
    ) -> None:
        if timeout_seconds <= 0:
            raise InvalidArgument("timeout_seconds must be positive")
        self._fn = fn
        self.timeout_seconds = timeout_seconds
        self._slots = threading.BoundedSemaphore(max_in_flight)

    def has_permission(self, user: str | None, project_id: str, permission: str) -> bool:
        if user is None:  # Rule 1: no creator, nobody to grant anything to
            return False
        deadline = time.monotonic() + self.timeout_seconds
        if not self._slots.acquire(timeout=self.timeout_seconds):
            raise PermissionLookupTimeout(
                f"permission lookup for {permission!r} timed out after "
                f"{self.timeout_seconds:g}s (every lookup slot is held by earlier lookups)"
            )
        done = threading.Event()
        box: dict[str, object] = {}

        def run() -> None:
            try:
                box["value"] = self._fn(user, project_id, permission)
            except BaseException as exc:  # delivered to the caller below
                box["error"] = exc
            finally:
                self._slots.release()
                done.set()

        threading.Thread(target=run, name="markertools-permission-lookup", daemon=True).start()
        if not done.wait(max(0.0, deadline - time.monotonic())):
            raise PermissionLookupTimeout(
                f"permission lookup for {permission!r} timed out after {self.timeout_seconds:g}s"
            )
        error = box.get("error")
        if isinstance(error, BaseException):
            raise error
        value = box.get("value")
        if not isinstance(value, bool):
            raise PermissionLookupError(
                f"permission lookup for {permission!r} returned {type(value).__name__}, not a bool"
            )
        return value
