# Owns: strict JSON for block bodies (VAL-1): one JSON object per RFC 8259, or a
# precise reason why not. Refused: text that is not JSON (with line and column),
# a value that is not an object, NaN/Infinity, number literals that overflow to
# infinity (1e400), integer literals of more than 30 digits, duplicate keys at any
# depth, nesting deeper than 32, bodies longer than 262,144 characters, and strings
# holding unpaired surrogates (not valid Unicode, unstorable).
#
# Must never: raise on any `str`, recurse without a bound, or convert an integer
# literal of thousands of digits (Python's int-from-str limit would raise).
#
# Invariants:
#   Rule 1: size and depth are checked before `json.loads` runs, so the decoder never
#           meets input it could choke on (RecursionError, huge ints).
#   Rule 2: the result is plain Python data (dict, list, str, int, float, bool, None)
#           whose floats are all finite.
from __future__ import annotations

import json
import re
from array import array
from collections.abc import Callable
from itertools import accumulate
from typing import Any, Final

import attrs

from markertools.text.inline import shown
from markertools.text.msg import Msg, msg

MAX_BODY_CHARS: Final[int] = 262_144
MAX_DEPTH: Final[int] = 32
MAX_INT_DIGITS: Final[int] = 30

# Strings (closed or running to the end of the text) and brackets, for the depth scan.
_DEPTH_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*(?:"|\Z)|[\[\]{}]', re.S)
_SURROGATE = re.compile("[\ud800-\udfff]")


@attrs.frozen
class JsonRefusal:
    reason: Msg


class _Refuse(Exception):
    def __init__(self, reason: Msg) -> None:
        super().__init__(reason.key)
        self.reason = reason


def _literal(text: str) -> str:
    return shown(text if len(text) <= 40 else text[:20] + "…" + text[-10:])


def _parse_int(text: str) -> int:
    digits = len(text) - (1 if text.startswith("-") else 0)
    if digits > MAX_INT_DIGITS:
        raise _Refuse(msg("parse.json.long_int", literal=_literal(text), digits=digits))
    return int(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _Refuse(msg("parse.json.overflow", literal=_literal(text)))
    return value


def _parse_constant(text: str) -> Any:
    raise _Refuse(msg("parse.json.nonfinite", literal=text))


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):  # a duplicate: name the first one, in document order
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refuse(msg("parse.json.duplicate_key", key=_literal(key)))
            seen.add(key)
    return result


_DECODER: Final = json.JSONDecoder(
    object_pairs_hook=_pairs,
    parse_int=_parse_int,
    parse_float=_parse_float,
    parse_constant=_parse_constant,
)
# the C scanner behind `decode` (hooks included), called without decode's two frames
_SCAN_ONCE: Final[Callable[[str, int], tuple[Any, int]]] = _DECODER.scan_once  # type: ignore[attr-defined]
# The same decoder without the number hooks (a Python call per number): used when no
# number literal can need them - no run of 31+ digits (an integer of more than 30
# digits, or a float mantissa that long) and no exponent of 3+ digits (the only ways a
# float literal overflows to infinity). Strings may trip the check too: then the
# hooked decoder runs, which is always exact.
_PLAIN_DECODER: Final = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_parse_constant)
_PLAIN_SCAN: Final[Callable[[str, int], tuple[Any, int]]] = _PLAIN_DECODER.scan_once  # type: ignore[attr-defined]
_LONG_DIGITS = re.compile(r"[0-9]{31}")
_LONG_EXPONENT = re.compile(r"[eE][+-]?[0-9]{3}")
_DENSE: Final[int] = 64  # at least one "," per 64 characters
_STEPS: Final = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # as int8: +1 / -1
_NOT_BRACKETS: Final = bytes(c for c in range(256) if c not in b"[{]}")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_JSON_WS: Final = " \t\n\r"


