# Owns: the in-memory automations port methods, as a mixin of MemoryStore (placeholder until
# its issue lands). Operates on `self._state` (MemoryState) under `self._state.lock`.
from __future__ import annotations

from markertools_adapters.memory._state import MemoryState


class AutomationMixin:
    _state: MemoryState
