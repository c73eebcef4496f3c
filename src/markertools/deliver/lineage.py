# Owns: lineage and generation decisions (docs/rules.md LIN) as pure functions over the parent
# walk a store returns (`TaskStore.lineage`: the task itself first, then each parent).
#
# Invariants:
#   Rule 1 (LIN-4): a target is in the sender's lineage when the sender appears at depth
#           1..32 of the target's walk. Cycles, missing rows and the bound all simply end
#           the walk: "not in lineage" (the same-creator path of a gate still applies).
#   Rule 2 (LIN-1): generation = number of parent steps up to the first task that has no
#           parent or is a coordinator subtask. A parent row that is missing counts as a
#           root (the child is one generation below it). A walk that reaches the bound
#           without finding a root (a cycle, or a chain deeper than the bound) yields the
#           bound itself, which is above every spawn limit: spawning fails closed.
from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from markertools.domain.model import LineageLink

LINEAGE_MAX_STEPS: Final[int] = 32
MAX_GENERATION: Final[int] = 3  # LIN-2: spawn only while generation < 3
MAX_DIRECT_CHILDREN: Final[int] = 20  # LIN-3


def in_lineage(
    links: Sequence[LineageLink], sender_id: str, max_steps: int = LINEAGE_MAX_STEPS
) -> bool:
    """LIN-4: the sender is reached from the target (links[0]) in 1..max_steps steps."""
    return any(link.id == sender_id for link in links[1 : max_steps + 1])


def generation(links: Sequence[LineageLink], bound: int = LINEAGE_MAX_STEPS) -> int:
    """LIN-1 over the sender's walk (links[0] is the sender), fetched with
    `max_steps=bound`. See Rule 2."""
    walk = links[: bound + 1]
    for depth, link in enumerate(walk):
        if link.coordinator_part or link.parent_task_id is None:
            return depth
        if depth + 1 == len(walk):
            # The walk ended on a task that has a parent: either the bound cut it
            # (a cycle or a very deep chain) or the parent row is missing (a root).
            return bound if len(walk) == bound + 1 else depth + 1
    return bound


def may_spawn(sender_generation: int) -> bool:
    """LIN-2: a sender may spawn only while its generation is below 3."""
    return sender_generation < MAX_GENERATION


def children_cap_reached(existing_children: int, created_this_turn: int) -> bool:
    """LIN-3: at most 20 direct children, counting those created earlier this turn."""
    return existing_children + created_this_turn >= MAX_DIRECT_CHILDREN
