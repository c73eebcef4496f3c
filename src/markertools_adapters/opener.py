# Owns: the one way in for an embedding worker, `connect(url, executor=...)`: it reads what
# the user named (`sqlite:///w.db`, a plain path, `postgresql://...`, `memory:`), opens that
# store and hands it back carrying its `Ports` (SystemClock, SystemRandom, the named
# executor, PostgreSQL's LISTEN/NOTIFY waiter), typed as `markertools_adapters.Store`.
#
# Must never: import an adapter the URL does not name (psycopg and sqlite-utils are
# extras: a missing one is MissingExtra naming it); guess a store from an unknown URL
# scheme (`mysql://` is BadDatabaseUrl listing the forms, never a SQLite file of that
# name); show a password (errors name the URL through `stores.redact`); choose an
# executor silently (it is required, as for `store_ports`: NoExecutor without it).
#
# Invariants:
#   Rule 1: the store is opened exactly as its own `open_store` would (created when
#           absent and migrated, unless `must_exist`), so a database opened here and one
#           opened there are interchangeable.
#   Rule 2: what the store raises while opening is its own error (TRN-8: StoreUnavailable,
#           SchemaError, ...); the store is closed again when building the ports fails.
#   Rule 3 (FLT-8): every refusal here is a MarkertoolsError with one line of reason -
#           BadDatabaseUrl (also a ValueError), UnknownExecutor (ValueError), NoExecutor
#           (TypeError), DatabaseNotFound (FileNotFoundError), NotAMarkertoolsDatabase
#           (ValueError) - so `except MarkertoolsError` around `connect` catches them.
from __future__ import annotations

import re
from os import PathLike, fspath
from pathlib import Path
from typing import Final, Literal

from markertools import ChangeWaiter, Clock, RandomSource, TaskExecutor, TaskFiles
from markertools_adapters._carries import CarriesPorts, attach_ports
from markertools_adapters.errors import BadDatabaseUrl
from markertools_adapters.stores import missing_extra, redact
from markertools_adapters.wiring import NoExecutor, Store, executor_missing, store_ports

ExecutorName = Literal["noop", "local", "docker"]
URL_FORMS: Final[str] = (
    "sqlite:///PATH (or a plain file path), sqlite:///:memory:, "
    "postgresql://USER@HOST/DB, or memory:"
)
_SCHEME: Final[re.Pattern[str]] = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_POSTGRES: Final[frozenset[str]] = frozenset({"postgres", "postgresql"})
_PASSWORD: Final[re.Pattern[str]] = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:/@]*):[^@/]*@")


def shown(url: str) -> str:
    """`url` fit for a message: a password (user:PASSWORD@) is hidden, whatever the scheme."""
    return redact(_PASSWORD.sub(r"\1:***@", url))


def database_kind(url: str | PathLike[str]) -> tuple[Literal["memory", "sqlite", "postgres"], str]:
    """(kind, target) for what a user named: "memory:" -> ("memory", ""); a
    postgresql:// or postgres:// URL -> ("postgres", the URL); "sqlite:///PATH" ->
    ("sqlite", PATH) (four slashes: an absolute path; "sqlite://" or
    "sqlite:///:memory:" -> ":memory:"); any other text or path -> ("sqlite", it).
    BadDatabaseUrl (also a ValueError) for another scheme or an empty name."""
    if not isinstance(url, str):
        return "sqlite", fspath(url)
    if url == "memory:":
        return "memory", ""
    match = _SCHEME.match(url)
    if match is None:
        if not url.strip():
            raise BadDatabaseUrl(f"no database named; expected {URL_FORMS}")
        return "sqlite", url
    scheme = match.group(1).lower()
    if scheme in _POSTGRES:
        return "postgres", f"{scheme}://{url[match.end() :]}"
    if scheme == "sqlite":
        path = url[match.end() :]
        if path in ("", "/:memory:", ":memory:"):
            return "sqlite", ":memory:"
        if not path.startswith("/"):
            raise BadDatabaseUrl(
                f"{shown(url)}: a SQLite URL names a path after three slashes "
                "(sqlite:///relative.db, sqlite:////absolute.db)"
            )
        return "sqlite", path[1:]
    raise BadDatabaseUrl(
        f"{shown(url)}: unknown database URL scheme {scheme!r}; expected {URL_FORMS}"
    )


