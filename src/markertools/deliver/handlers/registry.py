# Owns: the params class -> handler table delivery dispatches on, as the plans core keys
# its handlers by event type. Each handler module exports `HANDLERS` (a `HandlerTable`
# made with `handler_table`); this module merges them, refusing a params class that
# two modules register, and `handler_for` finds the handler of a command. Adding a
# kind is adding a row to the kind table and one `Handler(ItsParams, its_function)`.
#
# Must never: know a kind by its name (the kind table maps a kind to its params class),
# or import the delivery loop.
#
# Invariants:
#   Rule 1: one handler per params class, over all handler modules (checked at import).
#   Rule 2: `handler_for(cmd)` returns a handler only when `cmd`'s params are of the
#           class its kind's row names; anything else has no handler ("this build cannot
#           execute ... blocks", TRN-8), never a handler of another kind.
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from markertools.deliver.context import Handler, HandlerTable
from markertools.deliver.handlers import (
    approvals,
    automations,
    files,
    goal,
    read,
    tasks,
    todos,
)
from markertools.parse.kinds import kind_of
from markertools.parse.params import Params
from markertools.parse.plan import Command


def merge(tables: Iterable[HandlerTable]) -> HandlerTable:
    """Rule 1: one table of every handler; a params class in two tables raises
    RuntimeError naming it."""
    merged: dict[type[Params], Handler[Any]] = {}
    for table in tables:
        for params, handler in table.items():
            if params in merged:
                raise RuntimeError(f"{params.__name__} has two handlers")
            merged[params] = handler
    return merged


HANDLERS: Final[HandlerTable] = merge(
    module.HANDLERS for module in (tasks, read, goal, todos, automations, files, approvals)
)


def handler_for(cmd: Command) -> Handler[Any] | None:
    """Rule 2: the handler of `cmd`'s params class when that is its kind's params class;
    None when this build has none for it (or the command pairs a kind with another
    kind's params: a plan built by hand)."""
    handler = HANDLERS.get(type(cmd.params))
    spec = kind_of(cmd.kind)
    if handler is None or spec is None or spec.params is not handler.params:
        return None
    return handler
