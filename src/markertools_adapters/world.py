# Owns: the `World` value (every record of a markertools world, as in docs/cli.md's world
# file), the `WorldStore` protocol storage adapters implement to be filled from a world
# and exported back to one, and the world FILE format: JSON <-> World through a private,
# strict cattrs Converter (docs/cli.md "World file").
#
# Invariants:
#   Rule 1: omitted lists are empty; omitted record fields take the documented defaults
#           (`created_at` defaults to the world's `now`); `now` is required, an epoch number
#           or an ISO 8601 string WITH an offset.
#   Rule 2: nothing is coerced: a string is never an int, a bool never a number, 5.5 never
#           an int; an unknown field (a typo) is an error, never silently a default.
#   Rule 3: every error is a WorldFileError whose message starts with the path of the bad
#           field (`tasks[2].status: expected one of ...`).
#   Rule 4: dump(load(x)) loads back to an equal World (round trip).
from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any, Final, Protocol

import attrs
import cattrs
from cattrs.errors import ForbiddenExtraKeysError

from markertools.domain.model import (
    EFFORTS,
    EXECUTORS,
    PERMISSIONS,
    TASK_STATUSES,
    TODO_PRIORITIES,
    TODO_STATUSES,
    Attempt,
    AuditRecord,
    Automation,
    CostRow,
    Followup,
    PermissionGrant,
    Project,
    Quota,
    Task,
    Todo,
)


@attrs.frozen
class World:
    now: float = 0.0
    projects: tuple[Project, ...] = ()
    permissions: tuple[PermissionGrant, ...] = ()
    tasks: tuple[Task, ...] = ()
    todos: tuple[Todo, ...] = ()
    automations: tuple[Automation, ...] = ()
    costs: tuple[CostRow, ...] = ()
    quotas: tuple[Quota, ...] = ()
    # additive (not in docs/cli.md's example; omitted lists are empty):
    attempts: tuple[Attempt, ...] = ()
    audit: tuple[AuditRecord, ...] = ()
    followups: tuple[Followup, ...] = ()


class WorldStore(Protocol):
    def load_world(self, world: World) -> None:
        """Insert every record of `world` into this (empty) store, in one transaction."""
        ...

    def export_world(self, now: float) -> World:
        """Every record, in a canonical order (ids ascending; audit and follow-ups in
        insertion order), so two adapters holding the same data export equal worlds."""
        ...


class WorldFileError(ValueError):
    """An invalid world file; the message names the bad field first."""


# ---- the record lists of a world file --------------------------------------------------

_LISTS: Final[dict[str, type]] = {
    "projects": Project,
    "permissions": PermissionGrant,
    "tasks": Task,
    "todos": Todo,
    "automations": Automation,
    "costs": CostRow,
    "quotas": Quota,
    "attempts": Attempt,
    "audit": AuditRecord,
    "followups": Followup,
}
_CREATED_AT_DEFAULTS_TO_NOW: Final[frozenset[str]] = frozenset({"tasks", "todos", "automations"})
# docs/cli.md: "omitted fields of any record take the values shown (null, false, 0, ...)"; the
# record classes give every other field such a default, these few get theirs here.
_FILE_DEFAULTS: Final[dict[str, dict[str, Any]]] = {
    "automations": {"name": "", "prompt": ""},
    "costs": {"round": 0},
}
_TOP_LEVEL: Final[tuple[str, ...]] = ("now", *_LISTS)


class _Bad(Exception):
    """Raised by the strict structure hooks; its text is the user-facing message."""


