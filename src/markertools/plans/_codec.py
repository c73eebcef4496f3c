# Owns: the one cattrs converter of the plans area: validated proposal dicts ->
# frozen records, and run records / events <-> JSON-ready values (the store's
# `run-<id>.json` and `run-<id>.jsonl`). Pure: values in, values out.
#
# Invariants:
#   Rule 1: JSON field names are camelCase for every record (the seed's spelling);
#           python attributes stay snake_case.
#   Rule 2: structure(unstructure(x)) == x for every record and event.
#   Rule 3: events carry a kebab-case `type` tag (`turn-ended`, ...).
#   Rule 4: `Msg` values are stored as {"key", "args"}; nested messages round-trip.
from __future__ import annotations

import re
from typing import Any, Final, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.strategies import configure_tagged_union

from markertools._root import InvalidArgument
from markertools.plans._events import Event
from markertools.plans._model import HostSettings, Proposal
from markertools.plans._state import RunState
from markertools.text.msg import Msg, MsgArg

T = TypeVar("T")


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _kebab(cls: type) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", cls.__name__).lower()


def _msg_arg_out(value: MsgArg) -> Any:
    if isinstance(value, Msg):
        return _msg_out(value)
    if isinstance(value, tuple):
        return {"tuple": [_msg_arg_out(v) for v in value]}
    return value


def _msg_arg_in(value: Any) -> MsgArg:
    if isinstance(value, dict) and "key" in value:
        return _msg_in(value)
    if isinstance(value, dict) and "tuple" in value:
        return tuple(_msg_arg_in(v) for v in value["tuple"])
    if value is None or isinstance(value, str | int | float):
        return value
    raise InvalidArgument(f"not a message argument: {value!r}")


def _msg_out(m: Msg) -> dict[str, Any]:
    return {"key": m.key, "args": {k: _msg_arg_out(v) for k, v in m.args}}


def _msg_in(value: Any, _: Any = None) -> Msg:
    if not isinstance(value, dict) or not isinstance(value.get("key"), str):
        raise InvalidArgument("a message needs a string 'key'")
    args = value.get("args") or {}
    return Msg(value["key"], tuple((str(k), _msg_arg_in(v)) for k, v in args.items()))


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)
    conv.register_unstructure_hook(Msg, _msg_out)
    conv.register_structure_hook(Msg, _msg_in)

    def camel_case(make: Any) -> Any:
        """A hook factory building `make`'s function with camelCase keys (Rule 1)."""

        def factory(cls: Any) -> Any:
            renames = {a.name: override(rename=camel(a.name)) for a in attrs.fields(cls)}
            return make(cls, conv, **renames)

        return factory

    is_ours = lambda cls: attrs.has(cls) and cls is not Msg  # noqa: E731
    conv.register_structure_hook_factory(is_ours, camel_case(make_dict_structure_fn))
    conv.register_unstructure_hook_factory(is_ours, camel_case(make_dict_unstructure_fn))
    configure_tagged_union(Event, conv, tag_generator=_kebab, tag_name="type")
    return conv


CONVERTER: Final[cattrs.Converter] = _make_converter()


def structure_proposal(fields: dict[str, object]) -> Proposal:
    """Build a Proposal from validated, normalised fields (`_proposal.py` only)."""
    return CONVERTER.structure(fields, Proposal)


def structure_host(fields: dict[str, object]) -> HostSettings:
    return CONVERTER.structure(fields, HostSettings)


def proposal_to_json(proposal: Proposal) -> dict[str, Any]:
    """The JSON form of a validated proposal (camelCase keys, as read)."""
    out: dict[str, Any] = CONVERTER.unstructure(proposal)
    return out


def run_to_json(state: RunState) -> dict[str, Any]:
    """The JSON form of a run state (what the plan store writes)."""
    out: dict[str, Any] = CONVERTER.unstructure(state)
    return out


def run_from_json(value: Any) -> RunState:
    """Raises cattrs errors (a ClassValidationError tree) for a malformed record."""
    return CONVERTER.structure(value, RunState)


def event_to_json(event: Event) -> dict[str, Any]:
    """The JSON form of an event, tagged with its type."""
    out: dict[str, Any] = CONVERTER.unstructure(event, Event)
    return out


def event_from_json(value: Any) -> Event:
    """The event `event_to_json` wrote.

    Raises:
        cattrs' ClassValidationError (a ValueError): `value` is not such an event.
    """
    result: Event = CONVERTER.structure(value, Event)  # type: ignore[arg-type]
    return result
