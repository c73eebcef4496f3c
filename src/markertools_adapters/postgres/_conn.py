# Owns: how a PostgresStore reaches the server - the connection pool (psycopg_pool, sized
# by the caller), the per-connection setup (autocommit, READ COMMITTED, search_path of
# the chosen schema, connect timeout), and the ways code may use a connection (the
# shared code's `Database` protocol, markertools_adapters._sql): `read`/`read_one`/`run`
# (one statement, atomic on its own), `update_one` (one UPDATE ... RETURNING),
# `snapshot()` (one REPEATABLE READ, READ ONLY transaction) and `write()` (one READ
# COMMITTED transaction, rolled back on any exception).
#
# Must never: leave a transaction open when a connection goes back to the pool; build SQL
# from data (only codec column names and fixed text are interpolated); hide a connection
# failure behind a pool timeout when the real server error is available.
#
# Invariants:
#   Rule 1: pooled connections run in autocommit mode: a single statement is its own
#           transaction; every multi-statement change is inside `write()`.
#   Rule 2: with a `schema`, every connection's search_path is exactly that schema, so a
#           store never reads or writes another schema's tables by accident.
#   Rule 3: compare-and-set is never read-then-write in Python without a row lock: it is
#           `UPDATE ... WHERE status = <expected>` (READ COMMITTED re-checks the WHERE on
#           the newest row version after waiting for a concurrent writer) or SELECT ...
#           FOR UPDATE inside `write()`.
#   Rule 4: every connection (pooled, migration, LISTEN) runs READ COMMITTED whatever the
#           server's, database's or role's default_transaction_isolation: Rule 3 and the
#           migration lock (re-read the version after the lock) rely on each statement
#           seeing the newest commits; under a REPEATABLE READ / SERIALIZABLE default a
#           losing compare-and-set would raise a serialization failure instead of being
#           "changed meanwhile". (snapshot() sets its own isolation level explicitly.)
#   Rule 5 (TRN-8, FLT-8): no psycopg exception leaves this module: `DriverErrors`
#           turns a psycopg.OperationalError a retry can cure (the server unreachable or
#           gone, a connection cut, a pool timeout, a serialization failure) into
#           StoreUnavailable and every other psycopg.Error - a missing database or role,
#           refused credentials included - into StoreError, the driver's exception kept as `__cause__` and
#           named in the message. Every method below, connecting included, runs under it.
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Final, Literal

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from markertools import InvalidArgument
from markertools_adapters._sql import Statement
from markertools_adapters.errors import BadDatabaseUrl, StoreError, StoreUnavailable

DEFAULT_POOL_SIZE: Final[int] = 4
DEFAULT_CONNECT_TIMEOUT: Final[int] = 5  # seconds (libpq waits forever by default)
# seconds to wait for a free pooled connection - short, so an outage is noticed (and
# ridden out by the caller's retries, FLT-3) rather than hidden in one long wait
DEFAULT_POOL_TIMEOUT: Final[float] = 5.0

Conn = psycopg.Connection[tuple[Any, ...]]
Params = Sequence[Any] | Mapping[str, Any]


def driver_detail(exc: BaseException) -> str:
    """The driver's exception as the wrapped error's message: its class and text."""
    return f"{type(exc).__name__}: {exc}"


