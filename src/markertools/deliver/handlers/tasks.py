# Owns: delivery handlers of task-create (CRE-1..4), task-cancel (CTL-2, CTL-4) and
# task-retry (CTL-3, CTL-4). Each gathers facts through the TurnContext, decides with a
# pure gate (`gates`), then applies the outcome through the ports.
#
# Invariants:
#   Rule 1: nothing changes unless the gate allowed it; a rejection changes nothing.
#   Rule 2: cancel and retry change a task only through the store's compare-and-set on
#           the status the gate read, with a typed `TaskChange` (never a dict); losing
#           the race rejects "changed meanwhile".
#   Rule 3: a new task is always a normal task of the sender's project: never a goal or
#           coordinator task, never with a worktree or host of its own (CRE-2).
#   Rule 4: cancel never touches the sender's other children and create never touches
#           the sender (CRE-4).
from __future__ import annotations

from typing import Final

import attrs

from markertools._root import InvalidType
from markertools.deliver.context import (
    Handler,
    HandlerTable,
    TurnContext,
    handler_table,
    summarize_error,
)
from markertools.deliver.gates import CONTROL_PERMISSION, ControlAction, control_gate, create_gate
from markertools.deliver.render import shown
from markertools.deliver.report import ReportEntry
from markertools.deliver.snapshot import join_sections
from markertools.domain.change import TaskChange
from markertools.domain.decision import Allowed, Denied
from markertools.domain.model import Task
from markertools.parse.params import TaskCancelParams, TaskCreateParams, TaskRetryParams
from markertools.parse.plan import Command
from markertools.text.msg import DEFAULT_LOCALE, Msg, msg

TASK_ID_BYTES = 8


def new_task_id(ctx: TurnContext) -> str:
    return "t-" + ctx.ports.random.token_hex(TASK_ID_BYTES)


def build_child(ctx: TurnContext, params: TaskCreateParams, task_id: str) -> Task:
    """CRE-2: a normal, independent task below the sender."""
    sender = ctx.sender
    return Task(
        id=task_id,
        project_id=sender.project_id,
        status="queued",
        created_by=sender.created_by,
        parent_task_id=sender.id,
        executor=params.executor or sender.executor,
        environment_id=sender.environment_id,
        model=params.model,
        effort=params.effort,
        prompt=params.prompt,
        created_at=ctx.now(),
    )


def handle_create(cmd: Command, p: TaskCreateParams, ctx: TurnContext) -> ReportEntry:
    permission = ctx.permission("create_task")
    if permission.granted:  # the per-turn facts (each read at most once per turn)
        exhausted = ctx.quota_exhausted()
        generation = ctx.sender_generation()
        existing = ctx.existing_children()
    else:  # not needed: the gate denies on the permission first
        exhausted, generation, existing = False, 0, 0
    decision = create_gate(
        ctx.sender,
        permission,
        quota_exhausted=exhausted,
        generation=generation,
        existing_children=existing,
        created_this_turn=ctx.children_created,
    )
    if isinstance(decision, Denied):
        return ctx.rejected(cmd, None, decision.reason)
    child = build_child(ctx, p, ctx.derived_id("t-", TASK_ID_BYTES) or new_task_id(ctx))
    ctx.insert_once(ctx.ports.tasks.insert_task, ctx.ports.tasks.get_task, child)  # TRN-9
    ctx.register_created(p.name, child.id)
    if p.name is not None:
        if ctx.facts.source == "tool":  # TOL-2: no @NAME across calls; the call names the id
            key = "tasks.created_named_call"
        elif ctx.name_ambiguous(p.name):
            key = "tasks.created_named_ambiguous"
        else:
            key = "tasks.created_named"
        result = msg(
            key,
            id=child.id,
            name=shown(p.name, 100),
            executor=child.executor,
            parent=shown(ctx.sender.id),
        )
    else:
        result = msg(
            "tasks.created", id=child.id, executor=child.executor, parent=shown(ctx.sender.id)
        )
    return ctx.done(cmd, child.id, result)


