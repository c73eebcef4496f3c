# Owns: the kind -> handler table delivery dispatches on (house rule 3: adding a kind is
# adding a row). Each `_exec_*` module exports `HANDLERS`; this module merges them and
# refuses a kind registered twice.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from markertools import (
    _exec_automations,
    _exec_files,
    _exec_goal,
    _exec_read,
    _exec_tasks,
    _exec_todos,
)

if TYPE_CHECKING:
    from markertools._deliver import Handler


def _merge() -> dict[str, Handler]:
    merged: dict[str, Handler] = {}
    for module in (
        _exec_tasks,
        _exec_read,
        _exec_goal,
        _exec_todos,
        _exec_automations,
        _exec_files,
    ):
        for kind, handler in module.HANDLERS.items():
            if kind in merged:
                raise RuntimeError(f"kind {kind!r} has two handlers")
            merged[kind] = handler
    return merged


HANDLERS: Final[Mapping[str, Handler]] = _merge()