def too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether arrays/objects nest deeper than `limit` (brackets inside strings ignored)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    # C-speed first: with the strings removed (all closed: no quote left), the brackets
    # alone become steps of +1 / -1 whose running sum is the depth, as long as it never
    # drops below zero (the exact scan below clamps at zero, so a stray closer, like an
    # unclosed string, leaves the decision to it). Linear: a few C passes, no Python
    # step per bracket.
    reduced = _STRING.sub("", text)
    if '"' not in reduced:
        # (no ASCII byte occurs inside a UTF-8 sequence, so deleting every other byte
        # leaves exactly the brackets; "surrogatepass" takes lone surrogates along)
        raw = reduced.encode("utf-8", "surrogatepass")
        depths = list(accumulate(array("b", raw.translate(_STEPS, _NOT_BRACKETS))))
        if min(depths, default=0) >= 0:
            return max(depths, default=0) > limit
    depth = 0
    for match in _DEPTH_TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return True
        elif token in "]}":
            depth = max(depth - 1, 0)
    return False


def _type_name(value: object) -> Msg:
    if isinstance(value, list):
        return msg("parse.type.list")
    if isinstance(value, str):
        return msg("parse.type.string")
    if isinstance(value, bool):
        return msg("parse.type.bool")
    if value is None:
        return msg("parse.type.null")
    return msg("parse.type.number")


def _first_surrogate(value: object, depth: int = 0) -> str | None:
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        return found.group() if found else None
    if isinstance(value, dict):
        for key, item in value.items():
            hit = _first_surrogate(key, depth) or _first_surrogate(item, depth + 1)
            if hit:
                return hit
    elif isinstance(value, list) and depth <= MAX_DEPTH:
        for item in value:
            hit = _first_surrogate(item, depth + 1)
            if hit:
                return hit
    return None


def loads_object(body: str) -> dict[str, Any] | JsonRefusal:
    """The body as a JSON object, or the precise reason it is refused (never raises)."""
    if len(body) > MAX_BODY_CHARS:
        return JsonRefusal(msg("parse.json.too_long", length=len(body), max=MAX_BODY_CHARS))
    if body.count("[") + body.count("{") > MAX_DEPTH and too_deep(body):
        return JsonRefusal(msg("parse.json.too_deep", max=MAX_DEPTH))  # (never blank)
    try:
        # `_DECODER.decode` without its two Python frames; on any error it runs to
        # raise exactly the error json would
        try:
            scan = _SCAN_ONCE
            # the two searches cost a few ns per character, a hook call ~0.1 us per
            # number: worth it only for dense data (many values per byte)
            if body.count(",") * _DENSE > len(body) and not (
                _LONG_DIGITS.search(body) or _LONG_EXPONENT.search(body)
            ):
                scan = _PLAIN_SCAN
            value, end = scan(body, len(body) - len(body.lstrip(_JSON_WS)))
        except StopIteration:
            value, end = _DECODER.decode(body), len(body)
        if end != len(body) and body[end:].strip(_JSON_WS):
            _DECODER.decode(body)  # raises "Extra data"
    except _Refuse as refused:
        return JsonRefusal(refused.reason)
    except json.JSONDecodeError as exc:
        if not body.strip(" \t\r\n"):
            return JsonRefusal(msg("parse.json.empty"))
        return JsonRefusal(
            msg(
                "parse.json.syntax",
                # json says "Invalid control character at"; the template adds " at line ..."
                detail=exc.msg.removesuffix(" at"),
                line=exc.lineno,
                column=exc.colno,
            )
        )
    except (ValueError, RecursionError, MemoryError) as exc:  # defensive: Rule 1
        return JsonRefusal(msg("parse.json.syntax", detail=type(exc).__name__, line=1, column=1))
    if type(value) is not dict:
        return JsonRefusal(msg("parse.json.not_object", got=_type_name(value)))
    # str.isascii() is O(1): an ASCII body without "\u" escapes holds no surrogate
    if "\\u" in body or (not body.isascii() and _SURROGATE.search(body)):
        bad = _first_surrogate(value)
        if bad is not None:
            return JsonRefusal(msg("parse.json.surrogate", code=f"{ord(bad):04X}"))
    return value
