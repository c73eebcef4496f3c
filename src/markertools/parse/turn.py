# Owns: `parse_turn` (TRN-2): one completed turn's text -> the TurnPlan: extraction
# (EXT), per-kind caps (docs/rules.md, "Kinds and per-turn caps": aliases together, counted in order of appearance, valid
# or not), validation (VAL and the field rules), and execution order (TRN-1).
#
# Must never: raise for any `str` (a validation bug is contained to its block and
# reported, never lost), change anything outside the returned plan, or execute data.
#
# Invariants:
#   Rule 1: every extracted block is in exactly one place: a Command, or an issue
#           ("unknown" near miss, "ignored" over the cap, "skipped" with a reason).
#   Rule 2: commands are in TRN-1 order, ties in order of appearance; issues are in
#           order of appearance.
from __future__ import annotations

import json

from markertools.parse.blocks import RawBlock, extract_blocks
from markertools.parse.jsonstrict import MAX_BODY_CHARS
from markertools.parse.kinds import EXEC_ORDER, KIND_BY_NAME
from markertools.parse.kindspec import KindSpec, per_kind
from markertools.parse.params import Params
from markertools.parse.plan import BlockIssue, Command, IssueOutcome, TurnPlan
from markertools.parse.validate import validate_parts
from markertools.text.inline import shown
from markertools.text.msg import Msg, MsgArg, msg


def plan_blocks(blocks: tuple[RawBlock, ...]) -> TurnPlan:
    """The plan of already extracted blocks (caps, validation, order)."""
    counts: dict[str, int] = {}
    commands: list[tuple[int, int, Command]] = []
    issues: list[BlockIssue] = []
    unexecuted_names: list[str] = []
    for position, block in enumerate(blocks):
        kind = KIND_BY_NAME.get(block.kind) if block.kind is not None else None
        if kind is None:
            suggestion = block.suggestion or ""
            reason = msg("parse.unknown_kind", written=shown(block.info), suggestion=suggestion)
            issues.append(BlockIssue(block.info, block.line, "unknown", reason))
            continue
        seen = counts[kind.name] = counts.get(kind.name, 0) + 1
        outcome: IssueOutcome = "skipped"
        if seen > kind.cap:
            outcome = "ignored"
            # the reason of msg("parse.over_cap[_aliases]", kind=, cap=, [names=,]
            # position=), its fixed arguments shared: a turn may hold 100,000 such blocks
            key, fixed = _over_cap(kind)
            reason = Msg(key, (*fixed, ("position", seen)))
        elif not block.closed:
            reason = msg("parse.unclosed", written=shown(block.info), line=block.line)
        else:
            try:
                result: tuple[Params, tuple[Msg, ...]] | Msg = validate_parts(kind, block.body)
            except Exception as exc:  # Rule 1: a bug in one block's validation stays there
                result = msg("parse.internal_error", kind=kind.name, error=type(exc).__name__)
            if not isinstance(result, Msg):
                params, notes = result
                command = Command(kind.name, block.line, params, block.info, notes)
                commands.append((EXEC_ORDER[kind.name], position, command))
                continue
            reason = result
        issues.append(BlockIssue(kind.name, block.line, outcome, reason))
        _collect_create_name(kind, block.body, unexecuted_names)
    commands.sort(key=lambda item: (item[0], item[1]))
    return TurnPlan(tuple(c for _, _, c in commands), tuple(issues), tuple(unexecuted_names))


@per_kind
def _over_cap(kind: KindSpec) -> tuple[str, tuple[tuple[str, MsgArg], ...]]:
    """The key and the arguments before `position` of an over-cap reason (per kind)."""
    fixed: tuple[tuple[str, MsgArg], ...] = (("kind", kind.name), ("cap", kind.cap))
    if kind.aliases:
        return "parse.over_cap_aliases", (*fixed, ("names", kind.names))
    return "parse.over_cap", fixed


def _collect_create_name(kind: KindSpec, body: str, names: list[str]) -> None:
    """VAL-8: remember the name of a block creating a task (task-create) that will not
    run, when its body still reads as a JSON object with a string name in the kind's
    `task_name_field` (lenient: it only feeds ambiguity)."""
    field = kind.task_name_field
    if field is None or len(body) > MAX_BODY_CHARS or f'"{field}"' not in body:
        return
    try:
        value = json.loads(body)
    except Exception:  # anything unreadable simply has no name to remember
        return
    if isinstance(value, dict) and isinstance(value.get(field), str):
        names.append(value[field])


def parse_turn(text: str) -> TurnPlan:
    """TRN-2: the ordered, validated, clamped plan of one turn, with every skip, ignore
    and near miss and its reason. Pure; delivering the plan is separate."""
    blocks = extract_blocks(text)
    return plan_blocks(blocks) if blocks else _NO_BLOCKS


_NO_BLOCKS: TurnPlan = TurnPlan()  # immutable, so one instance serves every turn
