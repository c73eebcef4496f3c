# Owns: delivery handlers for the goal kinds (placeholder until its issue lands).
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markertools._deliver import Handler

HANDLERS: dict[str, Handler] = {}
