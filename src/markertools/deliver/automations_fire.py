# Owns: firing due automations (docs/rules.md SCH-6): `fire_due_automations(ports, now)`
# claims each due automation's slot compare-and-set (SCH-4) and materialises the claimed
# run exactly once - a new normal task for `bind` null / "cron", a follow-up of the bound
# task for "heartbeat" - with the gates checked at fire time and every outcome audited.
# Pure except through the ports; never reads a clock (`now` is an argument).
#
# Invariants:
#   Rule 1: the task a slot creates has an id derived from (automation id, slot)
#           (`automation_task_id`), so a run that is repeated - by a second firer, or after
#           a crash - recognises the task instead of creating a second one.
#   Rule 2 (crash semantics): with a transactional store (`ports.journal.atomic()`), the
#           claim, the materialisation and the audit record commit together: a crash leaves
#           the slot due and unfired, and the next fire runs it (exactly once). Without
#           one, a task run is materialised FIRST and claimed SECOND: a crash in between
#           leaves the task and an unclaimed slot; the next fire finds the task by its
#           derived id, creates nothing and claims the slot (exactly once, never lost). A
#           heartbeat follow-up has no id to recognise, so without a transaction it is
#           claimed first and queued second: a crash in between never queues it twice,
#           and loses only that one wake-up (SCH-6 "never fires twice").
#   Rule 3: a gate refusal (no creator, no create_task, exhausted quota, a failed lookup -
#           fail closed; a missing or failed bound task) claims the slot too: it counts
#           as spent, and the refusal is audited. A port failure before the claim leaves
#           the slot due (tried again by the next fire); it is reported and audited.
#   Rule 4: only the winner of a claim reports a run: a firer that loses the claim
#           reports nothing for that automation, so two concurrent firers list each run
#           once between them.
#   Rule 5: firing never raises for one automation's failure; only the due listing may.
from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from typing import Final, Literal

import attrs

from markertools.deliver.context import summarize_error
from markertools.domain.model import AuditRecord, Automation, Task, quota_exhausted
from markertools.domain.ports import Ports
from markertools.domain.schedule import is_due, next_run_at, shanghai_iso, whole_seconds
from markertools.text.msg import DEFAULT_LOCALE, Msg, msg

FireResult = Literal["task-created", "followup-queued", "skipped"]
AUDIT_KIND: Final[str] = "automation-fire"
DEFAULT_FIRE_LIMIT: Final[int] = 100
# a heartbeat wakes its task unless the task ended in failure (SCH-6 "terminal-failed")
FAILED_STATUSES: Final[frozenset[str]] = frozenset({"failed", "interrupted", "merge-failed"})


@attrs.frozen
class FiredRun:
    """What one claimed slot became (the `automations fire --json` entry)."""

    automation_id: str
    slot: float
    result: FireResult
    task_id: str | None  # the created task, the woken task, or None
    reason: Msg
    claimed: bool = True  # False: a port failed before the claim; the slot stays due


@attrs.frozen
class _Plan:
    result: FireResult
    reason: Msg
    task: Task | None = None  # task-created
    target: str | None = None  # followup-queued: the bound task


def automation_task_id(automation_id: str, slot: float) -> str:
    """Rule 1: the id of the task automation `automation_id` creates for `slot`."""
    digest = hashlib.sha256(f"{automation_id}\x00{float(slot)!r}".encode()).hexdigest()
    return "t-auto-" + digest[:20]


def slot_text(slot: float) -> Msg:
    return msg("schedule.slot", epoch=whole_seconds(slot), iso=shanghai_iso(slot))


def fire_due_automations(
    ports: Ports, now: float, *, limit: int = DEFAULT_FIRE_LIMIT
) -> tuple[FiredRun, ...]:
    """SCH-6: claim and run every automation due at `now` (at most `limit` of them, in id
    order); returns what each slot this call claimed became."""
    fired: list[FiredRun] = []
    for automation in ports.automations.due_automations(now)[: max(0, limit)]:
        run = _fire_one(ports, automation, now)
        if run is not None:
            fired.append(run)
    return tuple(fired)


def _fire_one(ports: Ports, automation: Automation, now: float) -> FiredRun | None:
    slot = next_run_at(automation)
    if slot is None or not is_due(automation, now):
        return None
    try:
        if ports.journal is not None:
            with ports.journal.atomic():
                return _claim_then_apply(ports, automation, slot, now)
        if automation.bind == "heartbeat":
            return _claim_then_apply(ports, automation, slot, now)
        return _create_then_claim(ports, automation, slot, now)
    except Exception as exc:  # Rule 3/5: before the claim; the slot stays due
        reason = msg(
            "schedule.fire_error",
            name=automation.name,
            slot=slot_text(slot),
            error=summarize_error(exc),
        )
        run = FiredRun(automation.id, slot, "skipped", None, reason, claimed=False)
        _audit(ports, automation, run, now)
        return run


# ---- the two orders (Rule 2) --------------------------------------------------------------


def _claim_then_apply(
    ports: Ports, automation: Automation, slot: float, now: float
) -> FiredRun | None:
    plan = _plan(ports, automation, slot, now)
    if not ports.automations.claim_automation(automation.id, slot, now):
        return None  # Rule 4: another firer won the slot
    run = _apply(ports, automation, slot, plan)
    _audit(ports, automation, run, now)
    return run


