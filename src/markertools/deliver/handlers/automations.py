# Owns: the delivery handler for automation-create (docs/rules.md AUT): permission, quota,
# first_run_at and name checks, then registering the definition through the
# AutomationStore port. Never runs an automation: creating only registers it (AUT-4).
#
# Invariants:
#   Rule 1 (AUT-4): needs `create_task` (a failed lookup refuses); an exhausted quota
#           (checked once per turn) refuses every automation-create of the turn; the
#           creator is the sender's creator.
#   Rule 2 (AUT-2): a first_run_at before now is rejected, and the reason states the
#           current time so the agent can correct it next turn.
#   Rule 3 (AUT-3): an automatic name is auto-<sender id[:8]>-<now as YYYYMMDDHHMMSS in
#           Asia/Shanghai>-<n>, n = the block's 1-based position among this turn's
#           automation-create blocks, raised until no active automation of the project
#           (including those registered earlier this turn) has the name; an explicit
#           name held by an active automation of the project refuses the block.
#   Rule 4: `bind: "heartbeat"` binds the automation to the sender (bound_task_id).
#   Rule 5 (AUT-3 under concurrency): the store enforces the name rule atomically and
#           raises AutomationNameTaken when a concurrent delivery registered the name
#           after it was checked: an explicit name then refuses the block with the same
#           reason as above (never a generic port failure); a generated name is raised
#           again past the names now taken, at most NAME_ATTEMPTS times.
from __future__ import annotations

from typing import Final

import attrs

from markertools.deliver.context import (
    Handler,
    HandlerTable,
    TurnContext,
    handler_table,
    new_id,
    permission_refusal,
)
from markertools.deliver.render import shown
from markertools.deliver.report import ReportEntry
from markertools.domain.model import Automation
from markertools.domain.ports import AutomationNameTaken
from markertools.domain.schedule import shanghai_iso, shanghai_stamp, whole_seconds
from markertools.domain.timeparse import default_time_zone_name
from markertools.parse.params import AutomationCreateParams
from markertools.parse.plan import Command
from markertools.text.msg import Msg, msg

SENDER_ID_CHARS: Final[int] = 8
NAME_ATTEMPTS: Final[int] = 3  # Rule 5: inserts tried with a generated name


def block_position(cmd: Command, commands: tuple[Command, ...]) -> int:
    """1-based position of `cmd` among the turn's commands of its kind (automation-create)."""
    same_kind = [c for c in commands if c.kind == cmd.kind]
    for index, other in enumerate(same_kind, start=1):
        if other is cmd:
            return index
    for index, other in enumerate(same_kind, start=1):
        if other == cmd:
            return index
    return len(same_kind) + 1


def automatic_name(sender_id: str, now: float, position: int, taken: frozenset[str]) -> str:
    """AUT-3: the first auto-<id8>-<stamp>-<n> with n >= position that is not taken."""
    base = f"auto-{sender_id[:SENDER_ID_CHARS]}-{shanghai_stamp(now)}-"
    n = max(1, position)
    while base + str(n) in taken:
        n += 1
    return base + str(n)


def _when(epoch: float) -> Msg:
    return msg("automations.when", epoch=whole_seconds(epoch), iso=shanghai_iso(epoch))


def handle_automation_create(
    cmd: Command, params: AutomationCreateParams, ctx: TurnContext
) -> ReportEntry:
    refusal = permission_refusal(ctx, "create_task", "automations")
    if refusal is not None:
        return ctx.rejected(cmd, None, refusal)
    if ctx.quota_exhausted():
        return ctx.rejected(
            cmd, None, msg("automations.quota_exhausted", user=shown(ctx.sender.created_by))
        )
    now = ctx.now()
    if params.first_run_at is not None and params.first_run_at < now:
        return ctx.rejected(
            cmd,
            None,
            msg(
                "automations.first_run_past",
                given=whole_seconds(params.first_run_at),
                given_iso=shanghai_iso(params.first_run_at),
                now=whole_seconds(now),
                now_iso=shanghai_iso(now),
                zone=default_time_zone_name(),
            ),
        )
    project = ctx.sender.project_id
    taken = ctx.ports.automations.active_automation_names(project)
    generated: str | Msg = ""
    position = block_position(cmd, ctx.plan.commands)
    if params.name is not None:
        if params.name in taken:
            return ctx.rejected(cmd, None, msg("automations.name_taken", name=shown(params.name)))
        name = params.name
    else:
        name = automatic_name(ctx.sender.id, now, position, taken)
        generated = msg("automations.name_generated")
    heartbeat = params.bind == "heartbeat"
    automation = Automation(
        id=new_id(ctx, "am-", ctx.ports.automations.get_automation),
        project_id=project,
        name=name,
        prompt=params.prompt,
        interval_seconds=params.interval_seconds,
        first_run_at=params.first_run_at,
        run_once=params.once,
        bind="heartbeat" if heartbeat else None,
        bound_task_id=ctx.sender.id if heartbeat else None,
        repo_url=params.repo_url,
        status="active",
        created_by=ctx.sender.created_by,
        created_at=now,
    )
    # TRN-9: with a turn id the id is derived; one that exists was created by an
    # earlier delivery of this turn (its block unrecorded): recognised, not created again
    known = ctx.created_earlier(ctx.ports.automations.get_automation, automation.id)
    for attempt in range(1, 0 if known else NAME_ATTEMPTS + 1):
        try:
            ctx.ports.automations.insert_automation(automation)
            break
        except AutomationNameTaken:  # Rule 5: registered meanwhile by another delivery
            if params.name is not None or attempt == NAME_ATTEMPTS:
                return ctx.rejected(cmd, None, msg("automations.name_taken", name=shown(name)))
            taken = taken | {name} | ctx.ports.automations.active_automation_names(project)
            name = automatic_name(ctx.sender.id, now, position, taken)
            automation = attrs.evolve(automation, name=name)
    first = (
        _when(params.first_run_at)
        if params.first_run_at is not None
        else msg("automations.when_now", iso=shanghai_iso(now))
    )
    schedule = (
        msg("automations.schedule_once", first=first)
        if params.once
        else msg("automations.schedule_repeat", first=first, interval=params.interval_seconds)
    )
    binding = msg("automations.bound_heartbeat" if heartbeat else "automations.unbound")
    result = msg(
        "automations.created",
        name=shown(name),
        generated=generated,
        id=automation.id,
        schedule=schedule,
        binding=binding,
    )
    return ctx.done(cmd, automation.id, result)


HANDLERS: Final[HandlerTable] = handler_table(
    Handler(AutomationCreateParams, handle_automation_create)
)
