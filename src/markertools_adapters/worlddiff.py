# Owns: "what changed" between two exported worlds, as plain text lines for the CLI
# (`deliver`, `demo`): tasks / todos / automations created and changed field by field,
# follow-ups queued, audit records written, virtual time passed.
#
# Invariants: pure; record text (prompts, reasons) is shown cut to one line, never raw.
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs

from markertools_adapters.world import World

PREVIEW_CHARS = 100


def one_line(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """A value as one line of JSON-ish text, cut to `limit` code points."""
    if isinstance(value, str):
        value = " ".join(value.split())
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _by_id(records: Sequence[Any]) -> dict[str, Any]:
    return {r.id: r for r in records}


def _changed_fields(old: Any, new: Any) -> list[str]:
    out = []
    for field in attrs.fields(type(new)):
        before, after = getattr(old, field.name), getattr(new, field.name)
        if before != after:
            out.append(f"{field.name} {one_line(before, 60)} -> {one_line(after, 60)}")
    return out


def _records(label: str, before: Sequence[Any], after: Sequence[Any], describe: Any) -> list[str]:
    old, new = _by_id(before), _by_id(after)
    lines: list[str] = []
    created = [r for k, r in new.items() if k not in old]
    changed = [(old[k], r) for k, r in new.items() if k in old and old[k] != r]
    removed = [k for k in old if k not in new]
    if created:
        lines.append(f"{label} created:")
        lines += [f"  + {describe(r)}" for r in created]
    if changed:
        lines.append(f"{label} changed:")
        for was, now in changed:
            lines.append(f"  ~ {now.id}: " + "; ".join(_changed_fields(was, now)))
    if removed:
        lines.append(f"{label} removed:")
        lines += [f"  - {k}" for k in removed]
    return lines


def _task(t: Any) -> str:
    return (
        f"{t.id} (status {t.status}, parent {t.parent_task_id}, executor {t.executor}, "
        f"created_by {t.created_by}): prompt {one_line(t.prompt)}"
    )


def _todo(d: Any) -> str:
    return f"{d.id} ({d.status}, {d.priority}): {one_line(d.title)}"


def _automation(a: Any) -> str:
    return f"{a.id} ({a.name}, every {a.interval_seconds} s, {a.status}): {one_line(a.prompt)}"


def world_changes(before: World, after: World) -> list[str]:
    """The differences, as lines; an empty list when nothing changed."""
    lines: list[str] = []
    lines += _records("tasks", before.tasks, after.tasks, _task)
    lines += _records("todos", before.todos, after.todos, _todo)
    lines += _records("automations", before.automations, after.automations, _automation)
    new_followups = after.followups[len(before.followups) :]
    if new_followups:
        lines.append("follow-ups queued:")
        lines += [f"  -> {f.task_id}: {one_line(f.text)}" for f in new_followups]
    new_audit = after.audit[len(before.audit) :]
    if new_audit:
        lines.append(f"audit records written: {len(new_audit)}")
        lines += [
            f"  {a.kind} -> {a.target or '-'}: {a.outcome}: {one_line(a.reason, 80)}"
            for a in new_audit
        ]
    if after.now != before.now:
        lines.append(f"virtual time passed: {after.now - before.now:g} s")
    return lines
