# Owns: the public face of the SQLite adapter (docs/rules.md the ports, the embedded default):
# `SqliteStore` and the two ways to get one - `open_store(path)` for an existing or new
# database, `create_store_from_world(world, path)` for a fresh one filled from a world.
#
# Must never: overwrite an existing database file when asked to create a fresh one.
"""SQLite storage for markertools: every storage port, the table-backed permission
lookup and world load / export, on one database file (WAL, BEGIN IMMEDIATE writes)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from markertools_adapters._sql import SchemaError, SchemaTooNew
from markertools_adapters.errors import DatabaseExists
from markertools_adapters.sqlite._conn import DEFAULT_BUSY_TIMEOUT
from markertools_adapters.sqlite._schema import LATEST_VERSION
from markertools_adapters.sqlite._store import SqliteStore
from markertools_adapters.world import World

__all__ = [
    "DEFAULT_BUSY_TIMEOUT",
    "LATEST_VERSION",
    "SchemaError",
    "SchemaTooNew",
    "SqliteStore",
    "create_store_from_world",
    "open_store",
]


def open_store(path: str | Path, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> SqliteStore:
    """Open (creating if absent) the database at `path`, migrating an older schema.

    Raises SchemaTooNew for a database written by a newer markertools and SchemaError for
    a file that is not a markertools database."""
    return SqliteStore(path, busy_timeout=busy_timeout)


def create_store_from_world(
    world: World, path: str | Path = ":memory:", *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT
) -> SqliteStore:
    """A new database at `path` (":memory:" by default) holding `world`.

    Refuses (DatabaseExists, a FileExistsError) a `path` that already exists; removes the file again when
    the world cannot be loaded."""
    in_memory = str(path) == ":memory:"
    if not in_memory:
        try:
            fd = os.open(str(path), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            raise DatabaseExists(f"{path}: already exists (refusing to overwrite it)") from None
        os.close(fd)
    store: SqliteStore | None = None
    try:
        store = SqliteStore(path, busy_timeout=busy_timeout)
        store.load_world(world)
    except BaseException:
        if store is not None:
            store.close()
        if not in_memory:
            _remove_database(Path(path))
        raise
    return store


def _remove_database(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(str(path) + suffix)
