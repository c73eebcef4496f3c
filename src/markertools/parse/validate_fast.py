# Owns: the happy path of body validation (speed only): a body whose fields are all
# written in their canonical spelling, each valid exactly as written, so that no rule
# changes anything and no note is due. Then the params are built directly from the
# kind table, without the bookkeeping `validate._validate_object` needs for reasons
# and notes. Everything else (an alias or unknown field, a missing required field, a
# wrong type or length, a value that would be clamped, folded with a note, dropped,
# read as milliseconds, a time string, a field only a post-rule reads) returns None,
# and the full validator decides.
#
# Must never: return params that differ from what `_validate_object` returns for the
# same body, return params when `_validate_object` would add a note or skip the block
# (a property test checks both on bodies drawn from every kind's schema), or raise.
#
# Invariants:
#   Rule 1: a field is checked only by the conditions below, each a sufficient
#           condition for the full validator to keep the value unchanged, without a
#           note (text: str, not blank when required, length in range; ref: non-blank
#           str; ref_list: non-empty list of distinct non-blank str, at most max_items;
#           enum: one of the choices (folds applied as the full path does); int: an
#           int (never bool, never float) inside clamp/bounds; epoch: int or float in
#           [0, 1e11); bool: a bool).
#   Rule 2: absent and null fields take the same defaults the full validator passes.
from __future__ import annotations

from typing import Any, Final

from markertools.domain.timeparse import MS_THRESHOLD
from markertools.parse.kindspec import FieldSpec, KindSpec, default_of, per_kind
from markertools.parse.params import Params

_TEXT, _REF, _REF_LIST, _ENUM, _INT, _EPOCH, _BOOL, _OTHER = range(8)
_CODES: Final[dict[str, int]] = {
    "text": _TEXT,
    "ref": _REF,
    "ref_list": _REF_LIST,
    "enum": _ENUM,
    "int": _INT,
    "epoch": _EPOCH,
    "bool": _BOOL,
}
# post-rules the happy path knows: fold_wait_seconds (POL-1) when wait_seconds is an
# int inside both clamps and neither field it overrides is written (no note is due);
# needs_update (TDU-1) when something besides `id` is given
_SIMPLE_RULES: Final[frozenset[str]] = frozenset({"fold_wait_seconds", "needs_update"})

# (name, code, required, param, nonblank, min_len, max_len, empty_is_absent,
#  choices, folds, low, high, max_items)
_Field = tuple[
    str, int, bool, bool, bool, int, int, bool, frozenset[str], dict[str, Any] | None, Any, Any, int
]


_WAIT_FOLDS: Final[tuple[str, str]] = ("interval_seconds", "timeout_seconds")


class _FastPlan:
    __slots__ = ("by_name", "defaults", "fold", "params", "required", "updatable")

    def __init__(self, kind: KindSpec) -> None:
        self.params = kind.params
        self.defaults = {f.name: default_of(kind, f) for f in kind.fields if f.param}
        # canonical name -> field facts: the loop visits only the fields a body writes
        self.by_name = {f.name: _field(f) for f in kind.fields}
        self.required = tuple(f.name for f in kind.fields if f.required)
        needs = "needs_update" in kind.post_rules
        self.updatable = tuple(f.name for f in kind.fields if f.name != "id") if needs else ()
        # the clamps wait_seconds must fit (POL-1), None when the kind has no such rule
        self.fold: tuple[int, int] | None = None
        if "fold_wait_seconds" in kind.post_rules:
            clamps = [kind.field(name).clamp for name in _WAIT_FOLDS]
            if None not in clamps:
                self.fold = (
                    max(c[0] for c in clamps if c is not None),
                    min(c[1] for c in clamps if c is not None),
                )


def _field(f: FieldSpec) -> _Field:
    low, high = f.clamp or f.bounds or (None, None)
    return (
        f.name,
        _CODES.get(f.kind, _OTHER),
        f.required,
        f.param,
        f.nonblank,
        f.min_len,
        f.max_len if f.max_len is not None else -1,
        f.empty_is_absent,
        frozenset(f.choices),
        dict(f.folds) if f.folds else None,
        low,
        high,
        f.max_items if f.max_items is not None else -1,
    )


@per_kind
def _plan(kind: KindSpec) -> _FastPlan | None:
    simple = not kind.ignore_all_fields and _SIMPLE_RULES.issuperset(kind.post_rules)
    return _FastPlan(kind) if simple else None


def fast_params(kind: KindSpec, body: dict[str, Any]) -> Params | None:
    """The params of `body` when it takes the happy path (Rules 1, 2), else None."""
    plan = _plan(kind)
    if plan is None:
        return None
    by_name = plan.by_name
    for name in plan.required:
        if body.get(name) is None:
            return None
    args = plan.defaults.copy()
    wait = None
    for key, v in body.items():
        spec = by_name.get(key)
        if spec is None:  # an alias or an unknown field: the full validator notes it
            return None
        if v is None:  # VAL-2: null = absent (the default stays)
            continue
        (
            name,
            code,
            _required,
            param,
            nonblank,
            lo,
            hi,
            empty_none,
            choices,
            folds,
            low,
            high,
            most,
        ) = spec
        if not param:
            if name != "wait_seconds" or plan.fold is None or v.__class__ is not int:
                return None
            wait = v  # POL-1, folded below
            continue
        if code == _TEXT:
            if v.__class__ is not str:
                return None
            if not v and empty_none:
                v = None
            elif (nonblank and (not v or v.isspace())) or len(v) < lo or (hi >= 0 and len(v) > hi):
                return None
        elif code == _ENUM:
            if v.__class__ is not str or v not in choices:
                return None
            if folds is not None:
                v = folds.get(v, v)
        elif code == _REF:
            if v.__class__ is not str or not v or v.isspace():
                return None
        elif code == _INT:
            if v.__class__ is not int or (low is not None and not low <= v <= high):
                return None
        elif code == _REF_LIST:
            if v.__class__ is not list or not v or (most >= 0 and len(v) > most):
                return None
            for item in v:
                if item.__class__ is not str or not item or item.isspace():
                    return None
            if len(set(v)) != len(v):
                return None
            v = tuple(v)
        elif code == _EPOCH:
            if (v.__class__ is not int and v.__class__ is not float) or not 0 <= v < MS_THRESHOLD:
                return None
            v = float(v)
        elif code == _BOOL:
            if v.__class__ is not bool:
                return None
        else:
            return None
        args[name] = v
    if wait is not None:
        assert plan.fold is not None
        if not plan.fold[0] <= wait <= plan.fold[1] or any(
            body.get(name) is not None for name in _WAIT_FOLDS
        ):
            return None  # a clamp or an override: the full validator notes it
        for name in _WAIT_FOLDS:
            args[name] = wait
    if plan.updatable and all(args.get(name) is None for name in plan.updatable):
        return None  # TDU-1: nothing to update (the full validator says so)
    params: Params = plan.params(**args)
    return params
