# Owns: `parse_turn` (TRN-2): one completed turn's text -> the TurnPlan: extraction
# (§2), per-kind caps (§4: aliases together, counted in order of appearance, valid
# or not), validation (§3/§4), and execution order (TRN-1).
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

from markertools._extract import RawBlock, extract_blocks
from markertools._kinds import EXEC_ORDER, KIND_BY_NAME
from markertools._msg import Msg, msg
from markertools._params import Params
from markertools._plan import BlockIssue, Command, TurnPlan
from markertools._validate import validate_parts


def plan_blocks(blocks: tuple[RawBlock, ...]) -> TurnPlan:
    """The plan of already extracted blocks (caps, validation, order)."""
    counts: dict[str, int] = {}
    commands: list[tuple[int, int, Command]] = []
    issues: list[BlockIssue] = []
    for position, block in enumerate(blocks):
        kind = KIND_BY_NAME.get(block.kind) if block.kind is not None else None
        if kind is None:
            suggestion = block.suggestion or ""
            reason = msg("parse.unknown_kind", written=block.info, suggestion=suggestion)
            issues.append(BlockIssue(block.info, block.line, "unknown", reason))
            continue
        seen = counts[kind.name] = counts.get(kind.name, 0) + 1
        if seen > kind.cap:
            if kind.aliases:
                reason = msg(
                    "parse.over_cap_aliases",
                    kind=kind.name, cap=kind.cap, names=kind.names, position=seen,
                )  # fmt: skip
            else:
                reason = msg("parse.over_cap", kind=kind.name, cap=kind.cap, position=seen)
            issues.append(BlockIssue(kind.name, block.line, "ignored", reason))
            continue
        if not block.closed:
            reason = msg("parse.unclosed", written=block.info, line=block.line)
            issues.append(BlockIssue(kind.name, block.line, "skipped", reason))
            continue
        try:
            result: tuple[Params, tuple[Msg, ...]] | Msg = validate_parts(kind, block.body)
        except Exception as exc:  # Rule 1: a bug in one block's validation stays there
            result = msg("parse.internal_error", kind=kind.name, error=type(exc).__name__)
        if isinstance(result, Msg):
            issues.append(BlockIssue(kind.name, block.line, "skipped", result))
            continue
        params, notes = result
        command = Command(kind.name, block.line, params, block.info, notes)
        commands.append((EXEC_ORDER[kind.name], position, command))
    commands.sort(key=lambda item: (item[0], item[1]))
    return TurnPlan(tuple(c for _, _, c in commands), tuple(issues))


def parse_turn(text: str) -> TurnPlan:
    """TRN-2: the ordered, validated, clamped plan of one turn, with every skip, ignore
    and near miss and its reason. Pure; delivering the plan is separate."""
    blocks = extract_blocks(text)
    return plan_blocks(blocks) if blocks else _NO_BLOCKS


_NO_BLOCKS: TurnPlan = TurnPlan()  # immutable, so one instance serves every turn