def _create_then_claim(
    ports: Ports, automation: Automation, slot: float, now: float
) -> FiredRun | None:
    task_id = automation_task_id(automation.id, slot)
    existing = ports.tasks.get_task(task_id)
    if existing is not None:  # an interrupted earlier fire (or a concurrent one) created it
        plan = _Plan("task-created", _recognised(automation, slot, task_id), task=existing)
    else:
        plan = _plan(ports, automation, slot, now)
        if plan.task is not None:
            current = ports.automations.get_automation(automation.id)
            if current is None or not is_due(current, now) or next_run_at(current) != slot:
                return None  # claimed (or changed) meanwhile: not ours to run
            with _tolerate_duplicate(ports, task_id):
                ports.tasks.insert_task(plan.task)
    if not ports.automations.claim_automation(automation.id, slot, now):
        return None  # Rule 4: the task exists once; the winner reports it
    run = FiredRun(automation.id, slot, plan.result, _target(plan), plan.reason)
    _audit(ports, automation, run, now)
    return run


@contextlib.contextmanager
def _tolerate_duplicate(ports: Ports, task_id: str) -> Iterator[None]:
    """An insert that fails because a concurrent firer inserted the same derived id is
    that firer's task (Rule 1), not an error."""
    try:
        yield
    except Exception:
        if ports.tasks.get_task(task_id) is None:
            raise


# ---- deciding and applying ----------------------------------------------------------------


def _plan(ports: Ports, automation: Automation, slot: float, now: float) -> _Plan:
    """The gates at fire time (Rule 3): what the claimed slot should become."""
    name, when = automation.name, slot_text(slot)
    if automation.bind == "heartbeat":
        bound = automation.bound_task_id
        if bound is None:
            return _Plan("skipped", msg("schedule.no_bound_task", name=name, slot=when))
        task = ports.tasks.get_task(bound)
        if task is None:
            return _Plan(
                "skipped",
                msg("schedule.bound_missing", name=name, task=bound, slot=when),
                target=bound,
            )
        if task.status in FAILED_STATUSES:
            reason = msg(
                "schedule.bound_failed", name=name, task=bound, status=task.status, slot=when
            )
            return _Plan("skipped", reason, target=bound)
        reason = msg("schedule.followup_queued", name=name, slot=when, task=bound)
        return _Plan("followup-queued", reason, target=bound)
    creator, project = automation.created_by, automation.project_id
    if creator is None:
        return _Plan("skipped", msg("schedule.no_creator", name=name, slot=when))
    try:
        exhausted = quota_exhausted(ports.costs.get_quota(creator))
    except Exception as exc:
        error = summarize_error(exc)
        return _Plan("skipped", msg("schedule.quota_failed", name=name, error=error, slot=when))
    if exhausted:
        return _Plan("skipped", msg("schedule.quota_exhausted", name=name, user=creator, slot=when))
    try:
        allowed = ports.permissions.has_permission(creator, project, "create_task")
    except Exception as exc:
        error = summarize_error(exc)
        return _Plan(
            "skipped", msg("schedule.permission_failed", name=name, error=error, slot=when)
        )
    if allowed is not True:
        reason = msg("schedule.no_permission", name=name, user=creator, project=project, slot=when)
        return _Plan("skipped", reason)
    task = Task(
        id=automation_task_id(automation.id, slot),
        project_id=project,
        status="queued",
        created_by=creator,
        parent_task_id=None,
        prompt=automation.prompt,
        created_at=now,
        repo_url=automation.repo_url,
    )
    reason = msg("schedule.task_created", name=name, slot=when, task=task.id, project=project)
    return _Plan("task-created", reason, task=task)


def _recognised(automation: Automation, slot: float, task_id: str) -> Msg:
    return msg("schedule.task_recognised", name=automation.name, slot=slot_text(slot), task=task_id)


def _target(plan: _Plan) -> str | None:
    return plan.task.id if plan.task is not None else plan.target


def _apply(ports: Ports, automation: Automation, slot: float, plan: _Plan) -> FiredRun:
    """Materialise a claimed slot. A failure here spends the slot (it was claimed)."""
    try:
        if plan.task is not None:
            with _tolerate_duplicate(ports, plan.task.id):
                ports.tasks.insert_task(plan.task)
        elif plan.result == "followup-queued" and plan.target is not None:
            ports.followups.enqueue_followup(plan.target, automation.prompt)
    except Exception as exc:
        reason = msg(
            "schedule.materialise_error",
            name=automation.name,
            slot=slot_text(slot),
            error=summarize_error(exc),
        )
        return FiredRun(automation.id, slot, "skipped", _target(plan), reason)
    return FiredRun(automation.id, slot, plan.result, _target(plan), plan.reason)


def _audit(ports: Ports, automation: Automation, run: FiredRun, now: float) -> None:
    """One audit record per run; a failing audit log never stops firing (TRN-8 spirit)."""
    with contextlib.suppress(Exception):
        ports.audit.record_audit(
            AuditRecord(
                sender=automation.id,
                kind=AUDIT_KIND,
                target=run.task_id,
                outcome=run.result if run.claimed else "not-fired",
                reason=run.reason.render(DEFAULT_LOCALE),
                time=now,
            )
        )


__all__ = [
    "AUDIT_KIND",
    "DEFAULT_FIRE_LIMIT",
    "FireResult",
    "FiredRun",
    "automation_task_id",
    "fire_due_automations",
]
