# Owns: the mapping between domain records (markertools._model) and PostgreSQL rows: one
# `RecordCodec` per table, derived from the record's attrs fields, that encodes a record
# (or a partial `changes` mapping) into bound values and decodes a row back. The same
# design as the SQLite codec, with PostgreSQL types (BOOLEAN, BIGINT, DOUBLE PRECISION,
# JSONB) and `%s` placeholders.
#
# Must never: guess. A field whose annotation has no codec kind raises at import time, a
# `changes` key that is not an updatable field raises ValueError, a value of the wrong
# type raises TypeError - nothing is coerced silently into something else.
#
# Invariants:
#   Rule 1: floats round-trip bit for bit (DOUBLE PRECISION keeps -0.0, subnormals,
#           infinities and NaN; values travel as shortest round-trip text).
#   Rule 2: integers are 64-bit like SQLite's: a larger one is a TypeError, never a
#           wrapped or rounded value.
#   Rule 3: a project's environment is JSONB (NULL = no environment, distinct from an
#           environment whose fields are all null).
#   Rule 4: every text value (environment fields included) is stored through _text's
#           lossless escape, so U+0000 round-trips although PostgreSQL text cannot hold it.
#   Rule 5: column order in every SELECT is the record's field order, so `decode` is a
#           positional zip; every column name is quoted (`user` is a reserved word).
from __future__ import annotations

import operator
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Final, Generic, Literal, SupportsIndex, TypeVar, cast

import attrs
from psycopg.types.json import Jsonb

from markertools._model import (
    Attempt,
    AuditRecord,
    Automation,
    CostRow,
    Environment,
    Project,
    Quota,
    Task,
    Todo,
)
from markertools_adapters.postgres._text import dec, dec_opt, enc, enc_opt

ColumnKind = Literal["text", "int", "float", "bool", "environment"]

_KINDS: Final[dict[str, tuple[ColumnKind, bool]]] = {
    "str": ("text", False),
    "str | None": ("text", True),
    "int": ("int", False),
    "int | None": ("int", True),
    "float": ("float", False),
    "float | None": ("float", True),
    "bool": ("bool", False),
    "Environment | None": ("environment", True),
}

R = TypeVar("R")


@attrs.frozen
class Column:
    name: str
    kind: ColumnKind
    nullable: bool


def _annotation(tp: object) -> str:
    """A field's annotation as text, whether attrs holds the string (PEP 563) or a type
    that `attrs.resolve_types` has already evaluated (`str | None`, `Optional[str]`)."""
    if isinstance(tp, str):
        return tp
    if tp is type(None):
        return "None"
    args = typing.get_args(tp)
    if args:
        return " | ".join(_annotation(arg) for arg in args)
    return str(getattr(tp, "__name__", tp))


def _columns(cls: type[Any]) -> tuple[Column, ...]:
    cols = []
    for field in attrs.fields(cls):
        annotation = _annotation(field.type)
        if annotation not in _KINDS:
            raise TypeError(f"no PostgreSQL codec for {cls.__name__}.{field.name}: {annotation!r}")
        kind, nullable = _KINDS[annotation]
        cols.append(Column(field.name, kind, nullable))
    return tuple(cols)


def _encode_environment(value: object, where: str) -> Jsonb | None:
    if value is None:
        return None
    if not isinstance(value, Environment):
        raise TypeError(f"{where}: expected an Environment, got {type(value).__name__}")
    fields = {"name": value.name, "branch": value.branch, "status": value.status}
    for key, text in fields.items():
        if text is not None and not isinstance(text, str):
            raise TypeError(f"{where}.{key}: expected a string, got {type(text).__name__}")
    return Jsonb({key: enc_opt(text) for key, text in fields.items()})


def _decode_environment(data: object) -> Environment:
    if not isinstance(data, dict):
        raise TypeError(f"environment: expected a JSON object, got {type(data).__name__}")
    return Environment(
        name=dec_opt(data.get("name")),
        branch=dec_opt(data.get("branch")),
        status=dec_opt(data.get("status")),
    )


