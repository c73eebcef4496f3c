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
#   Rule 4: dump(load(x)) loads back to an equal World (round trip); every value with an
#           enumeration (task / todo / automation status, executor, effort, engine, priority,
#           permission, bind, audit outcome, attempt kind) is checked at load, so
#           nothing a store could not dump and reload gets in.
#   Rule 5: `loads_world` raises only WorldFileError, whatever the text: a duplicate key,
#           an integer of more than MAX_INT_DIGITS digits, nesting deeper than
#           MAX_NESTING (or than Python's recursion limit) are refused, never raised
#           as ValueError / RecursionError.
#   Rule 7 (CST-2): money fields (costs[].usd, quotas[].total_usd / used_usd) stay JSON
#           numbers in the file; they load as exact Decimals of whole micro-dollars (a
#           negative amount is refused) and dump as integers when whole.
#   Rule 6: `merge_worlds(base, extra)` adds `extra` to `base`: a record whose key
#           exists with the same content is kept once, with different content it is a
#           conflict (MergeConflict lists every one); nothing is changed on a conflict.
#   Rule 8: an additive optional field listed in _OMITTED_WHEN_NULL (costs[].priced_by)
#           is left out of a dump when null: older worlds dump byte for byte as before.
from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from datetime import datetime
from decimal import Decimal
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final, Protocol

import attrs

from markertools import (
    EFFORTS,
    ENGINES,
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
    from_micros,
    to_micros,
)
from markertools_adapters.errors import MarkertoolsError

if TYPE_CHECKING:  # cattrs loads with the first world file read or written (import cost)
    import cattrs

MAX_INT_DIGITS: Final[int] = 30  # like block bodies: longer integers are refused
MAX_NESTING: Final[int] = 64  # a world file is at most a few levels deep
AUTOMATION_STATUSES: Final[tuple[str, ...]] = ("active", "paused", "deleted")
ATTEMPT_KINDS: Final[tuple[str, ...]] = ("goal_breakpoint", "platform_fresh")
# every outcome delivery (ReportEntry outcomes, TRN-3 discards) and the automation
# firing (SCH-6) write to the audit log
AUDIT_OUTCOMES: Final[tuple[str, ...]] = (
    "done",
    "rejected",
    "skipped",
    "ignored",
    "discarded",
    "task-created",
    "followup-queued",
    "not-fired",
)
BINDS: Final[tuple[str | None, ...]] = (None, "cron", "heartbeat")


@attrs.frozen
class World:
    """Every record of a markertools world (docs/cli.md "World file"): `now` (epoch
    seconds) and one tuple per record list; omitted lists are empty."""

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


class WorldFileError(ValueError, MarkertoolsError):
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


