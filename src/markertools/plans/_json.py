# Owns: strict JSON text loading for proposals and host settings (pure; text in, value
# out). RFC 8259 syntax with the marker rules' strictness carried as data:
#
#   Rule 1: syntax errors, `NaN`/`Infinity`/`-Infinity` and nesting too deep for the
#           parser raise `NotJson` (one line, with line/column) - never anything else.
#   Rule 2: an object with a repeated key loads as a `JsonObject` whose `duplicates`
#           names the repeated keys (the last value wins, like json.loads); the
#           validator reports them at the object's path.
#   Rule 3: a number that overflows to infinity (`1e400`) or an integer literal of more
#           than 30 digits loads as `BadNumber` (never as inf, never an unbounded int
#           conversion); the validator reports it at its path.
# It never reads files: adapters read bytes and hand over text.
from __future__ import annotations

import json
import math
from typing import Final

import attrs

from markertools.domain.errors import MarkertoolsError

MAX_INT_DIGITS: Final[int] = 30


class NotJson(MarkertoolsError, ValueError):
    """The text is not a JSON document (message is one line, with line/column)."""


class JsonObject(dict[str, object]):
    """A JSON object as a dict, remembering keys that appeared more than once."""

    duplicates: tuple[str, ...] = ()


@attrs.frozen
class BadNumber:
    """A number literal that cannot be represented faithfully."""

    text: str


def _pairs(pairs: list[tuple[str, object]]) -> JsonObject:
    obj = JsonObject()
    dups: list[str] = []
    for key, value in pairs:
        if key in obj and key not in dups:
            dups.append(key)
        obj[key] = value
    obj.duplicates = tuple(dups)
    return obj


def _bad(text: str) -> BadNumber:
    return BadNumber(text if len(text) <= 40 else text[:37] + "...")


def _int(text: str) -> int | BadNumber:
    digits = text.lstrip("-")
    if len(digits) > MAX_INT_DIGITS:
        return _bad(text)
    return int(text)


def _float(text: str) -> float | BadNumber:
    value = float(text)
    if math.isinf(value):
        return _bad(text)
    return value


def _constant(name: str) -> object:
    raise NotJson(f"{name} is not a JSON value")


def loads_strict(text: str) -> object:
    """Parse one JSON document; raises NotJson (only) when it is not JSON."""
    try:
        return json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_int=_int,
            parse_float=_float,
            parse_constant=_constant,
        )
    except NotJson:
        raise
    except json.JSONDecodeError as exc:
        raise NotJson(f"not JSON: {exc.msg} (line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise NotJson("not JSON this library accepts: nesting too deep") from None
    except ValueError as exc:  # e.g. an int conversion refused by the interpreter
        raise NotJson(f"not JSON: {' '.join(str(exc).split())}") from None