def _strict_str(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise _Bad(f"expected a string, got {_json_type(value)}")
    return value


def _strict_bool(value: Any, _: type) -> bool:
    if not isinstance(value, bool):
        raise _Bad(f"expected true or false, got {_json_type(value)}")
    return value


def _strict_int(value: Any, _: type) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Bad(f"expected an integer, got {_json_type(value)}")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise _Bad(f"expected an integer, got {value!r}")
    return int(value)


def _strict_float(value: Any, _: type) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Bad(f"expected a number, got {_json_type(value)}")
    if not math.isfinite(value):
        raise _Bad(f"expected a finite number, got {value!r}")
    return float(value)


def _strict_str_tuple(value: Any, _: type) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _Bad(f"expected a list of strings, got {_json_type(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise _Bad(f"item {index}: expected a string, got {_json_type(item)}")
    return tuple(value)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {json.dumps(value[:40], ensure_ascii=False)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    conv.register_structure_hook(str, _strict_str)
    conv.register_structure_hook(bool, _strict_bool)
    conv.register_structure_hook(int, _strict_int)
    conv.register_structure_hook(float, _strict_float)
    conv.register_structure_hook_func(lambda t: t == tuple[str, ...], _strict_str_tuple)
    return conv


_CONVERTER: Final[cattrs.Converter] = _make_converter()


def _format(exc: BaseException, _type: type | None) -> str:
    if isinstance(exc, _Bad):
        return str(exc)
    if isinstance(exc, KeyError):
        return "required field missing"
    if isinstance(exc, ForbiddenExtraKeysError):
        names = ", ".join(repr(n) for n in sorted(exc.extra_fields))
        return f"unknown field(s) {names} (unknown fields are rejected so a typo never becomes a default)"
    if isinstance(exc, AttributeError | TypeError):
        return "expected an object"
    return f"invalid value ({exc})"


def _errors_of(exc: BaseException, path: str) -> list[str]:
    out: list[str] = []
    for line in cattrs.transform_error(exc, path=path, format_exception=_format):
        message, _, where = line.rpartition(" @ ")
        out.append(f"{where}: {message}")
    return out


# ---- loading ----------------------------------------------------------------------------


def parse_now(value: Any) -> float:
    """`now`: epoch seconds, or an ISO 8601 string with an offset (none = error)."""
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            raise WorldFileError(
                f"now: {value!r} is not an ISO 8601 date-time (or use epoch seconds)"
            ) from None
        if parsed.tzinfo is None or parsed.utcoffset() is None:
            raise WorldFileError(
                f"now: {value!r} has no UTC offset; write e.g. '+08:00' or 'Z', or use epoch seconds"
            )
        return parsed.timestamp()
    try:
        return _strict_float(value, float)
    except _Bad as exc:
        raise WorldFileError(
            f"now: {exc} (epoch seconds or an ISO 8601 string with an offset)"
        ) from None


def world_from_json(obj: Any) -> World:
    """Build a World from a parsed world file; raises WorldFileError naming the bad field."""
    if not isinstance(obj, dict):
        raise WorldFileError(f"world: expected a JSON object, got {_json_type(obj)}")
    unknown = [k for k in obj if k not in _TOP_LEVEL]
    if unknown:
        raise WorldFileError(
            f"{unknown[0]}: unknown top-level field (expected: {', '.join(_TOP_LEVEL)})"
        )
    if "now" not in obj:
        raise WorldFileError("now: required (epoch seconds or an ISO 8601 string with an offset)")
    now = parse_now(obj["now"])
    lists: dict[str, tuple[Any, ...]] = {}
    errors: list[str] = []
    for name, cls in _LISTS.items():
        raw = obj.get(name, [])
        if raw is None:
            raw = []
        if not isinstance(raw, list):
            raise WorldFileError(f"{name}: expected a list, got {_json_type(raw)}")
        items: list[Any] = []
        for index, item in enumerate(raw):
            where = f"{name}[{index}]"
            if not isinstance(item, dict):
                errors.append(f"{where}: expected an object, got {_json_type(item)}")
                continue
            if name in _CREATED_AT_DEFAULTS_TO_NOW and "created_at" not in item:
                item = {**item, "created_at": now}
            item = {**_FILE_DEFAULTS.get(name, {}), **item}
            try:
                items.append(_CONVERTER.structure(item, cls))
            except Exception as exc:
                errors.extend(_errors_of(exc, where))
        lists[name] = tuple(items)
    world = World(now=now, **lists)
    errors.extend(_check_values(world))
    if errors:
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise WorldFileError(errors[0] + more)
    return world


def _one_of(path: str, value: object, allowed: tuple[object, ...]) -> list[str]:
    if value in allowed:
        return []
    shown = ", ".join("null" if a is None else str(a) for a in allowed)
    return [f"{path}: expected one of {shown}, got {json.dumps(value, ensure_ascii=False)}"]


def _check_values(world: World) -> list[str]:
    """The value rules cattrs cannot know: enumerations, non-empty ids, duplicates."""
    errors: list[str] = []
    for name in _LISTS:
        for index, record in enumerate(getattr(world, name)):
            for key in ("id", "project_id", "task_id", "user", "project"):
                value = getattr(record, key, None)
                if isinstance(value, str) and not value.strip():
                    errors.append(f"{name}[{index}].{key}: must not be empty")
    for i, t in enumerate(world.tasks):
        errors += _one_of(f"tasks[{i}].status", t.status, TASK_STATUSES)
        errors += _one_of(f"tasks[{i}].executor", t.executor, EXECUTORS)
        errors += _one_of(f"tasks[{i}].effort", t.effort, (None, *EFFORTS))
    for i, d in enumerate(world.todos):
        errors += _one_of(f"todos[{i}].status", d.status, TODO_STATUSES)
        errors += _one_of(f"todos[{i}].priority", d.priority, TODO_PRIORITIES)
    for i, a in enumerate(world.automations):
        errors += _one_of(f"automations[{i}].bind", a.bind, (None, "cron", "heartbeat"))
        if a.interval_seconds < 1:
            errors.append(f"automations[{i}].interval_seconds: must be at least 1")
    for i, g in enumerate(world.permissions):
        for j, grant in enumerate(g.grants):
            errors += _one_of(f"permissions[{i}].grants[{j}]", grant, PERMISSIONS)
    for i, c in enumerate(world.costs):
        if c.tokens < 0:
            errors.append(f"costs[{i}].tokens: must not be negative")
    errors += _duplicates("projects", [p.id for p in world.projects])
    errors += _duplicates("tasks", [t.id for t in world.tasks])
    errors += _duplicates("todos", [d.id for d in world.todos])
    errors += _duplicates("automations", [a.id for a in world.automations])
    errors += _duplicates("quotas", [q.user for q in world.quotas], "user")
    errors += _duplicates(
        "attempts", [f"{a.task_id}#{a.attempt_no}" for a in world.attempts], "task_id/attempt_no"
    )
    return errors


def _duplicates(name: str, keys: list[str], field: str = "id") -> list[str]:
    seen: dict[str, int] = {}
    for index, key in enumerate(keys):
        if key in seen:
            return [f"{name}[{index}].{field}: duplicate {key!r} (first at {name}[{seen[key]}])"]
        seen[key] = index
    return []


def loads_world(text: str) -> World:
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise WorldFileError(
            f"world: not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except _Bad as exc:
        raise WorldFileError(f"world: {exc}") from None
    return world_from_json(obj)


def _reject_constant(name: str) -> Any:
    raise _Bad(f"{name} is not valid JSON")


# ---- dumping ----------------------------------------------------------------------------


def world_to_json(world: World) -> dict[str, Any]:
    """The world file form of `world` (the same shape `world_from_json` reads)."""
    raw = _CONVERTER.unstructure(world)
    return {k: _tidy(v) for k, v in raw.items()}


def dumps_world(world: World, indent: int | None = 2) -> str:
    return json.dumps(world_to_json(world), ensure_ascii=False, indent=indent)


def _tidy(value: Any) -> Any:
    """Lists for tuples; integral floats written as integers (they load back equal)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, list | tuple):
        return [_tidy(v) for v in value]
    if isinstance(value, dict):
        return {k: _tidy(v) for k, v in value.items()}
    return value