def _strict_money(value: Any, _: type) -> Decimal:
    """CST-2: a JSON number, not negative, as exact money (whole micro-dollars)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Bad(f"expected a number of dollars, got {_json_type(value)}")
    try:
        return from_micros(to_micros(value, "amount"))
    except ValueError as exc:
        raise _Bad(str(exc).removeprefix("amount: ")) from None


def _money_number(value: Decimal) -> int | float:
    """CST-2: money as a JSON number (an integer when whole; 15 significant digits
    round-trip through a float exactly)."""
    return int(value) if value == value.to_integral_value() else float(value)


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


@lru_cache(maxsize=1)
def _converter() -> cattrs.Converter:
    import cattrs

    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    conv.register_structure_hook(str, _strict_str)
    conv.register_structure_hook(bool, _strict_bool)
    conv.register_structure_hook(int, _strict_int)
    conv.register_structure_hook(float, _strict_float)
    conv.register_structure_hook(Decimal, _strict_money)
    conv.register_unstructure_hook(Decimal, _money_number)
    conv.register_structure_hook_func(lambda t: t == tuple[str, ...], _strict_str_tuple)
    return conv


def _format(exc: BaseException, _type: type | None) -> str:
    from cattrs.errors import ForbiddenExtraKeysError

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
    import cattrs

    if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0] if not getattr(exc.exceptions[0], "__notes__", None) else exc
    if isinstance(exc, ValueError):  # the record refused a value: "CostRow.tokens: ..."
        record, dot, rest = str(exc).partition(".")
        field, colon, message = rest.partition(": ")
        if dot and colon and record.isidentifier() and field.isidentifier():
            return [f"{path}.{field}: {message}"]
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
                items.append(_converter().structure(item, cls))
            except Exception as exc:
                errors.extend(_errors_of(exc, where))
        lists[name] = tuple(items)
    world = World(now=now, **lists)
    errors.extend(_check_values(world))
    if errors:
        raise WorldFileError(summarise_errors(errors))
    return world


MORE_IN_FULL: Final[int] = 3  # further problems of a world file quoted in full
MORE_BY_PATH: Final[int] = 10  # then named by their path only


def summarise_errors(errors: Sequence[str]) -> str:
    """One line naming every problem of a world file: the first one, then the next
    MORE_IN_FULL in full and up to MORE_BY_PATH more by their path (the text before
    ": "), so a user fixes them all in one go instead of one per run."""
    first, rest = errors[0], list(errors[1:])
    if not rest:
        return first
    listed = "; ".join(rest[:MORE_IN_FULL])
    paths = [e.split(": ", 1)[0] for e in rest[MORE_IN_FULL:]]
    if paths:
        listed += "; also at " + ", ".join(paths[:MORE_BY_PATH])
        if len(paths) > MORE_BY_PATH:
            listed += f" and {len(paths) - MORE_BY_PATH} more"
    count = f"{len(rest)} more problem" + ("s" if len(rest) > 1 else "")
    return f"{first} ({count}: {listed})"


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
        errors += _one_of(f"tasks[{i}].engine", t.engine, (None, *ENGINES))
    for i, d in enumerate(world.todos):
        errors += _one_of(f"todos[{i}].status", d.status, TODO_STATUSES)
        errors += _one_of(f"todos[{i}].priority", d.priority, TODO_PRIORITIES)
    for i, a in enumerate(world.automations):
        errors += _one_of(f"automations[{i}].bind", a.bind, BINDS)
        errors += _one_of(f"automations[{i}].status", a.status, AUTOMATION_STATUSES)
        if a.interval_seconds < 1:
            errors.append(f"automations[{i}].interval_seconds: must be at least 1")
    for i, g in enumerate(world.permissions):
        for j, grant in enumerate(g.grants):
            errors += _one_of(f"permissions[{i}].grants[{j}]", grant, PERMISSIONS)
    for i, r in enumerate(world.audit):
        errors += _one_of(f"audit[{i}].outcome", r.outcome, AUDIT_OUTCOMES)
    for i, att in enumerate(world.attempts):
        errors += _one_of(f"attempts[{i}].kind", att.kind, ATTEMPT_KINDS)
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
    """The World in world-file text (docs/cli.md "World file").

    Raises:
        WorldFileError: for anything else - not JSON, a duplicate key, NaN / Infinity,
            an integer over MAX_INT_DIGITS digits, nesting over MAX_NESTING, an invalid
            record (the message starts with the path of the bad field). Nothing else
            (Rule 5).
    """
    try:
        obj = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_int=_bounded_int,
            object_pairs_hook=_unique_keys,
        )
    except json.JSONDecodeError as exc:
        raise WorldFileError(
            f"world: not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except _Bad as exc:
        raise WorldFileError(f"world: {exc}") from None
    except RecursionError:
        raise WorldFileError(f"world: nested deeper than {MAX_NESTING} levels") from None
    except ValueError as exc:  # any other limit of the decoder
        raise WorldFileError(f"world: not a valid world file: {exc}") from None
    depth = _depth(obj)
    if depth > MAX_NESTING:
        raise WorldFileError(f"world: nested {depth} levels deep (at most {MAX_NESTING})")
    try:
        return world_from_json(obj)
    except RecursionError:  # pragma: no cover - the depth check above prevents it
        raise WorldFileError(f"world: nested deeper than {MAX_NESTING} levels") from None


def _reject_constant(name: str) -> Any:
    raise _Bad(f"{name} is not valid JSON")


def _bounded_int(digits: str) -> int:
    count = len(digits.lstrip("-"))
    if count > MAX_INT_DIGITS:
        raise _Bad(f"an integer of {count} digits (at most {MAX_INT_DIGITS})")
    return int(digits)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                shown = json.dumps(key[:40], ensure_ascii=False)
                raise _Bad(f"duplicate key {shown} in an object (keys must be unique)")
            seen.add(key)
    return obj


def _depth(obj: Any) -> int:
    """How deeply lists and objects nest in `obj` (iterative: never recursion)."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            deepest = max(deepest, level)
            if level <= MAX_NESTING:
                stack.extend((v, level + 1) for v in value if isinstance(v, dict | list))
    return deepest


