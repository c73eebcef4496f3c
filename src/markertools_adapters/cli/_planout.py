# Owns: the shared output of `parse` and the Codex sources of `parse` / `deliver`: reading
# a transcript file, the plan as the `parse --json` document and as the table. Both
# `cmd_parse` and `cmd_codex` import this module; it imports neither, so the two
# commands no longer import each other.
#
# Invariants:
#   Rule 1: JSON commands are in execution order with canonical kinds and every params
#           field (tuples as lists); issues in order of appearance.
#   Rule 2: the table lists every block by line, so a person sees the text's order,
#           with the execution position of each command.
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import cattrs

from markertools import Command, TurnPlan
from markertools_adapters.cli._app import fail
from markertools_adapters.cli._io import emit_json

_converter = cattrs.Converter()


def read_turn_text(source: str) -> str:
    """A transcript file (or `-` for stdin) as text: UTF-8, a leading BOM dropped."""
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as exc:
        fail(f"{source}: cannot read: {exc.strerror or exc}")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        fail(f"{source}: not UTF-8 text (invalid byte at offset {exc.start})")


def printable(text: str) -> str:
    """Text that any UTF-8 stream accepts: a lone surrogate (possible in a Codex
    transcript's info strings) is shown as its escape instead of crashing the print."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def params_json(command: Command) -> dict[str, Any]:
    """Rule 1: every params field, canonical names, tuples as lists."""
    data = _converter.unstructure(command.params)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}


def plan_json(plan: TurnPlan, locale: str = "en") -> dict[str, Any]:
    return {
        "commands": [
            {
                "kind": c.kind,
                "line": c.line,
                "params": params_json(c),
                "written_kind": c.written_kind,
                "notes": [printable(n.render(locale)) for n in c.notes],
            }
            for c in plan.commands
        ],
        "issues": [
            {
                "kind": printable(i.kind),
                "line": i.line,
                "outcome": i.outcome,
                "reason": printable(i.reason.render(locale)),
            }
            for i in plan.issues
        ],
    }


def _short(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "…'"


def plan_table(plan: TurnPlan, locale: str = "en") -> str:
    """Rule 2: one row per block, by line."""
    rows: list[tuple[int, int, str, str, list[str]]] = []
    for position, c in enumerate(plan.commands, 1):
        params = params_json(c)
        detail = ", ".join(f"{k}={_short(v)}" for k, v in params.items()) or "(no fields)"
        notes = [f"note: {printable(n.render(locale))}" for n in c.notes]
        rows.append((c.line, 0, c.kind, f"run #{position}", [detail, *notes]))
    for issue in plan.issues:
        reason = printable(issue.reason.render(locale))
        rows.append((issue.line, 1, printable(issue.kind), issue.outcome, [reason]))
    if not rows:
        return "no marker blocks"
    rows.sort(key=lambda r: (r[0], r[1]))
    kind_width = max(4, *(len(r[2]) for r in rows))
    out = [f"{'LINE':>5}  {'KIND':<{kind_width}}  {'OUTCOME':<8}  DETAIL"]
    for line, _, kind, outcome, details in rows:
        first, *more = details
        out.append(f"{line:>5}  {kind:<{kind_width}}  {outcome:<8}  {first}")
        pad = " " * (5 + 2 + kind_width + 2 + 8 + 2)
        out.extend(pad + extra for extra in more)
    skipped = sum(1 for i in plan.issues if i.outcome == "skipped")
    ignored = sum(1 for i in plan.issues if i.outcome == "ignored")
    unknown = sum(1 for i in plan.issues if i.outcome == "unknown")
    out.append("")
    out.append(
        f"{len(plan.commands)} to run, {skipped} skipped, {ignored} ignored, "
        f"{unknown} unknown kind(s)"
    )
    return "\n".join(out)


def print_plan(plan: TurnPlan, as_json: bool, locale: str = "en") -> None:
    """Print a plan as the `parse --json` document or as the table."""
    if as_json:
        emit_json(plan_json(plan, locale))
    else:
        sys.stdout.write(plan_table(plan, locale) + "\n")
