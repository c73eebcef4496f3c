# Owns: `Dialect`, everything the shared SQL code (this package) needs to know about one
# database engine: its placeholder, how text / booleans / JSON cross the driver, which
# exception a duplicate key raises, how a row is locked for a read-then-write, how one
# statement runs for many rows; and the small Protocols the shared code types a
# connection (`Executor`) and a store's database handle (`Database`) with.
#
# Must never: hold engine-specific behaviour anywhere else in _sql (a difference between
# SQLite and PostgreSQL is a field here, or it stays in the adapter package).
#
# Invariants:
#   Rule 1: shared SQL text is written with `?` placeholders and no literal `%` or `?`;
#           `Dialect.sql` turns it into the engine's text (`%s` for psycopg).
#   Rule 2: `text_in` / `text_out` are each other's inverse on every str (PostgreSQL's
#           NUL escape, the identity on SQLite) and preserve equality and order.
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

import attrs


@attrs.frozen
class Statement:
    sql: str
    params: tuple[Any, ...]


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Executor(Protocol):
    """A connection (sqlite3 or psycopg) as the shared code uses it: one statement at a time."""

    def execute(self, query: str, params: Sequence[Any] = ..., /) -> Cursor: ...


class Database(Protocol):
    """A store's database handle (sqlite/_conn.Connection, postgres/_conn.Database)."""

    def read(self, query: str, params: Sequence[Any] = ...) -> list[tuple[Any, ...]]: ...

    def read_one(self, query: str, params: Sequence[Any] = ...) -> tuple[Any, ...] | None: ...

    def run(self, query: str, params: Sequence[Any] = ...) -> int: ...

    def write(self) -> AbstractContextManager[Executor]:
        """One write transaction (BEGIN IMMEDIATE / READ COMMITTED), rolled back on error."""
        ...

    def snapshot(self) -> AbstractContextManager[Executor]:
        """One read transaction: several statements see one snapshot."""
        ...

    def atomic(self) -> AbstractContextManager[None]:
        """One transaction around everything the store does in the block (TRN-9)."""
        ...

    def update_one(
        self, update: Statement, reread: Statement, returning: str
    ) -> tuple[Any, ...] | None:
        """Run a compare-and-set UPDATE of one row atomically and return the changed row
        (its columns `returning`, as `reread` selects them); None when the UPDATE matched
        no row. SQLite: UPDATE + rowcount + SELECT under BEGIN IMMEDIATE; PostgreSQL:
        one UPDATE ... RETURNING."""
        ...


def _same(text: str) -> str:
    return text


@attrs.frozen
class Dialect:
    name: str  # in messages: "no SQLite codec for ..."
    param: str  # the driver's placeholder: "?" or "%s"
    container: str  # what holds the tables, in messages: "database" or "schema"
    # what the driver raises for a duplicate key (wrapped by the connection layer, TRN-8:
    # test with `is_duplicate_key`)
    duplicate_key: type[Exception]
    bool_in: Callable[[bool], object]  # a bool as bound (0/1 or a real boolean)
    json_in: Callable[[Mapping[str, str | None]], object]  # a JSON object as bound
    json_out: Callable[[object], Mapping[str, Any]]  # a stored JSON object back
    # (connection, statement, rows): one statement run for every row
    execute_many: Callable[[Any, str, Sequence[Sequence[object]]], None]
    lock_row: str = ""  # appended to a SELECT that is followed by a write of that row
    # appended to the claim SELECT of a queue (claim_next_task): lock the row, skip rows
    # other claimers hold (PostgreSQL); SQLite's BEGIN IMMEDIATE serialises writers already
    skip_locked: str = ""
    text_in: Callable[[str], str] = _same  # Rule 2
    text_out: Callable[[str], str] | None = None  # None: stored text is the text
    table_suffix: str = ""  # after a CREATE TABLE's closing parenthesis (" STRICT")

    def is_duplicate_key(self, exc: BaseException) -> bool:
        """Whether `exc` (the store's error, TRN-8, or the driver's own) is a duplicate key:
        the connection layer wraps the driver's exception, keeping it as `__cause__`."""
        return isinstance(exc, self.duplicate_key) or isinstance(exc.__cause__, self.duplicate_key)

    def sql(self, text: str) -> str:
        """Rule 1: shared `?` text -> this engine's statement text."""
        return text if self.param == "?" else text.replace("?", self.param)

    def params(self, count: int) -> str:
        return ", ".join(self.param for _ in range(count))

    def bind_text(self, value: str) -> str:
        """A str parameter as bound (compared with stored text)."""
        return self.text_in(value)

    def stored_text(self, value: Any) -> str:
        """A stored text value as Python text."""
        return str(value) if self.text_out is None else self.text_out(value)
