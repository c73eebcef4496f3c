# Owns: the `World` value (every record of a markertools world, as in CLI.md's world
# file) and the `WorldStore` protocol storage adapters implement to be filled from a
# world and exported back to one (world load / dump, contract tests, the CLI).
#
# The world FILE format (JSON <-> World with cattrs, defaults, clear errors naming the
# bad field) is built on top of this by the delivery-core work.
from __future__ import annotations

from typing import Protocol

import attrs

from markertools._model import (
    Attempt,
    AuditRecord,
    Automation,
    CostRow,
    Followup,
    PermissionGrant,
    Project,
    Quota,
    Task,
    Todo,
)


@attrs.frozen
class World:
    now: float = 0.0
    projects: tuple[Project, ...] = ()
    permissions: tuple[PermissionGrant, ...] = ()
    tasks: tuple[Task, ...] = ()
    todos: tuple[Todo, ...] = ()
    automations: tuple[Automation, ...] = ()
    costs: tuple[CostRow, ...] = ()
    quotas: tuple[Quota, ...] = ()
    # additive (not in CLI.md's example; omitted lists are empty):
    attempts: tuple[Attempt, ...] = ()
    audit: tuple[AuditRecord, ...] = ()
    followups: tuple[Followup, ...] = ()


class WorldStore(Protocol):
    def load_world(self, world: World) -> None:
        """Insert every record of `world` into this (empty) store, in one transaction."""
        ...

    def export_world(self, now: float) -> World:
        """Every record, in a canonical order (ids ascending; audit and follow-ups in
        insertion order), so two adapters holding the same data export equal worlds."""
        ...
