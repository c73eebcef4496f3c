# Owns: the mapping between domain records (markertools._model) and SQLite rows: one
# `RecordCodec` per table, derived from the record's attrs fields, that encodes a record
# (or a partial `changes` mapping) into column values and decodes a row back.
#
# Must never: guess. A field whose annotation has no codec kind raises at import time, a
# `changes` key that is not an updatable column raises ValueError, a value of the wrong
# type raises TypeError - nothing is coerced silently into something else.
#
# Invariants:
#   Rule 1: floats round-trip bit for bit: they are bound as Python floats into columns
#           declared `ANY CHECK (typeof(col) = 'real')`, which SQLite stores as 8-byte
#           IEEE values (a REAL-affinity column would turn -0.0 into 0.0).
#   Rule 2: booleans are stored as 0/1 and always decoded back to `bool`.
#   Rule 3: nested values (a project's environment, permission grants) are stored as
#           canonical JSON text and decoded to the same record values.
#   Rule 4: column order in every SELECT is the record's field order, so `decode` is a
#           positional zip.
from __future__ import annotations

import json
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Final, Generic, Literal, TypeVar

import attrs

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

ColumnKind = Literal["text", "int", "float", "bool", "environment"]

# attrs field annotation (a string: the model uses `from __future__ import annotations`)
# -> (codec kind, nullable)
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


def _annotation_name(annotation: object) -> str:
    """The annotation as the model writes it, whether still a string or already resolved
    (cattrs calls attrs.resolve_types on the records it structures, e.g. world files)."""
    if isinstance(annotation, str):
        return annotation
    args = typing.get_args(annotation)
    if args:
        return " | ".join("None" if a is type(None) else getattr(a, "__name__", "") for a in args)
    return str(getattr(annotation, "__name__", ""))


def _columns(cls: type[Any]) -> tuple[Column, ...]:
    cols = []
    for field in attrs.fields(cls):
        annotation = _annotation_name(field.type)
        if annotation not in _KINDS:
            raise TypeError(f"no SQLite codec for {cls.__name__}.{field.name}: {annotation!r}")
        kind, nullable = _KINDS[annotation]
        cols.append(Column(field.name, kind, nullable))
    return tuple(cols)


def _encode_environment(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, Environment):
        raise TypeError(f"expected an Environment, got {type(value).__name__}")
    return json.dumps(
        {"name": value.name, "branch": value.branch, "status": value.status},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _decode_environment(text: object) -> Environment | None:
    if text is None:
        return None
    data = json.loads(str(text))
    return Environment(name=data["name"], branch=data["branch"], status=data["status"])


def encode_value(column: Column, value: object, where: str) -> object:
    """One Python value -> the value bound for `column` (raises TypeError when it does not fit)."""
    if value is None:
        if not column.nullable:
            raise TypeError(f"{where}: null is not allowed")
        return None
    if column.kind == "text":
        if not isinstance(value, str):
            raise TypeError(f"{where}: expected a string, got {type(value).__name__}")
        return value
    if column.kind == "bool":
        return 1 if value else 0
    if column.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{where}: expected an integer, got {type(value).__name__}")
        number = int(value)
        if not -(2**63) <= number < 2**63:
            raise TypeError(f"{where}: integer {number} is outside SQLite's 64-bit range")
        return number
    if column.kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{where}: expected a number, got {type(value).__name__}")
        return float(value)
    return _encode_environment(value)


def decode_value(column: Column, value: object) -> object:
    if value is None:
        return None
    if column.kind == "bool":
        return bool(value)
    if column.kind == "float":
        return float(value)  # type: ignore[arg-type]
    if column.kind == "environment":
        return _decode_environment(value)
    return value


class RecordCodec(Generic[R]):
    """Row <-> record for one table. `extra` columns (e.g. a sequence number or a derived
    schedule column) live in the table but not in the record."""

    def __init__(
        self, cls: type[R], table: str, *, key: tuple[str, ...], fixed: tuple[str, ...] = ()
    ) -> None:
        self.cls = cls
        self.table = table
        self.key = key
        self.fixed = frozenset(key) | frozenset(fixed)  # fields `changes` may not touch
        self.columns = _columns(cls)
        self.by_name = {column.name: column for column in self.columns}
        self.names = tuple(column.name for column in self.columns)
        self.select_list = ", ".join(_quote(name) for name in self.names)
        self.insert_sql = (
            f"INSERT INTO {table} ({self.select_list}) "
            f"VALUES ({', '.join('?' for _ in self.names)})"
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
        """A `changes` mapping -> [(column, value)]; key and fixed columns cannot change
        (ValueError naming them, like the memory model)."""
        unknown = sorted(name for name in changes if name not in self.by_name or name in self.fixed)
        if unknown:
            raise ValueError(f"{self.table} fields cannot be changed: {', '.join(unknown)}")
        return [
            (name, encode_value(self.by_name[name], value, f"{self.table}.{name}"))
            for name, value in changes.items()
        ]


def _quote(name: str) -> str:
    return f'"{name}"'


TASKS: Final = RecordCodec(Task, "tasks", key=("id",))
TODOS: Final = RecordCodec(Todo, "todos", key=("id",), fixed=("project_id",))
AUTOMATIONS: Final = RecordCodec(Automation, "automations", key=("id",))
PROJECTS: Final = RecordCodec(Project, "projects", key=("id",))
COSTS: Final = RecordCodec(CostRow, "costs", key=())
QUOTAS: Final = RecordCodec(Quota, "quotas", key=("user",))
ATTEMPTS: Final = RecordCodec(Attempt, "task_attempts", key=("task_id", "attempt_no"))
AUDIT: Final = RecordCodec(AuditRecord, "audit", key=())


def quote(name: str) -> str:
    """Quote a column name taken from a codec (never from user input)."""
    return _quote(name)
