# Owns: running one forward migration of a markertools schema, the same way on both SQL
# adapters: the `schema_version` table (created before the first migration), the steps
# (SQL text or a callable on the connection), the version bump - all inside the
# transaction the adapter's `migrate` holds (BEGIN IMMEDIATE / an advisory-locked
# PostgreSQL transaction).
#
# Must never: open or end a transaction (the adapter does, so a failed step leaves the
# previous version whole); decide which migrations are due (the adapter reads the
# version under its lock first).
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from markertools_adapters._sql._dialect import Dialect, Executor

# One migration = a tuple of steps: SQL statements, or a callable run on the connection.
Step = Sequence[str] | Callable[[Any], None]


def apply_migration(conn: Executor, dialect: Dialect, steps: Sequence[Step], version: int) -> None:
    """Run migration number `version` (1 = the first) and record it (caller's transaction)."""
    if version == 1:
        conn.execute(
            "CREATE TABLE schema_version ("
            f"id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL){dialect.table_suffix}"
        )
        conn.execute("INSERT INTO schema_version (id, version) VALUES (1, 0)")
    for step in steps:
        if callable(step):
            step(conn)
        else:
            for statement in step:
                conn.execute(statement)
    conn.execute(dialect.sql("UPDATE schema_version SET version = ? WHERE id = 1"), (version,))
