# Owns: `SqliteStore`, the embedded default storage adapter: one object implementing every
# storage port of markertools.domain.ports (TaskStore, TodoStore, AutomationStore,
# ProjectLookup, CostLookup, AttemptLedger, AuditLog, FollowupQueue), the table-backed
# PermissionLookup and WorldStore, assembled from per-area mixins over one Connection:
# this package's (tasks, todos) and the ones shared with the PostgreSQL adapter
# (markertools_adapters._sql: automations, small ports, world load / export).
#
# Must never: be used before its schema is migrated (the constructor migrates or
# refuses); hold a transaction open between method calls.
#
# Invariants:
#   Rule 1: opening runs `migrate`: an older database is brought forward, a newer one is
#           refused (SchemaTooNew) and the connection closed.
#   Rule 2: every method is safe to call from several threads (one lock per connection)
#           and from several processes on one file (WAL + BEGIN IMMEDIATE writes).
#   Rule 3: has_permission(None, ...) is False (a task without creator has no grants); the
#           grants are the table-backed lookup's rows (SqlitePermissions) in this file.
#   Rule 4 (TRN-8): every method reaches sqlite3 through the Connection, whose methods turn
#           a driver exception into StoreUnavailable / StoreError (sqlite/_conn.py Rule 4).
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from markertools_adapters._carries import CarriesPorts
from markertools_adapters._sql import (
    ApprovalMixin,
    AutomationMixin,
    FenceMixin,
    FinishMixin,
    JournalMixin,
    LeaseMixin,
    RecordsMixin,
    ToolsMixin,
    WorkerMixin,
    WorldMixin,
)
from markertools_adapters.permissions import SqlitePermissions
from markertools_adapters.sqlite._codec import TABLES
from markertools_adapters.sqlite._conn import DEFAULT_BUSY_TIMEOUT, Connection
from markertools_adapters.sqlite._schema import LATEST_VERSION, migrate, read_version
from markertools_adapters.sqlite._tasks import TaskMixin
from markertools_adapters.sqlite._todos import TodoMixin


class SqliteStore(
    TaskMixin,
    TodoMixin,
    AutomationMixin,
    RecordsMixin,
    ToolsMixin,
    WorkerMixin,
    LeaseMixin,
    FenceMixin,
    FinishMixin,
    JournalMixin,
    ApprovalMixin,
    WorldMixin,
    CarriesPorts,
):
    """Every storage port on one SQLite database file (or ":memory:")."""

    _db: Connection
    _tables = TABLES

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        migrate_to: int = LATEST_VERSION,
    ) -> None:
        self._db = Connection(path, busy_timeout=busy_timeout)
        try:
            with self._db.raw() as conn:
                migrate(conn, target=migrate_to)
        except BaseException:
            self._db.close()
            raise

    def has_permission(self, user: str | None, project_id: str, permission: str) -> bool:
        """Direct grants or a role's grants on the project (markertools_adapters.permissions
        tables, in this database); a null user holds nothing."""
        with self._db.raw():
            return SqlitePermissions(self._db.db).has_permission(user, project_id, permission)

    @property
    def path(self) -> str:
        return self._db.path

    @property
    def schema_version(self) -> int:
        with self._db.raw() as conn:
            return read_version(conn)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def traced(self, callback: Callable[[str], None]) -> Iterator[None]:
        """Call `callback(sql)` for every statement run inside the block (benchmarks)."""
        with self._db.lock:
            self._db.conn.set_trace_callback(callback)
        try:
            yield
        finally:
            with self._db.lock:
                self._db.conn.set_trace_callback(None)
