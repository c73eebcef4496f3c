# Owns: parse_turn (TRN-2) — placeholder until the parse layer (issue 2) lands.
from __future__ import annotations

from markertools._plan import TurnPlan


def parse_turn(text: str) -> TurnPlan:
    raise NotImplementedError("the parse layer is not built yet")
