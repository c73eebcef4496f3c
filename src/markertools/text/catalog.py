# Owns: the one message catalogue (INJ-6): every user-visible text keyed by id, with
# an `en` (default) and a `zh` template. The rows live in small per-area modules
# (`messages_<area>.py`) so each area adds rows, not code paths; this module only
# merges them and refuses a key defined twice, at import time.
#
# Templates use str.format named fields; arguments are rendered by `msg.render`.
from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from markertools.text import (
    messages_approvals,
    messages_attempts,
    messages_automations,
    messages_common,
    messages_deliver,
    messages_dots,
    messages_files,
    messages_inject,
    messages_parse,
    messages_plans,
    messages_read,
    messages_schedule,
    messages_tasks,
    messages_todos,
    messages_tools,
    messages_toolserver,
    messages_worker,
)

_TABLES: Final[tuple[Mapping[str, Mapping[str, str]], ...]] = (
    messages_common.MESSAGES,
    messages_deliver.MESSAGES,
    messages_parse.MESSAGES,
    messages_tasks.MESSAGES,
    messages_read.MESSAGES,
    messages_todos.MESSAGES,
    messages_automations.MESSAGES,
    messages_files.MESSAGES,
    messages_inject.MESSAGES,
    messages_attempts.MESSAGES,
    messages_plans.MESSAGES,
    messages_dots.MESSAGES,
    messages_tools.MESSAGES,
    messages_toolserver.MESSAGES,
    messages_schedule.MESSAGES,
    messages_worker.MESSAGES,
    messages_approvals.MESSAGES,
)


def _merge() -> dict[str, dict[str, str]]:
    merged: dict[str, dict[str, str]] = {}
    for table in _TABLES:
        for key, entry in table.items():
            if key in merged:
                raise RuntimeError(f"message key {key!r} defined twice")
            merged[key] = dict(entry)
    return merged


CATALOG: Final[dict[str, dict[str, str]]] = _merge()
