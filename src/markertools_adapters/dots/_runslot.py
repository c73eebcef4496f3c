# Owns: `RunSlot`, one run as the supervisor drives it (its journal, its workers and
# what the host is doing for it now), and `new_id`, the ids of the events the host makes.
# Shared by the core, the launcher and the calls; imports none of them.
from __future__ import annotations

import uuid

import attrs

from markertools.plans import RunState
from markertools_adapters.dots._worker import CodexWorker
from markertools_adapters.planstore import RunJournal


def new_id() -> str:
    return uuid.uuid4().hex


@attrs.define
class RunSlot:
    """One run the supervisor drives: its journal and what the host does for it now."""

    journal: RunJournal
    workers: dict[str, CodexWorker] = attrs.Factory(dict)
    launching: set[str] = attrs.Factory(set)
    notifying: set[str] = attrs.Factory(set)
    timing_out: set[str] = attrs.Factory(set)
    last_quota_poll: float = 0.0
    ending: bool = False  # `end_workers` is running for it
    faulted: set[str] = attrs.Factory(set)  # background paths that failed (not retried)

    @property
    def state(self) -> RunState:
        return self.journal.state

    @property
    def run_id(self) -> str:
        return self.journal.state.run_id
