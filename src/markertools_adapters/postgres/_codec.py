# Owns: the PostgreSQL `Dialect` (`%s` placeholders, BOOLEAN, JSONB environments, the
# lossless NUL escape of _text on every text value, SELECT ... FOR UPDATE before a
# read-then-write, batched executemany) and the record codecs built from it (`TABLES`,
# and TASKS, TODOS, AUTOMATIONS for this package and its tests). The codec itself is
# markertools_adapters._sql._codec, shared with the SQLite adapter.
#
# Must never: coerce (see the shared codec's rules); store text PostgreSQL would refuse.
#
# Invariants:
#   Rule 1: floats round-trip bit for bit (DOUBLE PRECISION keeps -0.0, subnormals,
#           infinities and NaN; values travel as shortest round-trip text).
#   Rule 2: a project's environment is JSONB (NULL = no environment, distinct from an
#           environment whose fields are all null).
#   Rule 3: every text value (environment fields included) is stored through _text's
#           lossless escape, so U+0000 round-trips although PostgreSQL text cannot hold it.
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import psycopg
from psycopg.types.json import Jsonb

from markertools import InvalidType
from markertools_adapters._sql import Dialect, Tables
from markertools_adapters.postgres._text import dec, enc


def _json_object(stored: object) -> Mapping[str, Any]:
    if not isinstance(stored, dict):
        raise InvalidType(f"environment: expected a JSON object, got {type(stored).__name__}")
    return stored


def _execute_many(conn: Any, sql: str, rows: Sequence[Sequence[object]]) -> None:
    with conn.cursor() as cur:
        cur.executemany(sql, rows)


POSTGRES: Final = Dialect(
    name="PostgreSQL",
    param="%s",
    container="schema",
    duplicate_key=psycopg.errors.UniqueViolation,
    bool_in=bool,
    json_in=lambda data: Jsonb(dict(data)),
    json_out=_json_object,
    execute_many=_execute_many,
    lock_row=" FOR UPDATE",
    skip_locked=" FOR UPDATE SKIP LOCKED",
    text_in=enc,
    text_out=dec,
)
TABLES: Final = Tables(POSTGRES)

TASKS: Final = TABLES.tasks
TODOS: Final = TABLES.todos
AUTOMATIONS: Final = TABLES.automations
