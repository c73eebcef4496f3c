# Owns: turning one block's body into its params (docs/rules.md VAL and the field rules), driven
# by the kind table: strict JSON (VAL-1), null = absent (VAL-2), integer rules
# (VAL-3), clamps with a note stating the value used (VAL-4), non-blank required
# strings and inclusive length limits (VAL-5), unknown fields ignored and noted
# (VAL-6), alias ambiguity (VAL-7), `@NAME` kept verbatim (VAL-8), and the named
# kind-level rules of the table (POL-1 wait_seconds, TDU-1 "something to update").
#
# Must never: raise for anything a body contains (a field problem is a `Msg` reason
# naming the field, what was wrong and what was expected), build a params object
# that breaks a field rule, or resolve an `@NAME` (delivery does, VAL-8).
#
# Invariants:
#   Rule 1: fields are checked in table order; the first problem is the reason.
#   Rule 2: every clamp, fold, drop or ignore that changes what the agent wrote adds
#           exactly one note to the command.
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import attrs

from markertools.domain.timeparse import (
    MS_THRESHOLD,
    default_time_zone_name,
    epoch_from_number,
    parse_iso,
)
from markertools.parse.jsonstrict import JsonRefusal, loads_object
from markertools.parse.kindspec import (
    FieldSpec,
    KindSpec,
    default_of,
    expected,
    per_kind,
)
from markertools.parse.params import Params
from markertools.parse.validate_fast import fast_params
from markertools.text.inline import shown, shown_list
from markertools.text.msg import Msg, msg

EPOCH_MIN: Final[float] = -62135596800.0  # 0001-01-01T00:00:00Z
EPOCH_MAX: Final[float] = 253402300799.0  # 9999-12-31T23:59:59Z
_ABSENT: Final = object()


@attrs.frozen
class Validated:
    params: Params
    notes: tuple[Msg, ...] = ()


class _Skip(Exception):
    def __init__(self, reason: Msg) -> None:
        super().__init__(reason.key)
        self.reason = reason


def _got(value: object) -> Msg:
    """What the agent wrote, for a reason: the JSON type, and the value when short."""
    if isinstance(value, bool):
        return msg("parse.got.value", value="true" if value else "false")
    if value is None:
        return msg("parse.got.value", value="null")
    if isinstance(value, int | float):
        text = repr(value) if isinstance(value, float) else str(value)
        return msg("parse.got.value", value=text if len(text) <= 40 else text[:37] + "…")
    if isinstance(value, str):
        return msg("parse.got.string", value=shown(value, 37))
    if isinstance(value, list):
        return msg("parse.type.list")
    return msg("parse.type.object")


def _type_error(spelling: str, field: FieldSpec, value: object) -> _Skip:
    return _Skip(msg("parse.field.type", field=spelling, got=_got(value), exp=expected(field)))


class _Work:
    """Scratch state of one validation: converted values and notes per field (a plain
    slotted class: it is built once per block, on the hot path)."""

    __slots__ = ("extra_notes", "notes", "values")

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.notes: dict[str, Msg] = {}
        self.extra_notes: list[Msg] = []


def _pick(body: dict[str, Any], field: FieldSpec) -> tuple[str, object]:
    """(spelling, value) of a field, VAL-2 (null = absent) and VAL-7 (alias ambiguity)."""
    present = [(s, body[s]) for s in field.spellings if s in body and body[s] is not None]
    if not present:
        return field.name, _ABSENT
    first_spelling, first = present[0]
    for _, value in present[1:]:
        if not _same_json(first, value):
            names = tuple(s for s, _ in present)
            raise _Skip(msg("parse.field.ambiguous", fields=names, field=field.name))
    return first_spelling, first


def _same_json(a: object, b: object) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    return a == b


