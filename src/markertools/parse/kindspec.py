# Owns: the shapes of the kind table (`FieldSpec`, `KindSpec`) and the derived facts
# every consumer of the table needs (defaults read from the params classes, the
# "expected" description of a field, what a resumed delivery does with a block (TRN-9),
# which field names a created task (VAL-8)), and `per_kind`, the cache of what a
# consumer derives from a kind once. The table itself lives in `kinds.py`.
#
# Must never: hold a kind-specific rule (those are rows in `kinds.py` or named
# post-rules in `validate.py`), do I/O, or raise on any input.
#
# Invariants:
#   Rule 1: a field's default is the params class's attrs default, so the parser, the
#           guide and the JSON Schema can never disagree about it.
#   Rule 2: `expected(field)` is the one description of what a field accepts; skip
#           reasons, the guide and the schema descriptions all use it.
from __future__ import annotations

from collections.abc import Callable
from typing import Final, Literal, TypeVar

import attrs

from markertools.domain.timeparse import default_time_zone_name
from markertools.text.msg import Msg, msg

FieldKind = Literal[
    "text",  # a string (length limits, non-blank when required)
    "ref",  # a task id, or @NAME of a task created in the same turn (VAL-8)
    "ref_list",  # a non-empty list of task ids, de-duplicated, first `max_items` kept
    "enum",  # one of `choices` (optionally folded, e.g. bind "cron" -> None)
    "int",  # an integer (integral floats accepted, bool never), clamped or bounded
    "epoch",  # epoch seconds >= 0; values >= 1e11 are milliseconds
    "time",  # epoch seconds/milliseconds or an ISO 8601 string (AUT-2)
    "bool",  # true / false only
    "forbidden",  # must be absent or null (goal-convert's verify_command, ...)
]

# TRN-9: what a delivery resumed after a crash does with a block an earlier delivery of
# the turn already ran: "journal" - the block's effect, audit record and journal row were
# written in one transaction, so its journalled entry stands and it never runs twice;
# "rerun" - the kind only reads (or only adds to the report's follow-ups), nothing is
# journalled, and it simply runs again.
Replay = Literal["journal", "rerun"]

INT64: Final[tuple[int, int]] = (-(2**63), 2**63 - 1)


@attrs.frozen
class FieldSpec:
    """One accepted field of a kind's JSON body."""

    name: str  # canonical spelling (= the params attribute unless `param` is False)
    kind: FieldKind
    doc: str  # catalogue key: what the field means (guide, schema description)
    required: bool = False
    aliases: tuple[str, ...] = ()
    min_len: int = 0  # text: inclusive, in code points (DOM-4)
    max_len: int | None = None
    choices: tuple[str, ...] = ()
    folds: tuple[tuple[str, str | None], ...] = ()  # enum: written value -> stored value
    clamp: tuple[int, int] | None = None  # int: clamped into range (VAL-4)
    bounds: tuple[int, int] | None = None  # int: out of range skips the block
    max_items: int | None = None  # ref_list: more are dropped (WAI-2)
    empty_is_absent: bool = False  # text: "" means the field is absent
    param: bool = True  # False: read by a post-rule, not stored as-is

    @property
    def spellings(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def nonblank(self) -> bool:
        """VAL-5: required strings, ids and names need a non-whitespace character."""
        return self.kind in ("ref", "ref_list") or self.min_len > 0


@attrs.frozen
class KindSpec:
    """One marker kind: its names, per-turn cap, body fields and documentation."""

    name: str
    aliases: tuple[str, ...]
    cap: int
    params: type
    fields: tuple[FieldSpec, ...]
    summary: str  # catalogue key: one line saying what the kind does
    example: str  # a JSON body; the guide shows it and a test parses it
    post_rules: tuple[str, ...] = ()  # named kind-level rules applied in `validate`
    ignore_all_fields: bool = False  # QUO-1: every field is ignored (and reported)
    guide_note: str = ""  # catalogue key: a kind-level rule the guide spells out
    replay: Replay = "journal"  # TRN-9 (see `Replay`); an effect is journalled by default
    # a done entry's target is a task the block created: on a resumed delivery it counts
    # among this turn's children (LIN-3) and its @NAME resolves again (VAL-8)
    creates_task: bool = False
    task_name_field: str | None = None  # VAL-8: the text field naming the created task

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def target_field(self) -> str | None:
        """The params field naming the task a block of this kind is reported against
        when its handler fails (TRN-8): `task_id` when the kind has one."""
        return "task_id" if any(f.name == "task_id" and f.param for f in self.fields) else None

    def field(self, name: str) -> FieldSpec:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)


_NO_DEFAULT: Final = attrs.NOTHING
_T = TypeVar("_T")


def per_kind(build: Callable[[KindSpec], _T]) -> Callable[[KindSpec], _T]:
    """`build` cached per kind, keyed by identity (hashing a frozen KindSpec walks all
    its fields; the kind is kept alive with its entry). Bounded, though only the
    table's kinds occur in practice."""
    cache: dict[int, tuple[KindSpec, _T]] = {}

    def cached(kind: KindSpec) -> _T:
        entry = cache.get(id(kind))
        if entry is not None and entry[0] is kind:
            return entry[1]
        value = build(kind)
        if len(cache) >= 256:
            cache.clear()
        cache[id(kind)] = (kind, value)
        return value

    return cached


_defaults: dict[tuple[str, str], object] = {}


def default_of(kind: KindSpec, field: FieldSpec) -> object:
    """Rule 1: the params class's default for `field` (None when it has none)."""
    key = (kind.name, field.name)
    if key not in _defaults:
        _defaults[key] = _default(kind, field)
    return _defaults[key]


def _default(kind: KindSpec, field: FieldSpec) -> object:
    if not field.param:
        return None
    attribute = attrs.fields_dict(kind.params).get(field.name)
    if attribute is None or attribute.default is _NO_DEFAULT:
        return None
    default = attribute.default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        return None
    return default


def param_text(params: object, field: str | None) -> str | None:
    """The value of the params field named by a table column (`task_name_field`,
    `target_field`) when it holds a string; None without such a field or value. The one
    place delivery reads a field by its name from the table rather than by type."""
    if field is None:
        return None
    value = getattr(params, field, None)
    return value if isinstance(value, str) else None


def expected(field: FieldSpec) -> Msg:
    """Rule 2: what the field accepts, as a catalogue message."""
    k = field.kind
    if k == "text":
        if field.max_len is not None and field.min_len > 0:
            return msg("parse.exp.text_range", min=field.min_len, max=field.max_len)
        if field.max_len is not None:
            return msg("parse.exp.text_max", max=field.max_len)
        if field.min_len > 0:
            return msg("parse.exp.text_nonblank")
        return msg("parse.exp.text")
    if k == "ref":
        return msg("parse.exp.ref")
    if k == "ref_list":
        return msg("parse.exp.ref_list")
    if k == "enum":
        return msg("parse.exp.enum", choices=tuple(field.choices))
    if k == "int":
        if field.clamp is not None:
            return msg("parse.exp.int_clamp", min=field.clamp[0], max=field.clamp[1])
        if field.bounds == INT64:
            return msg("parse.exp.int64")
        if field.bounds is not None:
            return msg("parse.exp.int_bounds", min=field.bounds[0], max=field.bounds[1])
        return msg("parse.exp.int")
    if k == "epoch":
        return msg("parse.exp.epoch")
    if k == "time":
        return msg("parse.exp.time", zone=default_time_zone_name())
    if k == "bool":
        return msg("parse.exp.bool")
    return msg("parse.exp.forbidden")
