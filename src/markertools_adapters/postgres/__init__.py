# Owns: the public face of the PostgreSQL adapter (a fleet of worker hosts sharing one
# database): `PostgresStore`, `PgChangeWaiter` and the ways to get a store -
# `open_store(dsn)` for an existing or new schema, `create_store_from_world(world, dsn)`
# for a fresh one filled from a world.
#
# Must never: load a world into a schema that already holds records.
"""PostgreSQL storage for markertools (psycopg 3 + psycopg_pool): every storage port, the
table-backed permission lookup, world load / export, and LISTEN/NOTIFY early wake-up
for poll and wait. Install with the `postgres` extra: pip install 'markertools[postgres]'."""

from __future__ import annotations

from markertools_adapters._sql import SchemaError, SchemaTooNew
from markertools_adapters._urls import is_postgres_url
from markertools_adapters.postgres._conn import DEFAULT_POOL_SIZE
from markertools_adapters.postgres._notify import PgChangeWaiter
from markertools_adapters.postgres._schema import LATEST_VERSION, NOTIFY_CHANNEL
from markertools_adapters.postgres._store import PostgresStore
from markertools_adapters.world import World

__all__ = [
    "DEFAULT_POOL_SIZE",
    "LATEST_VERSION",
    "NOTIFY_CHANNEL",
    "PgChangeWaiter",
    "PostgresStore",
    "SchemaError",
    "SchemaTooNew",
    "create_store_from_world",
    "is_postgres_url",
    "open_store",
]


def open_store(
    dsn: str,
    pool_size: int = DEFAULT_POOL_SIZE,
    *,
    schema: str | None = None,
    must_exist: bool = False,
) -> PostgresStore:
    """Open the markertools tables in `dsn`'s database (creating / migrating them).

    `schema` (default: the connection's search_path, usually `public`) selects the
    PostgreSQL schema; it is created when missing, unless `must_exist` (then a schema
    without markertools tables raises SchemaError). `pool_size` bounds the connections
    this process holds. Raises psycopg.OperationalError when the server is unreachable,
    SchemaTooNew for a schema written by a newer markertools, SchemaError when the
    schema's tables are not markertools'."""
    return PostgresStore(dsn, pool_size=pool_size, schema=schema, must_exist=must_exist)


def create_store_from_world(
    world: World, dsn: str, pool_size: int = DEFAULT_POOL_SIZE, *, schema: str | None = None
) -> PostgresStore:
    """A store holding `world`; refuses (ValueError) a schema that already holds records."""
    store = PostgresStore(dsn, pool_size=pool_size, schema=schema)
    try:
        store.load_world(world)
    except BaseException:
        store.close()
        raise
    return store
