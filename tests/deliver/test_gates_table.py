"""Exhaustive control-gate table (GAT-1..4, CTL-2/3, DOM-2/3): every combination of
action x target status x goal / coordinator flags x project relation x lineage / creator
relation x permission answer (granted, denied, lookup raising), checked against an oracle
written separately and plainly from the spec text - first as the pure gate, then end to
end through deliver_turn and the in-memory store."""

from __future__ import annotations

import itertools

import pytest
from support.strategies.core import (
    FixedPermissions,
    RaisingPermissions,
    cancel,
    make_world,
    retry,
    rig,
)

from markertools.deliver.gates import CONTROL_PERMISSION, control_gate
from markertools.domain.decision import Allowed, Denied, PermissionAnswer
from markertools.domain.model import Task

ACTIONS = ("cancel", "retry")
STATUSES = ("queued", "running", "completed", "failed", "interrupted", "merged", "merge-failed")
TARGET_STATES = ("missing", *STATUSES)
GOAL_FLAGS = ("normal", "verify_command", "empty_verify_command", "goal_mode")
COORD_FLAGS = ("none", "is_coordinator", "coordinator_part")
PROJECTS = ("same", "other")
LINEAGE = (True, False)
CREATORS = (  # (sender created_by, target created_by)
    ("u1", "u1"),
    ("u1", "u2"),
    (None, None),
    ("u1", None),
)
PERMISSIONS = ("granted", "denied", "raises")


# ---- the oracle: the spec's words, one line each -------------------------------------------


def oracle(action, state, goal, project, lineage, creators, permission, is_self=False):
    """What GAT-1/GAT-2 say should happen: 'allow', 'allow-lineage-only' or a denial name."""
    # (1) target exists
    if state == "missing":
        return "missing"
    # (2) same project
    if project != "same":
        return "other-project"
    # (3) not the sender
    if is_self:
        return "self"
    # (4) not a goal task: verify_command non-empty string or goal_mode truthy (DOM-2)
    if goal in ("verify_command", "goal_mode"):
        return "goal"
    # (5) cancel: not terminal (terminal = all but queued and running);
    #     retry: failed, interrupted or merge-failed
    if action == "cancel" and state not in ("queued", "running"):
        return "status"
    if action == "retry" and state not in ("failed", "interrupted", "merge-failed"):
        return "status"
    # (6) lineage, or same creator (DOM-3: both non-null and equal)
    sender_creator, target_creator = creators
    same_creator = sender_creator is not None and sender_creator == target_creator
    if not lineage and not same_creator:
        return "unrelated"
    # (7) permission; GAT-2: a failed lookup narrows to lineage only
    if permission == "raises":
        return "allow-lineage-only" if lineage else "lookup-failed-creator-only"
    if permission == "denied":
        return "lacks-permission"
    return "allow"


REASON_NAMES = {
    "tasks.gate_missing": "missing",
    "tasks.gate_other_project": "other-project",
    "tasks.gate_self": "self",
    "tasks.gate_goal": "goal",
    "tasks.gate_cancel_terminal": "status",
    "tasks.gate_retry_status": "status",
    "tasks.gate_unrelated": "unrelated",
    "tasks.gate_lineage_only_denied": "lookup-failed-creator-only",
    "tasks.gate_lacks": "lacks-permission",
}


def decision_name(decision):
    if isinstance(decision, Allowed):
        return "allow" if decision.note is None else "allow-lineage-only"
    assert isinstance(decision, Denied)
    return REASON_NAMES[decision.reason.key]


def build_target(state, goal, coord, project, creators, parent):
    return Task(
        "x",
        "p1" if project == "same" else "p2",
        status=state if state != "missing" else "running",
        created_by=creators[1],
        parent_task_id=parent,
        goal_mode=goal == "goal_mode",
        verify_command={"verify_command": "make check", "empty_verify_command": ""}.get(goal),
        is_coordinator=coord == "is_coordinator",
        coordinator_part="part-1" if coord == "coordinator_part" else None,
        prompt="the prompt",
        model="model-a",
        result_text="old result",
        error_text="old error",
        actual_model="model-b",
    )


def permission_answer(action, permission):
    name = CONTROL_PERMISSION[action]
    if permission == "raises":
        return PermissionAnswer.failure(name, "ConnectionError: unreachable")
    return PermissionAnswer.of(name, permission == "granted")


