# Owns: the one SQLite connection a store uses - how it is opened (autocommit mode, WAL,
# busy timeout, the case-folding SQL function), and the ways code may touch it (the
# shared code's `Database` protocol, markertools_adapters._sql): `read` / `read_one` /
# `run` (one statement, its own implicit transaction), `snapshot()` (BEGIN ... COMMIT, a
# read-only snapshot), `write()` (BEGIN IMMEDIATE ... COMMIT, rolled back on any
# exception) and `update_one` (a compare-and-set UPDATE and its re-read, in `write()`).
#
# Must never: open a deferred transaction that reads and then writes (under WAL a
# concurrent commit turns its write into SQLITE_BUSY, or worse, a write based on a stale
# read); leave a transaction open after an exception; share the connection between
# threads without the lock.
#
# Invariants:
#   Rule 1: the sqlite3 connection runs with isolation_level=None: Python never opens a
#           transaction behind our back; every multi-statement change is inside `write()`.
#   Rule 2: `write()` takes the database's write lock up front (BEGIN IMMEDIATE), so
#           every compare-and-set it holds sees the latest committed state and no other
#           writer can interleave; waiting for the lock is bounded by the busy timeout.
#   Rule 3: every public method holds `lock` for its whole use of the connection.
#   Rule 4 (TRN-8, FLT-8): no sqlite3 exception leaves this module: `DriverErrors` turns
#           a sqlite3.OperationalError a retry can cure (locked, busy, disk I/O) into
#           StoreUnavailable and every other sqlite3.Error into StoreError, the driver's exception kept as
#           `__cause__` and named in the message. Every method below, opening the
#           connection included, runs under it.
from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

import sqlite_utils

from markertools_adapters._sql import Statement
from markertools_adapters.errors import StoreError, StoreUnavailable

DEFAULT_BUSY_TIMEOUT: Final[float] = 30.0  # seconds a writer waits for the write lock


def fold(text: object) -> str | None:
    """Case folding for q searches (TLS-1, TDL-1): `str.lower`, exactly as the memory
    model, so `instr(mt_fold(col), fold(q)) > 0` is `q.lower() in col.lower()`."""
    if text is None:
        return None
    return str(text).lower()


def driver_detail(exc: BaseException) -> str:
    """The driver's exception as the wrapped error's message: its class and text."""
    return f"{type(exc).__name__}: {exc}"


class DriverErrors:
    """Rule 4: a context in which a sqlite3 exception becomes the store's own error
    (StoreUnavailable for OperationalError, StoreError for the rest, `from` the driver's).
    A plain class, not a generator: it sits on every statement."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        if exc is None or not isinstance(exc, sqlite3.Error):
            return False
        if isinstance(exc, sqlite3.OperationalError) and retryable(exc):
            raise StoreUnavailable(driver_detail(exc)) from exc
        raise StoreError(driver_detail(exc)) from exc


# FLT-8: the operational errors a retry can cure (another writer holds the lock, the disk
# hiccuped); every other one - no such table, a file that cannot be opened, a read-only
# database - is a StoreError, which no retry cures.
RETRYABLE: Final[tuple[str, ...]] = ("locked", "busy", "disk i/o error", "interrupted")


def retryable(exc: BaseException) -> bool:
    """FLT-8: whether a sqlite3.OperationalError is one a retry can cure."""
    text = str(exc).lower()
    return any(phrase in text for phrase in RETRYABLE)


DRIVER_ERRORS: Final[DriverErrors] = DriverErrors()


class Connection:
    """A store's connection: sqlite3 in autocommit mode plus its sqlite-utils wrapper."""

    def __init__(self, path: str | Path, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> None:
        self.path = str(path)
        with DRIVER_ERRORS:
            self.conn = sqlite3.connect(
                self.path,
                timeout=busy_timeout,
                isolation_level=None,
                check_same_thread=False,
            )
        self.lock = threading.RLock()
        self._atomic_depth = 0  # > 0: inside `atomic()` (the lock is held by its thread)
        self._savepoints = 0
        try:
            with DRIVER_ERRORS:
                self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
                self.conn.create_function("mt_fold", 1, fold, deterministic=True)
                self.db = sqlite_utils.Database(self.conn, execute_plugins=False)
                if self.path != ":memory:" and not self.path.startswith("file::memory:"):
                    # WAL: readers never block the writer; a killed writer leaves whole
                    # commits only.
                    self.db.enable_wal()
                    # NORMAL is durable against process crashes (SIGKILL) in WAL mode; only
                    # an OS crash or power loss may drop the last commits (never corrupt).
                    self.conn.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            self.conn.close()
            raise

    def close(self) -> None:
        with self.lock, DRIVER_ERRORS:
            self.conn.close()

    @contextlib.contextmanager
    def raw(self) -> Iterator[sqlite3.Connection]:
        """The sqlite3 connection for code that talks to it directly (migrations, the
        permission tables), under the lock and Rule 4."""
        with self.lock, DRIVER_ERRORS:
            yield self.conn

    # ---- reads -------------------------------------------------------------------------

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.lock, DRIVER_ERRORS:
            return self.conn.execute(sql, params).fetchall()

    def read_one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        with self.lock, DRIVER_ERRORS:
            row: tuple[Any, ...] | None = self.conn.execute(sql, params).fetchone()
            return row

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """BEGIN ... COMMIT around several reads: one snapshot (read-only use)."""
        with self.lock, DRIVER_ERRORS:
            conn = self.conn
            if self._atomic_depth:  # already inside atomic(): its transaction is the snapshot
                yield conn
                return
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")

    # ---- writes ------------------------------------------------------------------------

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """One statement in its own implicit transaction; returns its rowcount."""
        with self.lock, DRIVER_ERRORS:
            return self.conn.execute(sql, params).rowcount

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT; any exception rolls back and propagates."""
        with self.lock, DRIVER_ERRORS:
            conn = self.conn
            if self._atomic_depth:  # inside atomic(): a savepoint of its transaction
                self._savepoints += 1
                name = f"mt_sp{self._savepoints}"
                conn.execute(f"SAVEPOINT {name}")
                try:
                    yield conn
                    conn.execute(f"RELEASE {name}")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute(f"ROLLBACK TO {name}")
                        conn.execute(f"RELEASE {name}")
                    raise
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:  # the block or the COMMIT failed
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        """TRN-9: one BEGIN IMMEDIATE transaction around everything the store does in the
        block (its writes become savepoints), committed at the end, rolled back on any
        exception. Nested calls join the outer transaction."""
        with self.lock, DRIVER_ERRORS:
            if self._atomic_depth:
                self._atomic_depth += 1
                try:
                    yield
                finally:
                    self._atomic_depth -= 1
                return
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            self._atomic_depth = 1
            try:
                yield
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            finally:
                self._atomic_depth = 0

    def update_one(
        self, update: Statement, reread: Statement, returning: str
    ) -> tuple[Any, ...] | None:
        """Rule 2: UPDATE + rowcount check + re-read under one BEGIN IMMEDIATE; None when
        the UPDATE matched no row (`returning` is implied by `reread`)."""
        with self.write() as conn:
            if conn.execute(update.sql, update.params).rowcount != 1:
                return None
            row: tuple[Any, ...] | None = conn.execute(reread.sql, reread.params).fetchone()
            return row