def connect(
    url: str | PathLike[str],
    *,
    executor: TaskExecutor | ExecutorName | None = None,
    clock: Clock | None = None,
    random: RandomSource | None = None,
    files: TaskFiles | None = None,
    waiter: ChangeWaiter | Literal["listen"] | None = "listen",
    must_exist: bool = False,
    schema: str | None = None,
    pool_size: int | None = None,
    busy_timeout: float | None = None,
) -> Store:
    """Open the store `url` names and return it carrying its `Ports` (`store.ports`).

    - `url`: `sqlite:///w.db` or a plain path `w.db` (the embedded SQLite store, created
      when absent), `sqlite:///:memory:`, `postgresql://user@host/db` (a fleet of hosts
      on one database; `schema=` picks the PostgreSQL schema, `pool_size=` bounds its
      connections), or `memory:` (an empty in-memory store: tests, demos).
    - `executor`: what kills a cancelled task's processes (CTL-2) - a TaskExecutor, or
      the CLI's names: "local" (process groups started through LocalProcessExecutor),
      "docker", "noop" (nothing is signalled; the report says so). Required: there is
      no silent default (left out or None: NoExecutor, a TypeError, says what to pass).
    - `clock`, `random`: SystemClock() and SystemRandom() unless given.
    - `files`: the task-files reader (None: task-files is refused with the reason).
    - `waiter`: "listen" (the default) wakes polls and waits early through PostgreSQL's
      LISTEN/NOTIFY, and means none for the other stores; or a ChangeWaiter, or None.
    - `must_exist`: refuse a database that is not already a markertools one instead of
      creating it (SQLite: DatabaseNotFound / NotAMarkertoolsDatabase; PostgreSQL:
      SchemaError, or a StoreError naming a database that does not exist).

    Close it with `store.close()` or `with connect(...) as store:`. Every refusal is a
    MarkertoolsError (Rule 3, docs/errors.md): BadDatabaseUrl for an unknown URL form,
    UnknownExecutor / NoExecutor for the executor, MissingExtra when the store's extra is
    not installed, and the store's own errors (StoreError; StoreUnavailable only for what
    a retry can cure; SchemaError, SchemaTooNew)."""
    from markertools_adapters.clock import SystemClock, SystemRandom

    kind, target = database_kind(url)
    if executor is None:
        raise executor_missing("connect")
    if isinstance(executor, str):
        from markertools_adapters.executors import make_executor

        chosen: TaskExecutor = make_executor(executor)
    else:
        chosen = executor
    store = _open(kind, target, must_exist, schema, pool_size, busy_timeout)
    try:
        if waiter == "listen":
            listen = getattr(store, "change_waiter", None)
            waiter = listen() if callable(listen) else None
        attach_ports(
            _carries(store),
            store_ports(
                store,
                clock=clock if clock is not None else SystemClock(),
                random=random if random is not None else SystemRandom(),
                executor=chosen,
                files=files,
                waiter=waiter,
            ),
        )
    except BaseException:
        store.close()
        raise
    return store


def _open(
    kind: str,
    target: str,
    must_exist: bool,
    schema: str | None,
    pool_size: int | None,
    busy_timeout: float | None,
) -> Store:
    """Rule 1: the store's own opener, with the options that apply to it."""
    if kind == "memory":
        from markertools_adapters.memory import MemoryStore

        return MemoryStore()
    if kind == "postgres":
        try:
            from markertools_adapters.postgres import DEFAULT_POOL_SIZE, PostgresStore
        except ImportError as exc:
            raise missing_extra(exc, "postgres", "a postgresql:// database") from exc
        return PostgresStore(
            target,
            pool_size=DEFAULT_POOL_SIZE if pool_size is None else pool_size,
            schema=schema,
            must_exist=must_exist,
        )
    try:
        from markertools_adapters.sqlite import DEFAULT_BUSY_TIMEOUT, SqliteStore
    except ImportError as exc:
        raise missing_extra(exc, "sqlite", "a SQLite database") from exc
    if must_exist and target != ":memory:":
        from markertools_adapters.stores import require_markertools_sqlite

        require_markertools_sqlite(Path(target))
    return SqliteStore(
        target, busy_timeout=DEFAULT_BUSY_TIMEOUT if busy_timeout is None else busy_timeout
    )


def _carries(store: Store) -> CarriesPorts:  # every bundled store does (wiring.CarriesPorts)
    assert isinstance(store, CarriesPorts)
    return store


__all__ = ["URL_FORMS", "BadDatabaseUrl", "ExecutorName", "NoExecutor", "connect", "database_kind"]
