# Owns: the mapping between domain records (markertools.domain.model) and SQL rows, for both
# SQL adapters: the one table of record types (`Tables`: record class, table, key, fields
# a change may not touch), the columns derived from each record's attrs fields, and one
# `RecordCodec` per table and dialect that encodes a record (or a partial `changes`
# mapping) into bound values and decodes a row back.
#
# Must never: guess. A field whose annotation has no codec kind raises at import time, a
# `changes` key that is not an updatable column raises ValueError, a value of the wrong
# type raises TypeError - nothing is coerced silently into something else.
#
# Invariants:
#   Rule 1: floats round-trip bit for bit: they are bound as Python floats (SQLite stores
#           them in `ANY CHECK (typeof(col) = 'real')` columns, PostgreSQL in DOUBLE
#           PRECISION - both keep -0.0, subnormals and infinities).
#   Rule 2: integers are 64-bit: a larger one is a TypeError, never a wrapped value; a bool
#           is not an integer here.
#   Rule 3: booleans are bound as the dialect wants (0/1, BOOLEAN) and decoded to `bool`.
#   Rule 4: a project's environment is one JSON object (NULL = no environment, distinct
#           from an environment whose fields are all null); its texts, like every other
#           text, go through the dialect's lossless text_in / text_out.
#   Rule 5: column order in every SELECT is the record's field order, so `decode` is a
#           positional zip; every column name is quoted (`user`, `round` are keywords).
#   Rule 6 (CST-2): a money field (a Decimal, markertools.money) `x` is the integer column
#           `x_micros` holding whole micro-dollars: exact in both engines, summed in SQL
#           without rounding, and decoded to the same canonical Decimal the record holds.
from __future__ import annotations

import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Generic, Literal, TypeVar

import attrs

from markertools import (
    Attempt,
    AuditRecord,
    Automation,
    CostRow,
    Environment,
    InvalidArgument,
    InvalidType,
    Project,
    Quota,
    Task,
    Todo,
    from_micros,
    to_micros,
)
from markertools_adapters._sql._dialect import Dialect

ColumnKind = Literal["text", "int", "float", "bool", "environment", "money"]

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
    "Decimal": ("money", False),
    "Decimal | None": ("money", True),
}
_INT64: Final[range] = range(-(2**63), 2**63)

R = TypeVar("R")
Encoder = Callable[[object, str], object]  # (value, where) -> bound value
Decoder = Callable[[Any], object]  # stored non-null value -> Python value


@attrs.frozen
class Column:
    name: str  # the record's field
    kind: ColumnKind
    nullable: bool

    @property
    def sql_name(self) -> str:
        """The table's column (Rule 6: a money field `x` is stored as `x_micros`)."""
        return f"{self.name}_micros" if self.kind == "money" else self.name


def _annotation(tp: object) -> str:
    """A field's annotation as text, whether attrs holds the string (PEP 563) or a type
    that `attrs.resolve_types` has already evaluated (cattrs does, for world files)."""
    if isinstance(tp, str):
        return tp
    if tp is type(None):
        return "None"
    args = typing.get_args(tp)
    if args:
        return " | ".join(_annotation(arg) for arg in args)
    return str(getattr(tp, "__name__", tp))


def record_columns(cls: type[Any], dialect: Dialect) -> tuple[Column, ...]:
    cols = []
    for field in attrs.fields(cls):
        annotation = _annotation(field.type)
        if annotation not in _KINDS:
            raise InvalidType(
                f"no {dialect.name} codec for {cls.__name__}.{field.name}: {annotation!r}"
            )
        kind, nullable = _KINDS[annotation]
        cols.append(Column(field.name, kind, nullable))
    return tuple(cols)


def quote(name: str) -> str:
    """Quote a column name taken from a codec (never from user input)."""
    return f'"{name}"'


def text_value(value: object, where: str) -> str:
    """`value` if it is a str a database can store (UTF-8: no lone surrogates)."""
    if not isinstance(value, str):
        raise InvalidType(f"{where}: expected a string, got {type(value).__name__}")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidType(f"{where}: text is not valid UTF-8 ({exc.reason})") from None
    return value


# ---- one encoder / decoder per column kind ----------------------------------------------


def _encoders(dialect: Dialect) -> dict[ColumnKind, Encoder]:
    def text(value: object, where: str) -> object:
        return dialect.text_in(text_value(value, where))

    def boolean(value: object, where: str) -> object:
        return dialect.bool_in(bool(value))

    def integer(value: object, where: str) -> object:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidType(f"{where}: expected an integer, got {type(value).__name__}")
        if value not in _INT64:
            raise InvalidType(f"{where}: integer {value} is outside the 64-bit range")
        return int(value)

    def number(value: object, where: str) -> object:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidType(f"{where}: expected a number, got {type(value).__name__}")
        return float(value)

    def micros(value: object, where: str) -> object:
        return to_micros(value, where)  # Rule 6 (TypeError / ValueError naming `where`)

    def environment(value: object, where: str) -> object:
        if not isinstance(value, Environment):
            raise InvalidType(f"{where}: expected an Environment, got {type(value).__name__}")
        fields = {"name": value.name, "branch": value.branch, "status": value.status}
        return dialect.json_in(
            {
                key: None if text is None else dialect.text_in(text_value(text, f"{where}.{key}"))
                for key, text in fields.items()
            }
        )

    return {
        "text": text,
        "bool": boolean,
        "int": integer,
        "float": number,
        "environment": environment,
        "money": micros,
    }


