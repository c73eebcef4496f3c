# Owns: the small field-rule vocabulary proposal and host-settings validation is
# written in (one table per object in `_proposal.py`): type checks with the marker
# rules' strictness, ranges, enums, lists and objects, each reporting at a path and
# continuing, so every error of a document is reported at once.
#
# Invariants:
#   Rule 1: checkers never raise on any input; they append `PlanIssue`s and return
#           either the normalised value or `INVALID`.
#   Rule 2: strict JSON types: a bool is never a number; integer fields take integral
#           floats (`5.0` -> 5); `null` means absent (VAL-2 style) for optional fields.
#   Rule 3: unknown keys are errors (with a did-you-mean hint); duplicate keys and
#           unrepresentable numbers are errors at their own path.
#   Rule 4: values quoted in messages are truncated and have control characters
#           escaped, so hostile text cannot forge extra lines in a report.
#   Rule 5: one definition of a control character (`is_control_character`: C0, DEL,
#           C1, the line and paragraph separators, the bidi controls); names, ids,
#           models, paths and buckets refuse them and lone surrogates (`plain_string`),
#           free text keeps them and whoever shows it escapes them.
from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import attrs

from markertools.plans._json import BadNumber, JsonObject
from markertools.plans._model import PlanIssue
from markertools.text.msg import Msg, msg

MAX_ISSUES: Final[int] = 100
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# U+2028/2029 (line / paragraph separator), the bidi embeddings, overrides and
# isolates (U+202A-202E, U+2066-2069) and the bidi marks (U+061C, U+200E, U+200F).
_LAYOUT_CONTROLS: Final[frozenset[int]] = frozenset(
    {0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
)


def is_control_character(char: str) -> bool:
    """C0 (U+0000-001F: newline, tab, ESC ...), DEL, C1 (U+0080-009F), the line and
    paragraph separators and the bidi controls (Rule 5): characters that move the
    cursor, start a line or reorder what a person reads."""
    code = ord(char)
    return code < 0x20 or 0x7F <= code <= 0x9F or code in _LAYOUT_CONTROLS


def first_control_character(value: str) -> int | None:
    """The index of the first control character of `value` (Rule 5), or None."""
    for index, char in enumerate(value):
        if is_control_character(char):
            return index
    return None


def has_control_characters(value: str) -> bool:
    """Whether `value` holds a control character (Rule 5): the one check of PLN
    validation, dots_tune and the MCP arguments."""
    return first_control_character(value) is not None


def control_character_issue(value: str) -> Msg | None:
    """The refusal of a value that holds a control character, naming the first one."""
    index = first_control_character(value)
    if index is None:
        return None
    return msg("plan.control_chars", char=f"U+{ord(value[index]):04X}", index=index + 1)


class _Invalid:
    def __repr__(self) -> str:
        return "INVALID"


INVALID: Final = _Invalid()


class Issues:
    """Collects issues in order; past MAX_ISSUES it only counts them."""

    def __init__(self) -> None:
        self.items: list[PlanIssue] = []
        self.dropped = 0

    def add(self, path: str, message: Msg) -> None:
        if len(self.items) < MAX_ISSUES:
            self.items.append(PlanIssue(path, message))
        else:
            self.dropped += 1

    def __bool__(self) -> bool:
        return bool(self.items)

    def result(self) -> tuple[PlanIssue, ...]:
        if self.dropped:
            return (*self.items, PlanIssue("$", msg("plan.more_issues", n=self.dropped)))
        return tuple(self.items)


Checker = Callable[[object, str, Issues], object]


def quote(value: str, limit: int = 60) -> str:
    """'value' for a message: truncated, control characters escaped (Rule 4)."""
    text = value if len(value) <= limit else value[: limit - 1] + "…"
    return "'" + "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text) + "'"


def key_path(path: str, key: str) -> str:
    return f"{path}.{key}" if _IDENT.match(key) else f"{path}[{quote(key)}]"


def type_name(value: object) -> Msg:
    if value is None:
        return msg("plan.t.null")
    if isinstance(value, bool):
        return msg("plan.t.boolean")
    if isinstance(value, int | float | BadNumber):
        return msg("plan.t.number")
    if isinstance(value, str):
        return msg("plan.t.string")
    if isinstance(value, Mapping):
        return msg("plan.t.object")
    if isinstance(value, list | tuple):
        return msg("plan.t.array")
    return msg("plan.t.other", name=type(value).__name__)


def show(value: object) -> str:
    """A short rendering of a JSON scalar for messages."""
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, BadNumber):
        return value.text
    return str(value)[:40]


def _wrong_type(expected: str, value: object, path: str, issues: Issues) -> _Invalid:
    if isinstance(value, BadNumber):
        issues.add(path, msg("plan.bad_number", text=value.text))
    else:
        issues.add(path, msg("plan.type", expected=msg(expected), got=type_name(value)))
    return INVALID


def string() -> Checker:
    """A string with at least one non-whitespace character."""

    def check(value: object, path: str, issues: Issues) -> object:
        if not isinstance(value, str):
            return _wrong_type("plan.t.string", value, path, issues)
        if not value.strip():
            issues.add(path, msg("plan.blank"))
            return INVALID
        return value

    return check


