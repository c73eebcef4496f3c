# Owns: JSON Schemas (draft 2020-12) of each kind's block body (`markertools schema`),
# generated from the kind table. A body valid against its schema, and within the
# strict-JSON rules every body obeys (VAL-1: no duplicate keys, no NaN/Infinity,
# integer literals of at most 30 digits, at most 32 levels deep, at most 262,144
# characters), always parses into a command.
#
# Must never: accept a value the parser refuses (the schema may be stricter: it asks
# for exactly one spelling of an aliased field, no 29 February, years from 1000),
# or do I/O.
#
# Invariants:
#   Rule 1: every property a kind reads is described, with its aliases; unknown
#           properties are allowed (VAL-6); optional properties accept null (VAL-2).
#   Rule 2: descriptions come from the same catalogue rows as the guide (English).
from __future__ import annotations

from typing import Any, Final

from markertools.domain.timeparse import MS_THRESHOLD
from markertools.parse.guide import resolve_kinds
from markertools.parse.jsonstrict import MAX_BODY_CHARS, MAX_DEPTH, MAX_INT_DIGITS
from markertools.parse.kinds import KINDS, KindSpec
from markertools.parse.kindspec import FieldSpec, default_of, expected
from markertools.parse.validate import EPOCH_MAX, EPOCH_MIN
from markertools.text.msg import msg

SCHEMA_DIALECT: Final[str] = "https://json-schema.org/draft/2020-12/schema"
_NONBLANK: Final[str] = r"\S"
_INT_LIMIT: Final[int] = 10**MAX_INT_DIGITS - 1
_ISO_PATTERN: Final[str] = (
    r"^[1-9][0-9]{3}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    r"|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))"
    r"(?:[T ](?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]{1,9})?)?"
    r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?)?$"
)


def _nullable(schema: dict[str, Any], field: FieldSpec) -> dict[str, Any]:
    if field.required or field.kind == "forbidden":
        return schema
    if "enum" in schema:
        return {**schema, "enum": [*schema["enum"], None]}
    if "type" in schema:
        return {**schema, "type": [schema["type"], "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def _value_schema(field: FieldSpec) -> dict[str, Any]:
    k = field.kind
    if k == "text":
        text: dict[str, Any] = {"type": "string"}
        if field.min_len:
            text["minLength"] = field.min_len
        if field.max_len is not None:
            text["maxLength"] = field.max_len
        if field.nonblank:
            text["pattern"] = _NONBLANK
        return text
    if k == "ref":
        return {"type": "string", "pattern": _NONBLANK}
    if k == "ref_list":
        item = {"type": "string", "pattern": _NONBLANK}
        return {"type": "array", "minItems": 1, "items": item}
    if k == "enum":
        return {"enum": list(field.choices)}
    if k == "int":
        low, high = field.bounds if field.bounds is not None else (-_INT_LIMIT, _INT_LIMIT)
        return {"type": "integer", "minimum": low, "maximum": high}
    if k == "epoch":
        return {"type": "number", "minimum": 0, "maximum": EPOCH_MAX * 1000}
    if k == "time":
        number = {"type": "number", "minimum": EPOCH_MIN, "maximum": EPOCH_MAX * 1000}
        return {"anyOf": [number, {"type": "string", "pattern": _ISO_PATTERN}]}
    if k == "bool":
        return {"type": "boolean"}
    return {"type": "null"}


def _description(kind: KindSpec, field: FieldSpec) -> str:
    parts = [msg(field.doc).render("en"), "Accepts " + expected(field).render("en")]
    default = default_of(kind, field)
    if not field.required and default not in (None, ()):
        parts.append(f"Default {default!r}")
    if field.clamp is not None:
        parts.append(f"Clamped to {field.clamp[0]}..{field.clamp[1]}")
    if field.kind in ("epoch", "time"):
        parts.append(f"Numbers >= {MS_THRESHOLD:.0e} are milliseconds")
    return ". ".join(parts) + "."


def _field_properties(kind: KindSpec, field: FieldSpec) -> dict[str, Any]:
    schema = _nullable(_value_schema(field), field)
    out = {field.name: {**schema, "description": _description(kind, field)}}
    for alias in field.aliases:
        out[alias] = {**schema, "description": f"Alias of '{field.name}' (give only one)."}
    return out


def body_schema(kind_name: str) -> dict[str, Any]:
    """The JSON Schema of one kind's body (a kind name or an alias)."""
    (kind,) = resolve_kinds([kind_name])
    properties: dict[str, Any] = {}
    constraints: list[dict[str, Any]] = []
    for field in kind.fields:
        properties.update(_field_properties(kind, field))
        if field.required and not field.aliases:
            constraints.append({"required": [field.name]})
        elif field.required:
            constraints.append({"oneOf": [{"required": [s]} for s in field.spellings]})
    if "needs_update" in kind.post_rules:
        updatable = [f.name for f in kind.fields if f.name != "id"]
        constraints.append(
            {
                "anyOf": [
                    {"required": [name], "properties": {name: {"not": {"type": "null"}}}}
                    for name in updatable
                ]
            }
        )
    schema: dict[str, Any] = {
        "$schema": SCHEMA_DIALECT,
        "title": f"{kind.name} marker block body",
        "description": (
            f"{msg(kind.summary).render('en')}. At most {kind.cap} per turn. "
            f"Strict JSON: one object, no duplicate keys, no NaN/Infinity, integers of at "
            f"most {MAX_INT_DIGITS} digits, at most {MAX_DEPTH} levels deep, at most "
            f"{MAX_BODY_CHARS} characters. null means absent; unknown fields are ignored."
        ),
        "type": "object",
        "properties": properties,
        "additionalProperties": True,
        "x-markertools": {"kind": kind.name, "aliases": list(kind.aliases), "cap": kind.cap},
    }
    if kind.ignore_all_fields:
        schema["description"] += " Every field is ignored (and reported as ignored)."
    if constraints:
        schema["allOf"] = constraints
    return schema


def body_schemas() -> dict[str, dict[str, Any]]:
    """Every kind's body schema, keyed by canonical kind name, in execution order."""
    return {kind.name: body_schema(kind.name) for kind in KINDS}
