# Owns: the one message catalogue (INJ-6): every user-visible text keyed by id, with
# an `en` (default) and a `zh` template. The rows live in small per-area modules
# (`_messages_<area>.py`) so each area adds rows, not code paths; this module only
# merges them and refuses a key defined twice, at import time.
#
# Templates use str.format named fields; arguments are rendered by `_msg.render`.
from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from markertools import (
    _messages_attempts,
    _messages_automations,
    _messages_common,
    _messages_deliver,
    _messages_files,
    _messages_inject,
    _messages_parse,
    _messages_plans,
    _messages_read,
    _messages_tasks,
    _messages_todos,
)

_TABLES: Final[tuple[Mapping[str, Mapping[str, str]], ...]] = (
    _messages_common.MESSAGES,
    _messages_deliver.MESSAGES,
    _messages_parse.MESSAGES,
    _messages_tasks.MESSAGES,
    _messages_read.MESSAGES,
    _messages_todos.MESSAGES,
    _messages_automations.MESSAGES,
    _messages_files.MESSAGES,
    _messages_inject.MESSAGES,
    _messages_attempts.MESSAGES,
    _messages_plans.MESSAGES,
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