TABLE = list(
    itertools.product(
        ACTIONS, TARGET_STATES, GOAL_FLAGS, COORD_FLAGS, PROJECTS, LINEAGE, CREATORS, PERMISSIONS
    )
)


@pytest.mark.rule("GAT-1", "GAT-2", "GAT-3", "DOM-2", "DOM-3", "CTL-3")
def test_control_gate_matches_oracle_on_every_combination():
    assert len(TABLE) == 2 * 8 * 4 * 3 * 2 * 2 * 4 * 3
    mismatches = []
    for row in TABLE:
        action, state, goal, coord, project, lineage, creators, permission = row
        sender = Task("t1", "p1", created_by=creators[0])
        target = (
            None
            if state == "missing"
            else build_target(state, goal, coord, project, creators, None)
        )
        decision = control_gate(
            action,
            sender,
            target,
            target_id="x",
            in_lineage=lineage,
            permission=permission_answer(action, permission),
        )
        expected = oracle(action, state, goal, project, lineage, creators, permission)
        if decision_name(decision) != expected:
            mismatches.append((row, decision, expected))
    assert mismatches == []


@pytest.mark.rule("GAT-1")
@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("permission", PERMISSIONS)
def test_control_gate_refuses_the_sender_itself(action, permission):
    for status in STATUSES:
        sender = Task("t1", "p1", status=status, created_by="u1")
        decision = control_gate(
            action,
            sender,
            sender,
            target_id="t1",
            in_lineage=False,
            permission=permission_answer(action, permission),
        )
        assert decision_name(decision) == oracle(
            action, status, "normal", "same", False, ("u1", "u1"), permission, is_self=True
        )


@pytest.mark.rule("GAT-1")
def test_control_gate_denies_an_answer_for_the_wrong_permission():
    sender = Task("t1", "p1", created_by="u1")
    target = Task("x", "p1", status="running", created_by="u1", parent_task_id="t1")
    decision = control_gate(
        "cancel",
        sender,
        target,
        target_id="x",
        in_lineage=True,
        permission=PermissionAnswer.of("approve_merge", True),
    )
    assert isinstance(decision, Denied)


# ---- the same table end to end ------------------------------------------------------------


def deliver_row(action, state, goal, coord, project, lineage, creators, permission):
    sender = Task("t1", "p1", status="running", created_by=creators[0])
    tasks = [sender]
    if state != "missing":
        parent = "mid" if lineage else None
        if lineage:  # a two-step lineage: x -> mid -> t1 (in another project mid is still a link)
            tasks.append(Task("mid", "p1", status="running", created_by="u9", parent_task_id="t1"))
        tasks.append(build_target(state, goal, coord, project, creators, parent))
    perms = (
        RaisingPermissions()
        if permission == "raises"
        else FixedPermissions(
            ("read", "create_task", "approve_merge") if permission == "granted" else ("read",)
        )
    )
    r = rig(make_world(*tasks, grants=()), permissions=perms)
    before = r.task("x")
    command = cancel("x") if action == "cancel" else retry("x")
    report = r.deliver(command)
    return r, before, report


@pytest.mark.rule("GAT-1", "GAT-2", "GAT-4", "CTL-2", "CTL-3", "TRN-7")
def test_delivery_applies_exactly_what_the_oracle_allows():
    failures = []
    for row in TABLE:
        action, state, goal, _coord, project, lineage, creators, permission = row
        expected = oracle(action, state, goal, project, lineage, creators, permission)
        r, before, report = deliver_row(*row)
        (entry,) = report.entries
        after = r.task("x")
        audit = [a for a in r.store.audit_records() if a.kind == f"task-{action}"]
        ok = len(audit) == 1
        if expected.startswith("allow"):
            ok = ok and entry.outcome == "done"
            if action == "cancel":
                ok = ok and after is not None and after.status == "interrupted"
                ok = ok and after.interrupted_reason is not None
            else:
                ok = ok and after is not None and after.status == "queued"
                ok = ok and (after.result_text, after.error_text, after.actual_model) == (
                    None,
                    None,
                    None,
                )
                ok = ok and (after.prompt, after.model) == (before.prompt, before.model)
            if expected == "allow-lineage-only":
                ok = ok and "permission lookup failed" in entry.reason.render("en")
        else:
            ok = ok and entry.outcome == "rejected" and after == before
            if expected == "lookup-failed-creator-only":
                ok = ok and "permission lookup failed" in entry.reason.render("en")
        if not ok:
            failures.append((row, expected, entry))
    assert failures == []
