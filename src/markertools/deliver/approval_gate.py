# Owns: who may answer an approval request, and when (APR-3), as PURE functions over
# facts the caller gathered (GAT-3): `approval_state_refusal` - whether a request can
# still be answered at all (pending, not expired, its task running), the same for a
# person and an agent -, `approval_answer_gate` - the gate of the approval-answer kind,
# shaped as task-cancel's lineage branch (GAT-1) -, `person_answer_refusal` (the CLI's),
# and `rule_text`, how a rule is named in every reason. Security-critical:
# mutation-tested (scripts/mutation.py "approval_gate").
#
# Must never: call a port, read a clock, raise for any input; allow an agent to answer
# its own request, a request of a task outside its lineage below it or of another
# creator, or approve what a deny rule covers.
#
# Invariants:
#   Rule 1: the agent gate checks in this order, the first failure wins: the request
#           exists; it is of the sender's project; it is not the sender's own; its state
#           allows an answer (`approval_state_refusal`); the requester is in the
#           sender's lineage below it (LIN-4: the sender is a strict ancestor); the same
#           creator (DOM-3, never on nulls); `create_task` (task-cancel's permission; a
#           failed lookup denies, GAT-4); for an approval, no deny rule covers it.
#   Rule 2: `approval_state_refusal` refuses a request that is missing, answered or
#           expired (by its status, or by its expiry time at `now`), or whose task is gone
#           or not `running`.
#   Rule 3: a refusal is a catalogue message naming the request (and the rule or task).
from __future__ import annotations

from markertools.deliver.gates import permission_gate
from markertools.deliver.render import shown
from markertools.domain.approvals import ApprovalRequest, ApprovalRule, shown_argv
from markertools.domain.decision import Allowed, Decision, Denied, PermissionAnswer
from markertools.domain.model import Task, same_creator
from markertools.text.msg import Msg, msg

ANSWER_PERMISSION = "create_task"  # Rule 1: the permission task-cancel needs (GAT-1 (7))


def rule_text(rule: ApprovalRule) -> Msg:
    """How `rule` is named in a reason: its id, action and what it matches."""
    action = msg("approvals.action_allow" if rule.action == "allow" else "approvals.action_deny")
    if rule.prefix is not None:
        what = msg("approvals.rule_prefix", prefix=shown(shown_argv(rule.prefix), 200))
    elif rule.path_glob is not None:
        what = msg("approvals.rule_path", glob=shown(rule.path_glob, 200))
    else:
        what = msg("approvals.rule_kind", kind=shown(rule.kind))
    return msg("approvals.rule", id=shown(rule.id), action=action, what=what)


def approval_state_refusal(
    request: ApprovalRequest | None, task: Task | None, now: float, *, approval_id: str
) -> Msg | None:
    """Rule 2: why `request` (of `task`, as read) cannot be answered at `now`; None when
    it can. `approval_id` is the id asked for (named when there is no such request)."""
    if request is None:
        return msg("approvals.unknown", id=shown(approval_id))
    return _state(request, task, now)


def _state(request: ApprovalRequest, task: Task | None, now: float) -> Msg | None:
    """Rule 2 for a request that exists."""
    rid = shown(request.id)
    if request.status == "expired":
        reason = shown(request.answer_reason or "-", 300)
        return msg("approvals.expired_already", id=rid, reason=reason)
    if request.status != "pending":
        return msg(
            "approvals.answered_already",
            id=rid,
            status=shown(request.status),
            by=shown(request.answered_by or "-"),
        )
    if request.expires_at <= now:
        return msg("approvals.expired_at", id=rid, seconds=round(now - request.expires_at, 3))
    if task is None:
        return msg("approvals.task_gone", id=rid, task=shown(request.task_id))
    if task.status != "running":
        return msg("approvals.task_left_running", id=rid, task=shown(task.id), status=task.status)
    return None


def approval_answer_gate(
    sender: Task,
    request: ApprovalRequest | None,
    requester: Task | None,
    *,
    approval_id: str,
    decision: str,
    in_lineage: bool,
    permission: PermissionAnswer,
    deny_rule: ApprovalRule | None,
    now: float,
) -> Decision:
    """Rule 1: may `sender`'s agent give `decision` ("approve" / "deny") on `request`?
    `requester` is the request's task as read, `in_lineage` the LIN-4 fact for (sender,
    requester), `permission` the answer for `create_task`, `deny_rule` the deny rule of
    the project that covers the request (None: none does)."""
    if request is None:
        return Denied(msg("approvals.unknown", id=shown(approval_id)))
    rid = shown(request.id)
    if request.project_id != sender.project_id:
        return Denied(msg("approvals.other_project", id=rid))
    if request.task_id == sender.id:
        return Denied(msg("approvals.own_request", id=rid))
    state = _state(request, requester, now)
    if state is not None:
        return Denied(state)
    assert requester is not None  # the state refusal covers a missing task
    if not in_lineage:
        return Denied(msg("approvals.not_in_lineage", id=rid, task=shown(requester.id)))
    if not same_creator(sender, requester):
        return Denied(msg("approvals.other_creator", id=rid, task=shown(requester.id)))
    granted = permission_gate(permission, sender, ANSWER_PERMISSION)
    if isinstance(granted, Denied):
        return granted
    if decision == "approve" and deny_rule is not None:
        return Denied(msg("approvals.deny_rule", id=rid, rule=rule_text(deny_rule)))
    return Allowed()


def person_answer_refusal(
    request: ApprovalRequest | None,
    task: Task | None,
    *,
    approval_id: str,
    decision: str,
    deny_rule: ApprovalRule | None,
    now: float,
) -> Msg | None:
    """APR-3 for a person (`markertools approvals approve|deny`): the state refusal, then
    no approval of what a deny rule covers; None when the answer may be given."""
    state = approval_state_refusal(request, task, now, approval_id=approval_id)
    if state is not None:
        return state
    if decision == "approve" and deny_rule is not None and request is not None:
        return msg("approvals.deny_rule", id=shown(request.id), rule=rule_text(deny_rule))
    return None
