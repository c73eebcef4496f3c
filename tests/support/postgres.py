"""Test support for the PostgreSQL adapter: the server comes from MARKERTOOLS_PG_DSN
(scripts/with_postgres.sh starts a throwaway one and sets it). Every store gets a fresh
schema of its own (search_path = that schema only), dropped again when the store closes,
so tests never see each other's rows - also when they run against a shared server.

No server configured -> every PostgreSQL test skips with SKIP_REASON; nothing is mocked.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from typing import Any

import pytest

SKIP_REASON = (
    "PostgreSQL tests need a server: MARKERTOOLS_PG_DSN is not set "
    "(run them through scripts/with_postgres.sh, which starts a throwaway server)"
)


def pg_dsn() -> str | None:
    return os.environ.get("MARKERTOOLS_PG_DSN") or None


def require_dsn() -> str:
    dsn = pg_dsn()
    if dsn is None:
        pytest.skip(SKIP_REASON)
    return dsn


def new_schema_name() -> str:
    return "mt_test_" + secrets.token_hex(6)


def drop_schema(dsn: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def throwaway_store(world: Any = None, *, pool_size: int = 2, schema: str | None = None) -> Any:
    """A PostgresStore on a fresh schema (holding `world` when given); close() drops it."""
    from markertools_adapters.postgres import PostgresStore

    dsn = require_dsn()

    class ThrowawayStore(PostgresStore):
        def close(self) -> None:
            try:
                super().close()
            finally:
                with contextlib.suppress(Exception):
                    drop_schema(dsn, self.schema)

    store = ThrowawayStore(dsn, pool_size=pool_size, schema=schema or new_schema_name())
    if world is not None:
        try:
            store.load_world(world)
        except BaseException:
            store.close()
            raise
    return store


@pytest.fixture
def dsn() -> str:
    """The server's DSN (skips the test when none is configured)."""
    return require_dsn()


@pytest.fixture
def schema(dsn: str) -> Any:
    """A fresh, empty schema name; dropped after the test."""
    name = new_schema_name()
    yield name
    drop_schema(dsn, name)


@pytest.fixture
def store(dsn: str) -> Any:
    """An empty PostgresStore on a fresh schema."""
    created = throwaway_store()
    yield created
    created.close()


def connect(dsn: str, schema: str | None = None) -> Any:
    """A plain autocommit connection (search_path = `schema` when given)."""
    import psycopg
    from psycopg import sql

    conn = psycopg.connect(dsn, autocommit=True)
    if schema is not None:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
    return conn
