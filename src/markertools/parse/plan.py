# Owns: the plan of one turn (TRN-2): the ordered, validated `Command`s and every
# `BlockIssue` (skipped, ignored, unknown-kind blocks) with its reason. Pure values;
# building a plan is the parse layer's job, executing it is delivery's.
#
# Invariants:
#   Rule 1: `TurnPlan.commands` are in execution order (TRN-1), `issues` in order of
#           appearance; every fenced marker block of the text is in exactly one of them.
#   Rule 2: `Command.kind` and `BlockIssue.kind` are canonical kind names, except for an
#           "unknown" issue, whose kind is the info string as written (EXT-5).
from __future__ import annotations

from typing import Literal

import attrs

from markertools.parse.params import Params
from markertools.text.msg import Msg

IssueOutcome = Literal["skipped", "ignored", "unknown"]


@attrs.frozen
class Command:
    """One valid block, ready to execute."""

    kind: str  # canonical kind name
    line: int  # 1-based line of the opening fence (EXT-4)
    params: Params
    written_kind: str = ""  # the info string as written (an alias, or the kind itself)
    notes: tuple[Msg, ...] = ()  # clamps applied, ignored fields, dropped targets (VAL-4)


@attrs.frozen
class BlockIssue:
    """A block that will not execute, and why."""

    kind: str
    line: int
    outcome: IssueOutcome
    reason: Msg


@attrs.frozen
class TurnPlan:
    """The plan of one turn: its valid commands in execution order (TRN-1) and every
    skipped, ignored or near-miss block as an issue, in order of appearance."""

    commands: tuple[Command, ...] = ()
    issues: tuple[BlockIssue, ...] = ()
    # VAL-8: the `name` of every task-create block that is NOT a command (skipped or
    # over the cap; an unclosed block has no body to read) when its body still reads
    # as a JSON object with a string name. A name also used by such a block is
    # ambiguous, so `@NAME` never resolves to it.
    unexecuted_create_names: tuple[str, ...] = ()
