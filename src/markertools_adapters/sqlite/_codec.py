# Owns: the SQLite `Dialect` (`?` placeholders, 0/1 booleans, environments as compact
# JSON text, STRICT tables) and the record codecs built from it (`TABLES`, and the
# per-table names TASKS, TODOS, ... for this package and its tests). The codec itself is
# markertools_adapters._sql._codec, shared with the PostgreSQL adapter.
#
# Must never: coerce (see the shared codec's rules); store a value SQLite would change.
#
# Invariants:
#   Rule 1: floats are bound as Python floats into columns declared
#           `ANY CHECK (typeof(col) = 'real')`, which SQLite stores as 8-byte IEEE values
#           (a REAL-affinity column would turn -0.0 into 0.0): bit-for-bit round trips.
#   Rule 2: booleans are stored as 0/1 (INTEGER with a 0/1 check), decoded to `bool`.
#   Rule 3: a project's environment is canonical JSON text, non-ASCII kept as is.
#   Rule 4: text is stored as it is (SQLite's BINARY collation on UTF-8 is code point
#           order, Python's str order).
from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any, Final

from markertools import InvalidType
from markertools_adapters._sql import Dialect, Tables, quote


def _json_text(data: Mapping[str, str | None]) -> str:
    return json.dumps(dict(data), ensure_ascii=False, separators=(",", ":"))


def _json_object(stored: object) -> Mapping[str, Any]:
    data = json.loads(str(stored))
    if not isinstance(data, dict):
        raise InvalidType(f"environment: expected a JSON object, got {type(data).__name__}")
    return data


def _execute_many(conn: Any, sql: str, rows: Sequence[Sequence[object]]) -> None:
    conn.executemany(sql, rows)


SQLITE: Final = Dialect(
    name="SQLite",
    param="?",
    container="database",
    duplicate_key=sqlite3.IntegrityError,
    bool_in=lambda value: 1 if value else 0,
    json_in=_json_text,
    json_out=_json_object,
    execute_many=_execute_many,
    table_suffix=" STRICT",
)
TABLES: Final = Tables(SQLITE)

TASKS: Final = TABLES.tasks
TODOS: Final = TABLES.todos
AUTOMATIONS: Final = TABLES.automations
PROJECTS: Final = TABLES.projects
COSTS: Final = TABLES.costs
QUOTAS: Final = TABLES.quotas
ATTEMPTS: Final = TABLES.attempts
AUDIT: Final = TABLES.audit

__all__ = [
    "ATTEMPTS",
    "AUDIT",
    "AUTOMATIONS",
    "COSTS",
    "PROJECTS",
    "QUOTAS",
    "SQLITE",
    "TABLES",
    "TASKS",
    "TODOS",
    "quote",
]