def _text(spelling: str, field: FieldSpec, value: object, work: _Work) -> str | None:
    if not isinstance(value, str):
        raise _type_error(spelling, field, value)
    if value == "" and field.empty_is_absent:
        return None
    if field.nonblank and not value.strip():
        raise _Skip(msg("parse.field.blank", field=spelling, exp=expected(field)))
    if len(value) < field.min_len or (field.max_len is not None and len(value) > field.max_len):
        raise _Skip(
            msg("parse.field.length", field=spelling, length=len(value), exp=expected(field))
        )
    return value


def _int(spelling: str, field: FieldSpec, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _type_error(spelling, field, value)
    if isinstance(value, float):
        if not value.is_integer():
            raise _Skip(msg("parse.field.fraction", field=spelling, got=_got(value)))
        return int(value)
    return value


def _clamped(field: FieldSpec, spelling: str, number: int, work: _Work) -> int:
    if field.clamp is not None:
        low, high = field.clamp
        used = min(max(number, low), high)
        if used != number:
            work.notes[field.name] = msg(
                "parse.note.clamped", field=spelling, given=number, used=used, min=low, max=high
            )
        return used
    if field.bounds is not None and not field.bounds[0] <= number <= field.bounds[1]:
        raise _Skip(msg("parse.field.range", field=spelling, got=_got(number), exp=expected(field)))
    return number


def _epoch(spelling: str, field: FieldSpec, value: object, work: _Work) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _type_error(spelling, field, value)
    seconds = epoch_from_number(float(value))
    if seconds is None or value < 0:
        raise _Skip(msg("parse.field.negative_time", field=spelling, got=_got(value)))
    if seconds > EPOCH_MAX:
        raise _Skip(msg("parse.field.time_range", field=spelling, got=_got(value)))
    if value >= MS_THRESHOLD:
        from markertools.domain.schedule import shanghai_iso  # only for this rare note

        work.notes[field.name] = msg(
            "parse.note.milliseconds", field=spelling, used=seconds, iso=shanghai_iso(seconds)
        )
    return seconds


def _time(spelling: str, field: FieldSpec, value: object) -> float:
    if isinstance(value, str):
        seconds = parse_iso(value)
        if seconds is None:
            raise _Skip(
                msg(
                    "parse.field.time",
                    field=spelling,
                    got=_got(value),
                    zone=default_time_zone_name(),
                )
            )
    elif isinstance(value, int | float) and not isinstance(value, bool):
        # (None only for a non-finite number, which strict JSON never yields; refused
        # as out of range all the same)
        seconds = epoch_from_number(float(value))
    else:
        raise _type_error(spelling, field, value)
    if seconds is None or not EPOCH_MIN <= seconds <= EPOCH_MAX:
        raise _Skip(msg("parse.field.time_range", field=spelling, got=_got(value)))
    return seconds


def _ref_list(spelling: str, field: FieldSpec, value: object, work: _Work) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _type_error(spelling, field, value)
    if not value:
        raise _Skip(msg("parse.field.empty_list", field=spelling, exp=expected(field)))
    # TRN-12: linear in the list (a set answers "seen?"; a 40,000-id list was quadratic
    # with membership tests on the list), and the notes name at most LIST_SHOWN ids
    seen: set[str] = set()
    unique: list[str] = []
    duplicates: list[str] = []
    for index, item in enumerate(value):
        if not isinstance(item, str):
            where = f"{spelling}[{index}]"
            raise _Skip(
                msg("parse.field.type", field=where, got=_got(item), exp=msg("parse.exp.ref"))
            )
        if not item.strip():
            where = f"{spelling}[{index}]"
            raise _Skip(msg("parse.field.blank", field=where, exp=msg("parse.exp.ref")))
        if item in seen:
            duplicates.append(item)
        else:
            seen.add(item)
            unique.append(item)
    if duplicates:
        work.extra_notes.append(
            msg("parse.note.duplicates", field=spelling, ids=shown_list(duplicates))
        )
    keep = field.max_items if field.max_items is not None else len(unique)
    if len(unique) > keep:
        work.values["dropped_task_ids"] = tuple(unique[keep:])
        work.extra_notes.append(
            msg("parse.note.dropped", field=spelling, max=keep, ids=shown_list(unique[keep:]))
        )
    return tuple(unique[:keep])


def _c_ref(spelling: str, field: FieldSpec, value: object, work: _Work) -> object:
    if not isinstance(value, str):
        raise _type_error(spelling, field, value)
    if not value.strip():
        raise _Skip(msg("parse.field.blank", field=spelling, exp=expected(field)))
    return value


def _c_enum(spelling: str, field: FieldSpec, value: object, work: _Work) -> object:
    if not isinstance(value, str):
        raise _type_error(spelling, field, value)
    if value not in field.choices:
        raise _Skip(msg("parse.field.choice", field=spelling, got=_got(value), exp=expected(field)))
    if field.folds:
        return dict(field.folds).get(value, value)
    return value


def _c_int(spelling: str, field: FieldSpec, value: object, work: _Work) -> object:
    return _clamped(field, spelling, _int(spelling, field, value), work)


def _c_time(spelling: str, field: FieldSpec, value: object, work: _Work) -> object:
    return _time(spelling, field, value)


def _c_bool(spelling: str, field: FieldSpec, value: object, work: _Work) -> object:
    if not isinstance(value, bool):
        raise _type_error(spelling, field, value)
    return value


def _c_forbidden(spelling: str, field: FieldSpec, value: object, work: _Work) -> object:
    raise _Skip(msg("parse.field.forbidden", field=spelling, got=_got(value)))


_Converter = Callable[[str, FieldSpec, object, _Work], object]
_CONVERTERS: Final[dict[str, _Converter]] = {
    "text": _text,
    "ref": _c_ref,
    "ref_list": _ref_list,
    "enum": _c_enum,
    "int": _c_int,
    "epoch": _epoch,
    "time": _c_time,
    "bool": _c_bool,
    "forbidden": _c_forbidden,
}


# ---- named kind-level rules (the table names them; implemented once here) ----------


def _fold_wait_seconds(kind: KindSpec, work: _Work, written: dict[str, str]) -> None:
    """POL-1: wait_seconds overrides interval and timeout, each then clamped. When a
    clamp changes either, one note says what the poll does with it: how long it waits,
    how often it checks, and which limit changed which value (a 900 s wait is not cut
    when only the interval is clamped to 60)."""
    wait = work.values.pop("wait_seconds", None)
    if wait is None:
        return
    limits: list[Msg] = []
    for name in ("timeout_seconds", "interval_seconds"):
        field = kind.field(name)
        work.notes.pop(name, None)
        if field.clamp is None:
            work.values[name] = _clamped(field, f"{name} (wait_seconds)", wait, work)
            continue
        low, high = field.clamp
        used = min(max(wait, low), high)
        work.values[name] = used
        if used != wait:
            limits.append(
                msg("parse.note.wait_limit", field=name, min=low, max=high, used=used, wait=wait)
            )
    if limits:
        why = (
            limits[0]
            if len(limits) == 1
            else msg("parse.note.both", first=limits[0], second=limits[1])
        )
        timeout, interval = work.values["timeout_seconds"], work.values["interval_seconds"]
        key = "parse.note.wait_snapshot" if timeout == 0 else "parse.note.wait_used"
        work.extra_notes.append(msg(key, wait=wait, timeout=timeout, interval=interval, why=why))
    overridden = tuple(n for n in ("interval_seconds", "timeout_seconds") if n in written)
    if overridden:
        work.extra_notes.append(
            msg("parse.note.wait_seconds_override", wait=wait, fields=overridden)
        )


def _needs_update(kind: KindSpec, work: _Work, written: dict[str, str]) -> None:
    """TDU-1: at least one updatable field besides `id`."""
    updatable = tuple(f.name for f in kind.fields if f.name != "id")
    if all(work.values.get(name) is None for name in updatable):
        raise _Skip(msg("parse.field.nothing_to_update", fields=updatable))


_POST_RULES: Final[dict[str, Callable[[KindSpec, _Work, dict[str, str]], None]]] = {
    "fold_wait_seconds": _fold_wait_seconds,
    "needs_update": _needs_update,
}


def validate_body(kind: KindSpec, body: str) -> Validated | Msg:
    """The params of one block of `kind`, or the reason it is skipped (never raises)."""
    result = validate_parts(kind, body)
    return result if isinstance(result, Msg) else Validated(*result)


def validate_parts(kind: KindSpec, body: str) -> tuple[Params, tuple[Msg, ...]] | Msg:
    """`validate_body` as (params, notes), without the wrapper (the planner's hot path)."""
    parsed = loads_object(body)
    if isinstance(parsed, JsonRefusal):
        return parsed.reason
    params = fast_params(kind, parsed)  # the happy path: nothing to note or refuse
    if params is not None:
        return params, ()
    try:
        validated = _validate_object(kind, parsed)
    except _Skip as skip:
        return skip.reason
    return validated.params, validated.notes


class _Plan:
    """What `_validate_object` needs from one kind, derived once from the table (Rule 1
    order kept): (field, name, single spelling?, default, converter) per field, every
    accepted spelling, and whether values must be filtered before building the params.
    (A plain slotted class: attrs classes cost import time.)"""

    __slots__ = ("fields", "filter_args", "known", "params_fields")

    def __init__(self, kind: KindSpec) -> None:
        self.fields = tuple(
            (f, f.name, not f.aliases, default_of(kind, f), _CONVERTERS.get(f.kind, _c_forbidden))
            for f in kind.fields
        )
        self.known = frozenset(s for f in kind.fields for s in f.spellings)
        self.params_fields = frozenset(f.name for f in kind.fields if f.param)
        self.filter_args = any(not f.param for f in kind.fields)


_plan: Final = per_kind(_Plan)


def _validate_object(kind: KindSpec, body: dict[str, Any]) -> Validated:
    if kind.ignore_all_fields:  # QUO-1
        ignored = tuple(body)
        if not ignored:
            return Validated(kind.params(ignored_fields=ignored))
        note = msg("parse.note.ignored_fields", kind=kind.name, fields=shown_list(ignored))
        return Validated(kind.params(ignored_fields=ignored), (note,))
    plan = _plan(kind)
    work = _Work()
    values = work.values
    written: dict[str, str] = {}
    for field, name, single, default, convert in plan.fields:
        if single:  # the common case: no alias, so no ambiguity (VAL-7) to check
            value = body.get(name)
            spelling = name
            if value is None:  # VAL-2: null = absent
                value = _ABSENT
        else:
            spelling, value = _pick(body, field)
        if value is _ABSENT:
            if field.required:
                raise _Skip(_missing(kind, field, body))
            values[name] = default
            continue
        written[name] = spelling
        values[name] = convert(spelling, field, value, work)
    for rule in kind.post_rules:
        _POST_RULES[rule](kind, work, written)
    notes = [*work.notes.values(), *work.extra_notes] if work.notes or work.extra_notes else []
    if not plan.known.issuperset(body):
        unknown = tuple(k for k in body if k not in plan.known)
        notes.append(
            msg(
                "parse.note.unknown_fields",
                kind=kind.name,
                fields=shown_list(unknown),
            )
        )
    if plan.filter_args:
        keep = plan.params_fields
        values = {k: v for k, v in values.items() if k in keep or k == "dropped_task_ids"}
    return Validated(kind.params(**values), tuple(notes))


def _missing(kind: KindSpec, field: FieldSpec, body: dict[str, Any]) -> Msg:
    known = _plan(kind).known
    unknown = tuple(k for k in body if k not in known)
    spellings = field.spellings
    if unknown:
        return msg(
            "parse.field.missing_with_unknown",
            field=field.name, spellings=spellings, exp=expected(field),
            unknown=shown_list(unknown),
        )  # fmt: skip
    return msg("parse.field.missing", field=field.name, spellings=spellings, exp=expected(field))