# ---- merging ----------------------------------------------------------------------------


class MergeConflict(WorldFileError):
    """`merge_worlds` found records whose key exists with different content; `conflicts`
    lists them as "tasks t1", "quotas u1", ..."""

    def __init__(self, conflicts: Sequence[str]) -> None:
        self.conflicts = tuple(conflicts)
        shown = ", ".join(self.conflicts[:20]) + (", …" if len(self.conflicts) > 20 else "")
        super().__init__(
            f"{len(self.conflicts)} record(s) already exist with different content: {shown}"
        )


_MERGE_KEYS: Final[dict[str, Callable[[Any], Hashable]]] = {
    "projects": lambda r: r.id,
    "permissions": lambda r: (r.user, r.project),
    "tasks": lambda r: r.id,
    "todos": lambda r: r.id,
    "automations": lambda r: r.id,
    "costs": lambda r: (r.task_id, r.round),
    "quotas": lambda r: r.user,
    "attempts": lambda r: (r.task_id, r.attempt_no),
}
_APPENDED: Final[tuple[str, ...]] = ("audit", "followups")  # logs: no key


def _shown_key(key: Hashable) -> str:
    return "/".join(str(k) for k in key) if isinstance(key, tuple) else str(key)


def merge_worlds(base: World, extra: World) -> tuple[World, World]:
    """(merged, added): `base` with the records of `extra` added, and the records that
    were new (Rule 6). `now` stays `base.now`. Keyed records (ids; a quota's user; a
    permission entry's user and project; a cost's task and round; an attempt's task and
    number) equal to one in `base` are not added again; audit records and follow-ups
    have no key: each one `base` does not already hold (counting repeats) is appended,
    so merging the same world twice adds nothing the second time.

    Raises:
        MergeConflict: listing every key of `extra` that `base` holds with other content.
        WorldFileError: when the merged world breaks a value rule (e.g. two active
            automations of a project with one name).
    """
    merged: dict[str, tuple[Any, ...]] = {}
    added: dict[str, tuple[Any, ...]] = {}
    conflicts: list[str] = []
    for name, key_of in _MERGE_KEYS.items():
        have = {key_of(r): r for r in getattr(base, name)}
        new: list[Any] = []
        for record in getattr(extra, name):
            key = key_of(record)
            if key not in have:
                have[key] = record
                new.append(record)
            elif have[key] != record:
                conflicts.append(f"{name} {_shown_key(key)}")
        merged[name] = (*getattr(base, name), *new)
        added[name] = tuple(new)
    for name in _APPENDED:
        already = Counter(getattr(base, name))
        new = []
        for record in getattr(extra, name):
            if already[record] > 0:  # the same record again: merged before
                already[record] -= 1
            else:
                new.append(record)
        merged[name] = (*getattr(base, name), *new)
        added[name] = tuple(new)
    if conflicts:
        raise MergeConflict(conflicts)
    world = World(now=base.now, **merged)
    errors = _check_values(world)
    if errors:
        raise WorldFileError("merged world: " + summarise_errors(errors))
    return world, World(now=base.now, **added)


# ---- dumping ----------------------------------------------------------------------------


def example_world() -> World:
    """The example world every demo uses (the bundled copy of examples/worlds/shop.json,
    what `markertools demo --print-world` prints): a project `p-shop`, a small task
    lineage led by `t-lead`, todos, quotas and permissions - for quickstarts and tests,
    from any directory."""
    from importlib import resources

    text = (resources.files("markertools_adapters") / "data" / "demo_world.json").read_text(
        encoding="utf-8"
    )
    return loads_world(text)


# Additive optional fields a dump leaves out when they are null, so a world without them
# dumps exactly as before they existed (they load back as null)
_OMITTED_WHEN_NULL: Final[dict[str, tuple[str, ...]]] = {"costs": ("priced_by",)}


def world_to_json(world: World) -> dict[str, Any]:
    """The world file form of `world` (the same shape `world_from_json` reads)."""
    raw = _converter().unstructure(world)
    for name, fields in _OMITTED_WHEN_NULL.items():
        for record in raw.get(name, ()):
            for field in fields:
                if record.get(field, 0) is None:
                    del record[field]
    return {k: _tidy(v) for k, v in raw.items()}


def dumps_world(world: World, indent: int | None = 2) -> str:
    """The world file text of `world` (`indent` None: one line)."""
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
