# Owns: every gate decision of the task kinds as PURE functions over facts delivery has
# already gathered (GAT-3): the control gate of task-cancel / task-retry (GAT-1, GAT-2),
# the permission gate every other permission use goes through (GAT-4), the read-target
# gate (POL-2, WAI-3), the task-cost gate (CST-1), the create gate (CRE-3, LIN-2, LIN-3)
# and the choice of whose quota quota-status reports (QUO-1).
# Never calls a port, never reads a clock, never raises for any input.
#
# Invariants:
#   Rule 1: the control gate checks in GAT-1's order; the first failure wins.
#   Rule 2: a failed permission lookup never grants: the control gate narrows to lineage
#           only (GAT-2) and every other gate denies (GAT-4, fail closed).
#   Rule 3: "same creator" is only ever `model.same_creator` (DOM-3: never on nulls).
#   Rule 4: a permission answer for another permission than the one required denies.
from __future__ import annotations

from typing import Final, Literal

from markertools.deliver.lineage import (
    MAX_DIRECT_CHILDREN,
    MAX_GENERATION,
    children_cap_reached,
    may_spawn,
)
from markertools.deliver.render import shown
from markertools.domain.decision import Allowed, Decision, Denied, PermissionAnswer
from markertools.domain.model import (
    RETRYABLE_STATUSES,
    Task,
    is_goal_task,
    is_terminal,
    same_creator,
)
from markertools.text.msg import Msg, msg

ControlAction = Literal["cancel", "retry"]
ReadAction = Literal["poll", "wait", "cost"]

# GAT-1 (7): the permission each control action needs (DOM-6).
CONTROL_PERMISSION: Final[dict[str, str]] = {"cancel": "create_task", "retry": "approve_merge"}


def verb(action: str) -> Msg:
    return msg(f"tasks.verb_{action}")


def permission_gate(answer: PermissionAnswer, sender: Task, needed: str) -> Decision:
    """GAT-4: granted -> Allowed; not granted -> Denied; lookup failed -> Denied (fail closed)."""
    if answer.permission != needed:
        return Denied(msg("tasks.gate_wrong_answer", needed=needed, got=answer.permission))
    if answer.failed:
        return Denied(
            msg(
                "tasks.gate_lookup_failed", permission=needed, error=answer.error or "unknown error"
            )
        )
    if not answer.granted:
        return Denied(
            msg(
                "tasks.gate_lacks",
                user=shown(sender.created_by),
                permission=needed,
                project=shown(sender.project_id),
            )
        )
    return Allowed()


def control_gate(
    action: ControlAction,
    sender: Task,
    target: Task | None,
    *,
    target_id: str,
    in_lineage: bool,
    permission: PermissionAnswer,
) -> Decision:
    """GAT-1 in order, with GAT-2 when the permission lookup failed. `in_lineage` is the
    LIN-4 fact for (sender, target); `permission` the answer for CONTROL_PERMISSION[action]."""
    # (1) target exists, (2) same project, (3) not the sender
    basics = _target_basics(sender, target, target_id, action)
    if basics is not None:
        return basics
    assert target is not None  # (a missing target is denied by _target_basics)
    # (4) not a goal task
    if is_goal_task(target):
        return Denied(msg("tasks.gate_goal", id=shown(target.id), verb=verb(action)))
    # (5) status
    if action == "cancel" and is_terminal(target.status):
        return Denied(msg("tasks.gate_cancel_terminal", id=shown(target.id), status=target.status))
    if action == "retry" and target.status not in RETRYABLE_STATUSES:
        return Denied(msg("tasks.gate_retry_status", id=shown(target.id), status=target.status))
    # (6) lineage or same creator
    creator = same_creator(sender, target)
    if not in_lineage and not creator:
        return Denied(msg("tasks.gate_unrelated", id=shown(target.id), verb=verb(action)))
    # (7) permission: GAT-2 narrowing on a failed lookup, else GAT-4 (Rule 4 there too)
    needed = CONTROL_PERMISSION[action]
    if permission.permission == needed and permission.failed:
        error = permission.error or "unknown error"
        if in_lineage:
            return Allowed(msg("tasks.gate_lineage_only_allowed", permission=needed, error=error))
        return Denied(
            msg(
                "tasks.gate_lineage_only_denied",
                permission=needed,
                error=error,
                id=shown(target.id),
                verb=verb(action),
            )
        )
    return permission_gate(permission, sender, needed)


def read_target_gate(
    sender: Task, target: Task | None, target_id: str, action: ReadAction
) -> Decision:
    """POL-2 / WAI-3: the target exists, is in the sender's project and is not the sender."""
    return _target_basics(sender, target, target_id, action) or Allowed()


def _target_basics(
    sender: Task, target: Task | None, target_id: str, action: ControlAction | ReadAction
) -> Denied | None:
    """The first three checks every targeted gate makes, in order (GAT-1 (1)-(3), POL-2):
    the target exists, is in the sender's project and is not the sender."""
    if target is None:
        return Denied(msg("tasks.gate_missing", id=shown(target_id)))
    if target.project_id != sender.project_id:
        return Denied(msg("tasks.gate_other_project", id=shown(target.id)))
    if target.id == sender.id:
        return Denied(msg("tasks.gate_self", verb=verb(action)))
    return None


def cost_gate(
    sender: Task,
    target: Task | None,
    *,
    target_id: str,
    in_lineage: bool,
    permission: PermissionAnswer,
) -> Decision:
    """CST-1: `read`; the target in the sender's project and (the sender itself, in its
    lineage, or the same creator)."""
    granted = permission_gate(permission, sender, "read")
    if isinstance(granted, Denied):
        return granted
    if target is None:
        return Denied(msg("tasks.gate_missing", id=shown(target_id)))
    if target.project_id != sender.project_id:
        return Denied(msg("tasks.gate_other_project", id=shown(target.id)))
    if target.id != sender.id and not in_lineage and not same_creator(sender, target):
        return Denied(msg("tasks.gate_unrelated", id=shown(target.id), verb=verb("cost")))
    return Allowed()


def create_gate(
    sender: Task,
    permission: PermissionAnswer,
    *,
    quota_exhausted: bool,
    generation: int,
    existing_children: int,
    created_this_turn: int,
) -> Decision:
    """CRE-3: `create_task` (a failed lookup counts as lacking), the creator's quota (read
    once per turn), the generation limit (LIN-2), the direct-children cap (LIN-3)."""
    granted = permission_gate(permission, sender, "create_task")
    if isinstance(granted, Denied):
        return granted
    if quota_exhausted:
        return Denied(msg("tasks.gate_quota", user=shown(sender.created_by)))
    if not may_spawn(generation):
        return Denied(msg("tasks.gate_generation", generation=generation, limit=MAX_GENERATION))
    if children_cap_reached(existing_children, created_this_turn):
        return Denied(
            msg(
                "tasks.gate_children",
                existing=existing_children,
                this_turn=created_this_turn,
                cap=MAX_DIRECT_CHILDREN,
            )
        )
    return Allowed()


def quota_user(sender: Task, parent: Task | None) -> str | None:
    """QUO-1: the sender's creator, else its parent task's creator, else None (reject)."""
    if sender.created_by is not None:
        return sender.created_by
    if parent is not None and parent.created_by is not None:
        return parent.created_by
    return None
