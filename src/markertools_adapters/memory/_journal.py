# Owns: the in-memory DeliveryJournal (TRN-9): the applied blocks and finished reports
# of turns delivered with a turn id (one row per position), and `atomic()`, which runs a block's effect and
# its journal row under the state lock and puts every table back when it raises.
#
# Invariants:
#   Rule 1: inside `atomic()` either every change made through this store stays, or
#           (the block raised) none does.
#   Rule 2: `record_block` keeps the first value for a key (a second write for the same
#           key changes nothing).
from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Mapping

import attrs

from markertools_adapters.memory._state import MemoryState


class JournalMixin:
    _state: MemoryState

    def block_entries(self, sender: str, turn_id: str) -> Mapping[int, str]:
        with self._state.lock:
            return {
                pos: entry
                for (s, t, pos), entry in self._state.delivery_blocks.items()
                if s == sender and t == turn_id
            }

    def record_block(self, sender: str, turn_id: str, position: int, entry: str) -> None:
        with self._state.lock:
            self._state.delivery_blocks.setdefault((sender, turn_id, position), entry)

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        state = self._state
        with state.lock:
            saved = {
                f.name: copy.copy(getattr(state, f.name))
                for f in attrs.fields(MemoryState)
                if f.name != "lock"
            }
            try:
                yield
            except BaseException:
                for name, value in saved.items():
                    setattr(state, name, value)
                raise