def encode_value(column: Column, value: object, where: str) -> object:
    """One Python value -> the value bound for `column` (raises when it does not fit)."""
    if value is None:
        if not column.nullable:
            raise TypeError(f"{where}: null is not allowed")
        return None
    if column.kind == "text":
        if not isinstance(value, str):
            raise TypeError(f"{where}: expected a string, got {type(value).__name__}")
        return enc(value)
    if column.kind == "bool":
        return bool(value)
    if column.kind == "int":
        if isinstance(value, bool):
            return int(value)
        number = operator.index(cast(SupportsIndex, value))
        if not -(2**63) <= number < 2**63:
            raise TypeError(f"{where}: integer {number} is outside the 64-bit range")
        return number
    if column.kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{where}: expected a number, got {type(value).__name__}")
        return float(value)
    return _encode_environment(value, where)


def decode_value(column: Column, value: object) -> object:
    if value is None:
        return None
    if column.kind == "bool":
        return bool(value)
    if column.kind == "float":
        return float(value)  # type: ignore[arg-type]
    if column.kind == "int":
        return int(value)  # type: ignore[call-overload]
    if column.kind == "environment":
        return _decode_environment(value)
    return dec(value)  # type: ignore[arg-type]


def quote(name: str) -> str:
    """Quote a column name taken from a codec (never from user input)."""
    return f'"{name}"'


class RecordCodec(Generic[R]):
    """Row <-> record for one table. `frozen` fields exist in the table but may not be
    changed by `encode_changes` (the key, and whatever the reference model keeps fixed)."""

    def __init__(
        self, cls: type[R], table: str, *, key: tuple[str, ...], frozen: tuple[str, ...] = ()
    ) -> None:
        self.cls = cls
        self.table = table
        self.key = key
        self.frozen = frozenset(key) | frozenset(frozen)
        self.columns = _columns(cls)
        self.by_name = {column.name: column for column in self.columns}
        self.names = tuple(column.name for column in self.columns)
        self.select_list = ", ".join(quote(name) for name in self.names)
        self.insert_sql = (
            f"INSERT INTO {table} ({self.select_list}) "
            f"VALUES ({', '.join('%s' for _ in self.names)})"
        )

    def encode(self, record: R) -> tuple[object, ...]:
        if not isinstance(record, self.cls):
            raise TypeError(f"expected a {self.cls.__name__}, got {type(record).__name__}")
        return tuple(
            encode_value(column, getattr(record, column.name), f"{self.table}.{column.name}")
            for column in self.columns
        )

    def decode(self, row: Sequence[object]) -> R:
        values = {
            column.name: decode_value(column, value)
            for column, value in zip(self.columns, row, strict=True)
        }
        return self.cls(**values)

    def encode_changes(self, changes: Mapping[str, object]) -> list[tuple[str, object]]:
        """A `changes` mapping -> [(column, value)]; unknown and frozen fields raise."""
        refused = sorted(
            name for name in changes if name not in self.by_name or name in self.frozen
        )
        if refused:
            raise ValueError(
                f"{self.table}: not updatable field(s): {', '.join(map(repr, refused))}"
            )
        return [
            (name, encode_value(self.by_name[name], value, f"{self.table}.{name}"))
            for name, value in changes.items()
        ]


TASKS: Final = RecordCodec(Task, "tasks", key=("id",))
TODOS: Final = RecordCodec(Todo, "todos", key=("id",), frozen=("project_id",))
AUTOMATIONS: Final = RecordCodec(Automation, "automations", key=("id",))
PROJECTS: Final = RecordCodec(Project, "projects", key=("id",))
COSTS: Final = RecordCodec(CostRow, "costs", key=())
QUOTAS: Final = RecordCodec(Quota, "quotas", key=("user",))
ATTEMPTS: Final = RecordCodec(Attempt, "task_attempts", key=("task_id", "attempt_no"))
AUDIT: Final = RecordCodec(AuditRecord, "audit", key=())
