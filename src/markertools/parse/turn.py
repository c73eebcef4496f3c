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
from collections.abc import Mapping

import attrs

from markertools.parse.blocks import RawBlock, extract_blocks
from markertools.parse.jsonstrict import MAX_BODY_CHARS
from markertools.parse.kinds import EXEC_ORDER, KIND_BY_NAME
from markertools.parse.kindspec import KindSpec, per_kind
from markertools.parse.params import Params
from markertools.parse.plan import BlockIssue, Command, IssueOutcome, TurnPlan
from markertools.parse.validate import validate_parts
from markertools.text.inline import shown
from markertools.text.msg import Msg, MsgArg, msg


def plan_blocks(blocks: tuple[RawBlock, ...], used: Mapping[str, int] | None = None) -> TurnPlan:
    """The plan of already extracted blocks (caps, validation, order). `used`: canonical
    kind -> how many tool calls of the kind the turn made already (TOL-4); they count
    toward the kind's cap before the first block."""
    counts: dict[str, int] = {k: v for k, v in (used or {}).items() if v > 0}
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
            reason = over_cap_reason(kind, seen)
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


def over_cap_reason(kind: KindSpec, position: int) -> Msg:
    """The reason a block (or a same-turn tool call, TOL-4) over its kind's per-turn cap
    is ignored: the `position`-th of its kind in the turn."""
    key, fixed = _over_cap(kind)
    return Msg(key, (*fixed, ("position", position)))


def cap_plan(plan: TurnPlan, used: Mapping[str, int]) -> TurnPlan:
    """TOL-4: `plan` with the tool calls the turn made already (`used`, canonical kind ->
    count) counted toward the caps: the commands and skipped blocks of each kind, in
    order of appearance (line), past the cap that is left become "ignored" issues. The
    plan itself when no call was made."""
    if not any(v > 0 for v in used.values()):
        return plan
    items: list[tuple[int, int, Command | BlockIssue]] = [(c.line, 0, c) for c in plan.commands] + [
        (i.line, 1, i) for i in plan.issues if i.outcome != "unknown"
    ]
    items.sort(key=lambda item: (item[0], item[1]))
    counts = {k: v for k, v in used.items() if v > 0}
    over: set[int] = set()
    dropped: list[BlockIssue] = []
    for _, _, item in items:
        spec = KIND_BY_NAME.get(item.kind)
        if spec is None:
            continue
        seen = counts[spec.name] = counts.get(spec.name, 0) + 1
        if seen > spec.cap and not (isinstance(item, BlockIssue) and item.outcome == "ignored"):
            over.add(id(item))
            dropped.append(BlockIssue(spec.name, item.line, "ignored", over_cap_reason(spec, seen)))
    if not over:
        return plan
    kept = tuple(i for i in plan.issues if id(i) not in over)
    merged = sorted((*kept, *dropped), key=lambda i: i.line)
    return attrs.evolve(
        plan,
        commands=tuple(c for c in plan.commands if id(c) not in over),
        issues=tuple(merged),
    )


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


def parse_turn(text: str, used: Mapping[str, int] | None = None) -> TurnPlan:
    """TRN-2: the ordered, validated, clamped plan of one turn, with every skip, ignore
    and near miss and its reason. Pure; delivering the plan is separate. `used` (TOL-4):
    the tool calls of each canonical kind the turn made already, counted toward the caps
    before its first block."""
    blocks = extract_blocks(text)
    return plan_blocks(blocks, used) if blocks else _NO_BLOCKS


_NO_BLOCKS: TurnPlan = TurnPlan()  # immutable, so one instance serves every turn