def _gate_control(
    action: ControlAction, cmd: Command, ctx: TurnContext, raw_id: str
) -> tuple[Task, Allowed] | ReportEntry:
    """Gather the GAT-1 facts (target, lineage, permission) and run the control gate."""
    resolved = ctx.resolve_task_id(raw_id)
    if isinstance(resolved, Msg):
        return ctx.rejected(cmd, shown(raw_id), resolved)
    target = ctx.ports.tasks.get_task(resolved)
    decision = control_gate(
        action,
        ctx.sender,
        target,
        target_id=resolved,
        in_lineage=ctx.target_in_lineage(target),
        permission=ctx.permission(CONTROL_PERMISSION[action]),
    )
    if isinstance(decision, Denied):
        return ctx.rejected(cmd, shown(resolved), decision.reason)
    assert target is not None  # the gate denies a missing target
    return target, decision


def _transition(
    cmd: Command, ctx: TurnContext, target: Task, changes: TaskChange
) -> Task | ReportEntry:
    """Rule 2: compare-and-set on the status the gate read; a lost race rejects."""
    updated = ctx.ports.tasks.transition_task(target.id, target.status, changes)
    if updated is None:
        return ctx.rejected(
            cmd,
            target.id,
            msg("tasks.changed_meanwhile", id=shown(target.id), status=target.status),
        )
    return updated


def _with_note(result: Msg, allowed: Allowed) -> Msg:
    if allowed.note is None:
        return result
    return join_sections([result, msg("tasks.note_allowed", note=allowed.note)], "\n")


def handle_cancel(cmd: Command, p: TaskCancelParams, ctx: TurnContext) -> ReportEntry:
    gated = _gate_control("cancel", cmd, ctx, p.task_id)
    if isinstance(gated, ReportEntry):
        return gated
    target, allowed = gated
    reason = msg("tasks.interrupted_reason", sender=ctx.sender.id, line=cmd.line)
    change = TaskChange(status="interrupted", interrupted_reason=reason.render(DEFAULT_LOCALE))
    updated = _transition(cmd, ctx, target, change)
    if isinstance(updated, ReportEntry):
        return updated
    result = msg(
        "tasks.cancelled", id=shown(target.id), old=target.status, kill=_kill(ctx, updated)
    )
    return ctx.done(cmd, target.id, _with_note(result, allowed))


def _kill(ctx: TurnContext, task: Task) -> Msg:
    """CTL-2: ask the executor to kill `task`'s process group or container. Runs after the
    status change, which stands whatever happens here: a kill that raises - or answers
    with something that is not a KillResult - is reported as a failed kill, never as a
    rejection of the block."""
    try:
        killed = ctx.ports.executor.kill(task)
        signalled = getattr(killed, "signalled", None)
        raw_detail = getattr(killed, "detail", None)
        if not isinstance(signalled, bool) or not isinstance(raw_detail, str):
            raise InvalidType(f"the executor answered {type(killed).__name__}, not a KillResult")
    except Exception as exc:
        return msg("tasks.kill_failed", error=summarize_error(exc))
    detail = " ".join(raw_detail.split())[:300]
    if signalled:
        return msg("tasks.kill_signalled", detail=detail)
    if detail:
        return msg("tasks.kill_none", detail=detail)
    return msg("tasks.kill_none_plain")


# CTL-3: a retry requeues and clears exactly these; everything else stays as it is
RETRY_CLEARS: Final[TaskChange] = TaskChange(
    status="queued", result_text=None, error_text=None, actual_model=None
)


def handle_retry(cmd: Command, p: TaskRetryParams, ctx: TurnContext) -> ReportEntry:
    gated = _gate_control("retry", cmd, ctx, p.task_id)
    if isinstance(gated, ReportEntry):
        return gated
    target, allowed = gated
    # ATT-4: ledger rows so far belong to runs before this manual retry (no preamble)
    change = attrs.evolve(RETRY_CLEARS, retried_after_attempt=target.auto_resume_count)
    updated = _transition(cmd, ctx, target, change)
    if isinstance(updated, ReportEntry):
        return updated
    result = msg("tasks.retried", id=shown(target.id), old=target.status)
    return ctx.done(cmd, target.id, _with_note(result, allowed))


HANDLERS: Final[HandlerTable] = handler_table(
    Handler(TaskCreateParams, handle_create),
    Handler(TaskCancelParams, handle_cancel),
    Handler(TaskRetryParams, handle_retry),
)
