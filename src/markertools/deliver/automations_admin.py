# Owns: managing automations from a library call or the CLI (docs/rules.md SCH-7): list,
# pause, resume, update (prompt, interval, first_run_at, once) and delete, each validated
# here with the automation-create field rules (AUT-1, AUT-2) and applied through the
# AutomationAdmin port, which rewrites the derived schedule with the pure
# markertools.domain.schedule so SCH-1..3 keep holding. Pure except through the port.
#
# Invariants:
#   Rule 1: every change is compare-and-set on the status the call read: a concurrent
#           change makes the call answer "changed meanwhile", never overwrite it.
#   Rule 2: a paused automation is never due (is_due requires "active"); a deleted one is
#           never listed, due or changed again.
#   Rule 3: first_run_at (AUT-2: not before now) applies only before the first run
#           (SCH-1): for an automation that has run it is refused with the reason;
#           interval_seconds takes effect from the next slot (SCH-2), once per SCH-3.
#   Rule 4: a refusal changes nothing and carries its reason (a Msg).
from __future__ import annotations

from typing import Protocol

import attrs

from markertools.domain.model import Automation
from markertools.domain.ports import AutomationAdmin, AutomationNameTaken, AutomationStore
from markertools.domain.schedule import has_run, next_run_at, shanghai_iso, whole_seconds
from markertools.text.msg import Msg, msg

PROMPT_MAX = 20000
INTERVAL_RANGE = range(60, 2592000 + 1)


class _Admin(AutomationStore, AutomationAdmin, Protocol):
    """A store that holds automations and manages them (every bundled store)."""


@attrs.frozen
class AutomationChange:
    """The answer of a management call: `ok` False = nothing changed, `reason` says why."""

    ok: bool
    reason: Msg
    automation: Automation | None = None


def next_run_text(automation: Automation) -> Msg:
    nxt = next_run_at(automation)
    if nxt is None:
        return msg("schedule.never")
    return msg("automations.when", epoch=whole_seconds(nxt), iso=shanghai_iso(nxt))


def list_automations(store: _Admin, project_id: str | None = None) -> tuple[Automation, ...]:
    """Every automation that is not deleted (of one project, or all), by id."""
    return store.list_automations(project_id)


def _refused(reason: Msg, automation: Automation | None = None) -> AutomationChange:
    return AutomationChange(False, reason, automation)


def _set_status(
    store: _Admin, automation_id: str, expected: tuple[str, ...], status: str, done: str
) -> AutomationChange:
    current = store.get_automation(automation_id)
    if current is None or current.status == "deleted":
        return _refused(msg("schedule.not_found", id=automation_id))
    if current.status not in expected:
        return _refused(
            msg(
                "schedule.wrong_status",
                id=automation_id,
                status=current.status,
                expected=" / ".join(expected),
            ),
            current,
        )
    try:
        changed = store.set_automation_status(automation_id, current.status, status)
    except AutomationNameTaken as exc:
        return _refused(msg("schedule.resume_name_taken", id=automation_id, name=exc.name), current)
    if changed is None:
        return _refused(msg("schedule.changed_meanwhile", id=automation_id), current)
    return AutomationChange(True, msg(done, id=automation_id, next=next_run_text(changed)), changed)


def pause_automation(store: _Admin, automation_id: str) -> AutomationChange:
    """active -> paused: never due until resumed (Rule 2)."""
    return _set_status(store, automation_id, ("active",), "paused", "schedule.paused")


def resume_automation(store: _Admin, automation_id: str) -> AutomationChange:
    """paused -> active (refused when an active automation of the project has its name)."""
    return _set_status(store, automation_id, ("paused",), "active", "schedule.resumed")


def delete_automation(store: _Admin, automation_id: str) -> AutomationChange:
    """active or paused -> deleted: never listed, due or changed again."""
    return _set_status(store, automation_id, ("active", "paused"), "deleted", "schedule.deleted")


def update_automation(
    store: _Admin,
    automation_id: str,
    now: float,
    *,
    prompt: str | None = None,
    interval_seconds: int | None = None,
    first_run_at: float | None = None,
    once: bool | None = None,
) -> AutomationChange:
    """Change the given fields (None = unchanged), validated as automation-create does."""
    changes: dict[str, object] = {}
    if prompt is not None:
        if not isinstance(prompt, str) or not prompt.strip() or len(prompt) > PROMPT_MAX:
            return _refused(msg("schedule.bad_prompt"))
        changes["prompt"] = prompt
    if interval_seconds is not None:
        if (
            isinstance(interval_seconds, bool)
            or not isinstance(interval_seconds, int)
            or interval_seconds not in INTERVAL_RANGE
        ):
            return _refused(msg("schedule.bad_interval", given=repr(interval_seconds)))
        changes["interval_seconds"] = interval_seconds
    if once is not None:
        changes["run_once"] = bool(once)
    current = store.get_automation(automation_id)
    if current is None or current.status == "deleted":
        return _refused(msg("schedule.not_found", id=automation_id))
    if first_run_at is not None:
        if has_run(current):
            return _refused(
                msg(
                    "schedule.first_run_after_run",
                    id=automation_id,
                    count=current.run_count,
                    next=next_run_text(current),
                ),
                current,
            )
        if float(first_run_at) < now:
            return _refused(
                msg(
                    "schedule.first_run_past",
                    given=whole_seconds(first_run_at),
                    given_iso=shanghai_iso(first_run_at),
                    now=whole_seconds(now),
                    now_iso=shanghai_iso(now),
                ),
                current,
            )
        changes["first_run_at"] = float(first_run_at)
    if not changes:
        return _refused(msg("schedule.nothing_to_update"), current)
    changed = store.update_automation(automation_id, changes)
    if changed is None:
        return _refused(msg("schedule.not_found", id=automation_id))
    fields = tuple(sorted(changes))
    return AutomationChange(
        True,
        msg("schedule.updated", id=automation_id, fields=fields, next=next_run_text(changed)),
        changed,
    )


__all__ = [
    "AutomationChange",
    "delete_automation",
    "list_automations",
    "next_run_text",
    "pause_automation",
    "resume_automation",
    "update_automation",
]
