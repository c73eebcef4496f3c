# Owns: the delivery handler of approval-answer (APR-3): gather the facts (the request,
# its task, the lineage fact, the `create_task` answer, the deny rule that covers the
# request), decide with the pure `approval_gate`, then answer through the approvals
# port's compare-and-set.
#
# Invariants:
#   Rule 1: nothing changes unless the gate allowed it; a rejection changes nothing.
#   Rule 2: the answer is one compare-and-set in the store (pending, not expired, task
#           running); losing it rejects the block with what happened meanwhile (the
#           first answer wins).
#   Rule 3: the answer records `task:<sender id>` as who answered, with the agent's
#           reason, and the request's id is the entry's target.
from __future__ import annotations

from typing import Final

from markertools.deliver.approval_gate import approval_answer_gate, approval_state_refusal
from markertools.deliver.context import Handler, HandlerTable, TurnContext, handler_table
from markertools.deliver.render import shown
from markertools.deliver.report import ReportEntry
from markertools.domain.approval_rules import deny_covering
from markertools.domain.approvals import task_answer
from markertools.domain.decision import Denied
from markertools.parse.params import ApprovalAnswerParams
from markertools.parse.plan import Command
from markertools.text.msg import msg

ANSWER_STATUS: Final[dict[str, str]] = {"approve": "approved", "deny": "denied"}


def handle_answer(cmd: Command, p: ApprovalAnswerParams, ctx: TurnContext) -> ReportEntry:
    target = shown(p.approval_id)
    store = ctx.ports.approvals
    if store is None:
        return ctx.rejected(cmd, target, msg("approvals.no_store"))
    request = store.get_approval(p.approval_id)
    requester = ctx.ports.tasks.get_task(request.task_id) if request is not None else None
    deny_rule = None
    if request is not None and p.decision == "approve":
        root = (requester.worktree if requester is not None else None) or request.cwd
        deny_rule = deny_covering(store.approval_rules(request.project_id), request, root)
    now = ctx.now()
    decision = approval_answer_gate(
        ctx.sender,
        request,
        requester,
        approval_id=p.approval_id,
        decision=p.decision,
        in_lineage=ctx.target_in_lineage(requester),
        permission=ctx.permission("create_task"),
        deny_rule=deny_rule,
        now=now,
    )
    if isinstance(decision, Denied):
        return ctx.rejected(cmd, target, decision.reason)
    assert request is not None and requester is not None  # the gate denies otherwise
    answered = store.answer_approval(
        request.id,
        ANSWER_STATUS[p.decision],
        answered_by=task_answer(ctx.sender.id),
        reason=p.reason,
        now=now,
    )
    if answered is None:  # Rule 2: another answer, the expiry or the task came first
        again = store.get_approval(request.id)
        task = ctx.ports.tasks.get_task(request.task_id)
        why = approval_state_refusal(again, task, ctx.now(), approval_id=request.id)
        return ctx.rejected(
            cmd,
            target,
            msg("approvals.changed_meanwhile", id=target, why=why or msg("common.none")),
        )
    result = msg(
        "approvals.answered",
        id=target,
        task=shown(request.task_id),
        decision=msg(f"approvals.decision_{p.decision}"),
    )
    return ctx.done(cmd, target, result)


HANDLERS: Final[HandlerTable] = handler_table(Handler(ApprovalAnswerParams, handle_answer))
