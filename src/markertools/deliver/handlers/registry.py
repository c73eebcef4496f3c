# Owns: the kind -> handler table delivery dispatches on (house rule 3: adding a kind is
# adding a row). Each handler module exports `HANDLERS`; this module merges them and
# refuses a kind registered twice.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from markertools.deliver.handlers import (
    automations,
    files,
    goal,
    read,
    tasks,
    todos,
)

if TYPE_CHECKING:
    from markertools.deliver.context import Handler


def _merge() -> dict[str, Handler]:
    merged: dict[str, Handler] = {}
    for module in (
        tasks,
        read,
        goal,
        todos,
        automations,
        files,
    ):
        for kind, handler in module.HANDLERS.items():
            if kind in merged:
                raise RuntimeError(f"kind {kind!r} has two handlers")
            merged[kind] = handler
    return merged


HANDLERS: Final[Mapping[str, Handler]] = _merge()
