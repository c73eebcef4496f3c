# Owns: the in-memory AutomationStore port methods (docs/rules.md AUT, SCH), as a mixin of
# MemoryStore. Operates on `self._state` (MemoryState) under `self._state.lock`.
#
# Invariants:
#   Rule 1 (SCH-5): due_automations is exactly the rows with `_schedule.is_due`, by id.
#   Rule 2 (SCH-4): claim_automation applies `_schedule.apply_claim` under the state lock:
#           of concurrent claimers of one slot exactly one wins.
#   Rule 3 (AUT-3): insert_automation checks and inserts under the state lock: an active
#           automation whose (project, name) an active one already has raises
#           AutomationNameTaken and is not stored (the SQL adapters' partial unique index).
from __future__ import annotations

from collections.abc import Iterable

from markertools import Automation, AutomationNameTaken, InvalidArgument, apply_claim, is_due
from markertools_adapters.memory._state import MemoryState


def name_clash(automation: Automation, existing: Iterable[Automation]) -> bool:
    """Rule 3: `automation` is active and an active one of its project has its name."""
    return automation.status == "active" and any(
        other.status == "active"
        and other.project_id == automation.project_id
        and other.name == automation.name
        for other in existing
    )


class AutomationMixin:
    _state: MemoryState

    def get_automation(self, automation_id: str) -> Automation | None:
        with self._state.lock:
            return self._state.automations.get(automation_id)

    def active_automation_names(self, project_id: str) -> frozenset[str]:
        with self._state.lock:
            return frozenset(
                a.name
                for a in self._state.automations.values()
                if a.project_id == project_id and a.status == "active"
            )

    def insert_automation(self, automation: Automation) -> None:
        with self._state.lock:
            if automation.id in self._state.automations:
                raise InvalidArgument(f"automation id {automation.id!r} already exists")
            if name_clash(automation, self._state.automations.values()):
                raise AutomationNameTaken(automation.project_id, automation.name)
            self._state.automations[automation.id] = automation

    def due_automations(self, now: float) -> tuple[Automation, ...]:
        with self._state.lock:
            rows = list(self._state.automations.values())
        return tuple(sorted((a for a in rows if is_due(a, now)), key=lambda a: a.id))

    def claim_automation(self, automation_id: str, slot: float, now: float) -> bool:
        with self._state.lock:
            current = self._state.automations.get(automation_id)
            if current is None:
                return False
            claimed = apply_claim(current, slot, now)
            if claimed is None:
                return False
            self._state.automations[automation_id] = claimed
            return True
