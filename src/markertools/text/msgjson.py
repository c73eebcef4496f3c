# Owns: `Msg` values as JSON-ready data and back ({"key", "args"}; a tuple argument as
# {"tuple": [...]}), so a stored report re-renders in any locale. Pure.
#
# Invariants:
#   Rule 1: msg_from_json(msg_to_json(m)) == m for every Msg.
#   Rule 2: msg_from_json raises ValueError (only) for anything that is not such data.
from __future__ import annotations

from typing import Any

from markertools._root import InvalidArgument
from markertools.text.msg import Msg, MsgArg


def _arg_out(value: MsgArg) -> Any:
    if isinstance(value, Msg):
        return msg_to_json(value)
    if isinstance(value, tuple):
        return {"tuple": [_arg_out(v) for v in value]}
    return value


def _arg_in(value: Any) -> MsgArg:
    if isinstance(value, dict) and "key" in value:
        return msg_from_json(value)
    if isinstance(value, dict) and isinstance(value.get("tuple"), list):
        return tuple(_arg_in(v) for v in value["tuple"])
    if value is None or (isinstance(value, str | int | float) and not isinstance(value, bool)):
        return value
    raise InvalidArgument(f"not a message argument: {type(value).__name__}")


def msg_to_json(message: Msg) -> dict[str, Any]:
    return {"key": message.key, "args": {k: _arg_out(v) for k, v in message.args}}


def msg_from_json(value: Any) -> Msg:
    if not isinstance(value, dict) or not isinstance(value.get("key"), str):
        raise InvalidArgument("a message needs a string 'key'")
    args = value.get("args") or {}
    if not isinstance(args, dict):
        raise InvalidArgument("a message's 'args' must be an object")
    return Msg(value["key"], tuple((str(k), _arg_in(v)) for k, v in args.items()))