def plain_string() -> Checker:
    """A non-blank string without control characters (Rule 5) or lone surrogates: a
    name, an id, a model, a path, a bucket: a value shown inside a line that must stay
    one line (and be printable at all)."""
    text = string()

    def check(value: object, path: str, issues: Issues) -> object:
        got = text(value, path, issues)
        if not isinstance(got, str):
            return got
        refusal = control_character_issue(got)
        if refusal is not None:
            issues.add(path, refusal)
            return INVALID
        lone = next((i for i, c in enumerate(got) if 0xD800 <= ord(c) <= 0xDFFF), None)
        if lone is not None:  # `\ud800` in JSON: not a character, cannot be printed
            issues.add(path, msg("plan.surrogate", char=f"U+{ord(got[lone]):04X}", index=lone + 1))
            return INVALID
        return got

    return check


def _range_issue(value: float, lo: float, hi: float | None, path: str, issues: Issues) -> bool:
    if value < lo or (hi is not None and value > hi):
        if hi is None:
            issues.add(path, msg("plan.at_least", lo=lo, got=show(value)))
        else:
            issues.add(path, msg("plan.range", lo=lo, hi=hi, got=show(value)))
        return True
    return False


def integer(lo: int, hi: int | None) -> Checker:
    def check(value: object, path: str, issues: Issues) -> object:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return _wrong_type("plan.t.integer", value, path, issues)
        if isinstance(value, float) and not value.is_integer():
            issues.add(path, msg("plan.int_fraction", got=show(value)))
            return INVALID
        if _range_issue(value, lo, hi, path, issues):
            return INVALID
        return int(value)

    return check


def number(lo: float, hi: float | None) -> Checker:
    def check(value: object, path: str, issues: Issues) -> object:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return _wrong_type("plan.t.number", value, path, issues)
        if _range_issue(value, lo, hi, path, issues):
            return INVALID
        return int(value) if isinstance(value, float) and value.is_integer() else value

    return check


def one_of(choices: Sequence[str], refuse: Callable[[str], Msg | None] | None = None) -> Checker:
    """A string from `choices`; `refuse` may give a specific reason for a bad value."""

    def check(value: object, path: str, issues: Issues) -> object:
        if not isinstance(value, str):
            return _wrong_type("plan.t.string", value, path, issues)
        if value in choices:
            return value
        special = refuse(value) if refuse is not None else None
        allowed = tuple(quote(c) for c in choices)
        issues.add(path, special or msg("plan.enum", allowed=allowed, got=quote(value)))
        return INVALID

    return check


def list_of(item: Checker, lo: int = 0, hi: int | None = None, *, unique: bool = False) -> Checker:
    """A JSON array. When anything is wrong the result is a `PartialList` that keeps
    every item at its index (INVALID where an item failed), for cross-field checks."""

    def check(value: object, path: str, issues: Issues) -> object:
        if not isinstance(value, list | tuple):
            return _wrong_type("plan.t.array", value, path, issues)
        ok = lo <= len(value) and (hi is None or len(value) <= hi)
        if not ok:
            issues.add(path, msg("plan.count", lo=lo, hi=hi, n=len(value)))
        out: list[object] = []
        seen: set[str] = set()
        for i, raw in enumerate(value):
            got = item(raw, f"{path}[{i}]", issues)
            if not is_valid(got):
                ok = False
            elif unique and isinstance(got, str):
                if got in seen:
                    issues.add(f"{path}[{i}]", msg("plan.duplicate_item", value=quote(got)))
                    ok = False
                seen.add(got)
            out.append(got)
        return tuple(out) if ok else PartialList(out)

    return check


@attrs.frozen
class Field:
    name: str  # JSON spelling
    check: Checker
    required: bool = True


def obj(fields: Sequence[Field]) -> Checker:
    """A JSON object with exactly these fields (unknown keys are errors, Rule 3).
    Returns a dict of the present, valid fields (absent/null optionals omitted)."""
    by_name = {f.name: f for f in fields}

    def check(value: object, path: str, issues: Issues) -> object:
        if not isinstance(value, Mapping):
            return _wrong_type("plan.t.object", value, path, issues)
        ok = True
        for dup in value.duplicates if isinstance(value, JsonObject) else ():
            issues.add(key_path(path, dup), msg("plan.duplicate_key", name=quote(dup)))
            ok = False
        out: dict[str, object] = {}
        for f in fields:
            raw = value.get(f.name)
            if raw is None:
                if f.required:
                    key = "plan.null_required" if f.name in value else "plan.missing"
                    issues.add(key_path(path, f.name), msg(key))
                    ok = False
                continue
            got = f.check(raw, key_path(path, f.name), issues)
            if not is_valid(got):
                ok = False
            if got is not INVALID:
                out[f.name] = got
        for raw_key in value:
            if raw_key in by_name:
                continue
            key = raw_key if isinstance(raw_key, str) else repr(raw_key)
            ok = False
            hint = difflib.get_close_matches(key, list(by_name), n=1, cutoff=0.6)
            folded = [n for n in by_name if n.lower() == key.lower()]
            best = folded[0] if folded else (hint[0] if hint else None)
            if best is None:
                issues.add(key_path(path, key), msg("plan.unknown_field", name=quote(key)))
            else:
                issues.add(
                    key_path(path, key),
                    msg("plan.unknown_field_hint", name=quote(key), hint=quote(best)),
                )
        return out if ok else PartialDict(out)

    return check


class PartialDict(dict[str, object]):
    """The checked fields of an object that had errors (later checks still see them)."""


class PartialList(tuple[object, ...]):
    """The items of an array that had errors, by index (INVALID where an item failed)."""


def is_valid(value: object) -> bool:
    return value is not INVALID and not isinstance(value, PartialDict | PartialList)
