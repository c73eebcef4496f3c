# Owns: `PostgresStore`, the shared-database storage adapter for a fleet of worker hosts:
# one object implementing every storage port of markertools.domain.ports (TaskStore, TodoStore,
# AutomationStore, ProjectLookup, CostLookup, AttemptLedger, AuditLog, FollowupQueue),
# the table-backed PermissionLookup and WorldStore, assembled from per-area mixins over
# one connection pool - the same mixin layout as SqliteStore, and the same shared mixins
# (markertools_adapters._sql: automations, small ports, world load / export).
#
# Must never: be used before its schema is migrated (the constructor migrates or
# refuses); hold a transaction open between method calls.
#
# Invariants:
#   Rule 1: opening runs `migrate` on a direct connection first (so a wrong DSN or a
#           refused schema fails at once with the server's own message, not as a pool
#           timeout); an older schema is brought forward, a newer one is refused.
#   Rule 2: every method is safe to call from several threads (the pool hands each call
#           its own connection) and from several processes and hosts (every transition
#           is compare-and-set in the database).
#           With must_exist=True a schema without markertools tables is refused instead
#           of created (inspecting commands never create a database).
#   Rule 3: change_waiter() is created lazily, once, and closed with the store.
#   Rule 5 (TRN-8): no psycopg exception leaves the store: opening, migrating and every
#           method reach the server through _conn, which turns a driver exception into
#           StoreUnavailable / StoreError (postgres/_conn.py Rule 5).
#   Rule 4: hosts opening a new `schema` at once create it once (_schema.create_schema_once:
#           CREATE SCHEMA under the schema's migration lock; a bare CREATE SCHEMA IF NOT
#           EXISTS fails with a duplicate-key error when two sessions race).
from __future__ import annotations

import threading

from markertools_adapters._carries import CarriesPorts
from markertools_adapters._sql import (
    ApprovalMixin,
    AutomationMixin,
    FenceMixin,
    FinishMixin,
    JournalMixin,
    LeaseMixin,
    RecordsMixin,
    SchemaError,
    ToolsMixin,
    WorkerMixin,
    WorldMixin,
)
from markertools_adapters.postgres._codec import TABLES
from markertools_adapters.postgres._conn import (
    DEFAULT_POOL_SIZE,
    DRIVER_ERRORS,
    Conn,
    Database,
    connect,
    set_search_path,
)
from markertools_adapters.postgres._notify import PgChangeWaiter
from markertools_adapters.postgres._permissions import PermissionMixin
from markertools_adapters.postgres._schema import (
    LATEST_VERSION,
    create_schema_once,
    current_schema,
    migrate,
    read_version,
)
from markertools_adapters.postgres._tasks import TaskMixin
from markertools_adapters.postgres._todos import TodoMixin


class PostgresStore(
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
    PermissionMixin,
    ApprovalMixin,
    WorldMixin,
    CarriesPorts,
):
    """Every storage port on one PostgreSQL schema, through a connection pool."""

    _db: Database
    _tables = TABLES

    def __init__(
        self,
        dsn: str,
        *,
        pool_size: int = DEFAULT_POOL_SIZE,
        schema: str | None = None,
        create_schema: bool = True,
        must_exist: bool = False,
        migrate_to: int = LATEST_VERSION,
    ) -> None:
        setup = connect(dsn, None)
        try:
            with DRIVER_ERRORS:  # Rule 5: migration statements fail as the store's errors
                self._schema = self._prepare(setup, schema, create_schema, must_exist, migrate_to)
        finally:
            with DRIVER_ERRORS:
                setup.close()
        self._dsn = dsn
        self._db = Database(
            dsn, schema=schema, pool_size=pool_size, name=f"markertools:{self._schema}"
        )
        self._waiter: PgChangeWaiter | None = None
        self._waiter_lock = threading.Lock()

    @staticmethod
    def _prepare(
        setup: Conn, schema: str | None, create_schema: bool, must_exist: bool, migrate_to: int
    ) -> str:
        """Create (unless `must_exist`), select and migrate the schema; its name."""
        if must_exist:
            create_schema = False
        if schema is not None and create_schema:
            create_schema_once(setup, schema)
        if schema is not None:
            set_search_path(setup, schema)
        try:
            name = current_schema(setup)
        except SchemaError:
            if schema is None:
                raise
            raise SchemaError(f"schema {schema!r} does not exist") from None
        if must_exist and read_version(setup) == 0:
            raise SchemaError(
                f"schema {name!r} holds no markertools tables "
                "(create them with `markertools world load` or open_store())"
            )
        migrate(setup, target=migrate_to)
        return name

    @property
    def schema(self) -> str:
        """The PostgreSQL schema holding this store's tables."""
        return self._schema

    @property
    def schema_version(self) -> int:
        with self._db.connection() as conn:
            return read_version(conn)

    def change_waiter(self) -> PgChangeWaiter:
        """The store's ChangeWaiter (LISTEN/NOTIFY), for `Ports.waiter`; created once."""
        with self._waiter_lock:
            if self._waiter is None:
                self._waiter = PgChangeWaiter(self._dsn, schema=self._schema)
            return self._waiter

    def close(self) -> None:
        with self._waiter_lock:
            waiter, self._waiter = self._waiter, None
        if waiter is not None:
            waiter.close()
        self._db.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