def _decoders(dialect: Dialect) -> dict[ColumnKind, Decoder | None]:
    def environment(stored: object) -> Environment:
        data = dialect.json_out(stored)
        return Environment(
            name=_opt(dialect, data.get("name")),
            branch=_opt(dialect, data.get("branch")),
            status=_opt(dialect, data.get("status")),
        )

    return {
        "text": dialect.text_out,
        "bool": bool,
        "int": int,
        "float": float,
        "environment": environment,
        "money": _money_out,
    }


def _money_out(stored: Any) -> object:
    return from_micros(int(stored))


def _opt(dialect: Dialect, value: object) -> str | None:
    return None if value is None else dialect.stored_text(value)


class RecordCodec(Generic[R]):
    """Row <-> record for one table. Columns that live in the table but not in the record
    (a sequence number, the derived schedule column) are not the codec's business."""

    def __init__(
        self,
        cls: type[R],
        table: str,
        dialect: Dialect,
        *,
        key: tuple[str, ...],
        fixed: tuple[str, ...] = (),
    ) -> None:
        self.cls = cls
        self.table = table
        self.dialect = dialect
        self.key = key
        self.fixed = frozenset(key) | frozenset(fixed)  # fields `changes` may not touch
        self.columns = record_columns(cls, dialect)
        self.by_name = {column.name: column for column in self.columns}
        self.names = tuple(column.name for column in self.columns)
        self.sql_names = tuple(column.sql_name for column in self.columns)
        self.select_list = ", ".join(quote(name) for name in self.sql_names)
        self.select_sql = f"SELECT {self.select_list} FROM {table}"
        self.insert_sql = (
            f"INSERT INTO {table} ({self.select_list}) VALUES ({dialect.params(len(self.names))})"
        )
        encoders, decoders = _encoders(dialect), _decoders(dialect)
        self._encoders = {column.name: encoders[column.kind] for column in self.columns}
        self._decoders = tuple(decoders[column.kind] for column in self.columns)

    def encode_value(self, name: str, value: object) -> object:
        """One field's value -> the value bound for its column (TypeError when it does not fit)."""
        where = f"{self.table}.{name}"
        if value is None:
            if not self.by_name[name].nullable:
                raise InvalidType(f"{where}: null is not allowed")
            return None
        return self._encoders[name](value, where)

    def encode(self, record: R) -> tuple[object, ...]:
        if not isinstance(record, self.cls):
            raise InvalidType(f"expected a {self.cls.__name__}, got {type(record).__name__}")
        return tuple(self.encode_value(name, getattr(record, name)) for name in self.names)

    def decode(self, row: Sequence[object]) -> R:
        values = {
            name: value if value is None or decode is None else decode(value)
            for name, decode, value in zip(self.names, self._decoders, row, strict=True)
        }
        return self.cls(**values)

    def encode_changes(self, changes: Mapping[str, object]) -> list[tuple[str, object]]:
        """A `changes` mapping of fields -> [(column, value)]; key and fixed columns cannot
        change (ValueError naming them, like the memory model)."""
        refused = sorted(name for name in changes if name not in self.by_name or name in self.fixed)
        if refused:
            raise InvalidArgument(f"{self.table} fields cannot be changed: {', '.join(refused)}")
        return [
            (self.by_name[name].sql_name, self.encode_value(name, value))
            for name, value in changes.items()
        ]


class Tables:
    """Every record table of a markertools database, with its codec in one dialect: the
    one place that says which record lives in which table under which key."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect: Final = dialect
        self.tasks: Final = RecordCodec(Task, "tasks", dialect, key=("id",))
        self.todos: Final = RecordCodec(Todo, "todos", dialect, key=("id",), fixed=("project_id",))
        self.automations: Final = RecordCodec(Automation, "automations", dialect, key=("id",))
        self.projects: Final = RecordCodec(Project, "projects", dialect, key=("id",))
        self.costs: Final = RecordCodec(CostRow, "costs", dialect, key=())
        self.quotas: Final = RecordCodec(Quota, "quotas", dialect, key=("user",))
        self.attempts: Final = RecordCodec(
            Attempt, "task_attempts", dialect, key=("task_id", "attempt_no")
        )
        self.audit: Final = RecordCodec(AuditRecord, "audit", dialect, key=())