class DriverErrors:
    """Rule 5: a context in which a psycopg exception becomes the store's own error
    (StoreUnavailable for OperationalError, StoreError for the rest, `from` the driver's)."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        if exc is None or not isinstance(exc, psycopg.Error):
            return False
        if isinstance(exc, psycopg.OperationalError) and retryable(exc):
            raise StoreUnavailable(driver_detail(exc)) from exc
        raise StoreError(driver_detail(exc)) from exc


# FLT-8: operational errors no retry cures - the database or role does not exist, the
# credentials are refused, the connection string is wrong: StoreError, not
# StoreUnavailable (a server that is down, restarting or cut off is retried).
NOT_RETRYABLE_STATES: Final[frozenset[str]] = frozenset({"3D000", "28000", "28P01", "42501"})
NOT_RETRYABLE_TEXT: Final[tuple[str, ...]] = (
    "does not exist",
    "authentication failed",
    "no password supplied",
    "password authentication",
    "invalid dsn",
    "invalid connection option",
    "invalid integer value",
    "invalid sslmode",
    "permission denied",
)


def retryable(exc: BaseException) -> bool:
    """FLT-8: whether a psycopg.OperationalError is one a retry can cure."""
    if getattr(exc, "sqlstate", None) in NOT_RETRYABLE_STATES:
        return False
    text = str(exc).lower()
    return not any(phrase in text for phrase in NOT_RETRYABLE_TEXT)


DRIVER_ERRORS: Final[DriverErrors] = DriverErrors()


def connect_kwargs(dsn: str) -> dict[str, Any]:
    """Connection keywords: autocommit, plus a connect timeout unless the DSN sets one."""
    kwargs: dict[str, Any] = {"autocommit": True}
    try:
        given = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        detail = " ".join(str(exc).split())
        raise BadDatabaseUrl(f"invalid PostgreSQL connection string: {detail}") from None
    if "connect_timeout" not in given:
        kwargs["connect_timeout"] = DEFAULT_CONNECT_TIMEOUT
    return kwargs


def set_search_path(conn: Conn, schema: str | None) -> None:
    if schema is not None:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))


def configure(conn: Conn, schema: str | None) -> None:
    """Session setup of every connection: Rule 4 (READ COMMITTED), Rule 2 (search_path)."""
    conn.execute("SET default_transaction_isolation TO 'read committed'")
    set_search_path(conn, schema)


def connect(dsn: str, schema: str | None) -> Conn:
    """One direct connection (migrations, LISTEN), set up like the pooled ones (Rule 5:
    a failure is StoreUnavailable / StoreError)."""
    with DRIVER_ERRORS:
        conn: Conn = psycopg.connect(dsn, **connect_kwargs(dsn))
        try:
            configure(conn, schema)
        except BaseException:
            conn.close()
            raise
    return conn


class Database:
    """The pool a store uses, and its statement helpers."""

    def __init__(self, dsn: str, *, schema: str | None, pool_size: int, name: str) -> None:
        if not isinstance(pool_size, int) or isinstance(pool_size, bool) or pool_size < 1:
            raise InvalidArgument(f"pool_size must be an integer >= 1, not {pool_size!r}")
        self.dsn = dsn
        self.schema = schema

        def configure_pooled(conn: Conn) -> None:
            configure(conn, schema)

        self.pool: ConnectionPool[Conn] = ConnectionPool(
            dsn,
            min_size=1,
            max_size=pool_size,
            kwargs=connect_kwargs(dsn),
            configure=configure_pooled,
            timeout=DEFAULT_POOL_TIMEOUT,
            name=name,
            open=False,
        )
        with DRIVER_ERRORS:
            self.pool.open(wait=True, timeout=DEFAULT_POOL_TIMEOUT)
        self._local = threading.local()  # `atomic()`'s connection, per thread

    def close(self) -> None:
        with DRIVER_ERRORS:
            self.pool.close()

    @contextlib.contextmanager
    def connection(self) -> Iterator[Conn]:
        held: Conn | None = getattr(self._local, "conn", None)
        with DRIVER_ERRORS:
            if held is not None:  # inside atomic(): every statement joins its transaction
                yield held
                return
            with self.pool.connection() as conn:
                yield conn

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        """TRN-9: one READ COMMITTED transaction on one connection around everything this
        thread does through the store in the block (its `write()`s become savepoints);
        committed at the end, rolled back on any exception. Nested calls join it."""
        if getattr(self._local, "conn", None) is not None:
            yield
            return
        with DRIVER_ERRORS, self.pool.connection() as conn, conn.transaction():
            self._local.conn = conn
            try:
                yield
            finally:
                self._local.conn = None

    # ---- one statement ---------------------------------------------------------------

    def read(self, query: str, params: Params = ()) -> list[tuple[Any, ...]]:
        with self.connection() as conn:
            return conn.execute(query, params).fetchall()

    def read_one(self, query: str, params: Params = ()) -> tuple[Any, ...] | None:
        with self.connection() as conn:
            return conn.execute(query, params).fetchone()

    def run(self, query: str, params: Params = ()) -> int:
        """Execute one statement; returns its rowcount."""
        with self.connection() as conn:
            return conn.execute(query, params).rowcount

    def update_one(
        self, update: Statement, reread: Statement, returning: str
    ) -> tuple[Any, ...] | None:
        """Rule 3: ONE `UPDATE ... RETURNING <returning>` (READ COMMITTED re-checks the
        WHERE on the newest row version); `reread` is not needed here."""
        return self.read_one(f"{update.sql} RETURNING {returning}", update.params)

    # ---- transactions ----------------------------------------------------------------

    @contextlib.contextmanager
    def write(self) -> Iterator[Conn]:
        """One READ COMMITTED transaction: committed on success, rolled back on error."""
        # inside atomic(): a savepoint
        with DRIVER_ERRORS, self.connection() as conn, conn.transaction():
            yield conn

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Conn]:
        """One REPEATABLE READ, READ ONLY transaction: several reads see one snapshot."""
        held: Conn | None = getattr(self._local, "conn", None)
        if held is not None:  # inside atomic(): its transaction is the snapshot
            with DRIVER_ERRORS:
                yield held
            return
        with DRIVER_ERRORS, self.pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield conn
