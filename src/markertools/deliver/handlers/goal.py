# Owns: the delivery handler of goal-convert (GOA-1, GOA-2): it only asks for the
# follow-up "/goal <goal>" to be queued for the sender AFTER this turn's report message,
# so no other block's report is lost. It changes no task itself: the conversion happens
# when the worker runs that follow-up through its own /goal path.
#
# Invariants:
#   Rule 1: the follow-up text is exactly "/goal " + the goal, verbatim.
#   Rule 2: it is queued after the report (TurnContext.queue_after_report), never before.
from __future__ import annotations

from typing import Final

from markertools.deliver.context import Handler, HandlerTable, TurnContext, handler_table
from markertools.deliver.report import ReportEntry
from markertools.parse.params import GoalConvertParams
from markertools.parse.plan import Command
from markertools.text.msg import msg

GOAL_PREFIX = "/goal "


def handle_goal_convert(cmd: Command, p: GoalConvertParams, ctx: TurnContext) -> ReportEntry:
    ctx.queue_after_report(GOAL_PREFIX + p.goal)
    return ctx.done(cmd, None, msg("tasks.goal_queued", chars=len(p.goal)))


HANDLERS: Final[HandlerTable] = handler_table(Handler(GoalConvertParams, handle_goal_convert))
