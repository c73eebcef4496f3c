"""fire_due_automations (SCH-6): the gates at fire time with the reasons a user reads, and
the crash semantics - a process killed between the claim and the materialisation never
fires a slot twice and never loses it (docs/todos-automations.md "Firing")."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from markertools import fire_due_automations
from markertools.deliver.automations_fire import automation_task_id
from markertools.domain.model import Automation, PermissionGrant, Quota, Task
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.memory import MemoryStore
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

NOW = 1_798_333_200.0
SLOT = NOW - 100  # created_at: due at creation
SLOT_TEXT = "slot 1798333100 (2026-12-27T08:58:20+08:00)"
GRANTS = (PermissionGrant("u1", "p1", ("read", "create_task")),)


class Killed(BaseException):
    """The process dies here (not an Exception: nothing in the library catches it)."""


def am(aid: str = "a1", **kw: Any) -> Automation:
    fields: dict[str, Any] = {
        "project_id": "p1",
        "name": "nightly",
        "prompt": "run it",
        "created_by": "u1",
        "created_at": SLOT,
    }
    fields.update(kw)
    return Automation(aid, **fields)


def store_with(*automations: Automation, **world: Any) -> MemoryStore:
    world.setdefault("permissions", GRANTS)
    return MemoryStore.from_world(World(now=NOW, automations=automations, **world))


def ports_of(store: Any, *, journal: Any = None) -> Any:
    return store_ports(
        store,
        clock=VirtualClock(NOW),
        random=SeededRandom(1),
        executor=NoopExecutor(),
        journal=journal,
    )


def reasons(store: MemoryStore) -> list[tuple[str, str]]:
    return [(a.outcome, a.reason) for a in store.audit_records() if a.kind == "automation-fire"]


# ---- gates at fire time ------------------------------------------------------------------


@pytest.mark.rule("SCH-6")
@pytest.mark.parametrize(
    ("automation", "world", "reason"),
    [
        (
            am(created_by="u2"),
            {},
            "skipped: the creator of automation 'nightly' (u2) lacks the 'create_task' "
            f"permission on project p1; no task was created and {SLOT_TEXT} counts as spent",
        ),
        (
            am(created_by=None),
            {},
            "skipped: automation 'nightly' has no creator, so nobody holds the 'create_task' "
            f"permission for its run; no task was created and {SLOT_TEXT} counts as spent",
        ),
        (
            am(),
            {"quotas": (Quota("u1", 5.0, 5.0),)},
            "skipped: the quota of the creator of automation 'nightly' (u1) is exhausted; no "
            f"task was created and {SLOT_TEXT} counts as spent",
        ),
        (
            am(bind="heartbeat", bound_task_id="gone"),
            {},
            "skipped: the task gone that heartbeat automation 'nightly' wakes does not exist; "
            f"nothing was queued and {SLOT_TEXT} counts as spent",
        ),
        (
            am(bind="heartbeat", bound_task_id="t1"),
            {"tasks": (Task("t1", "p1", status="failed"),)},
            "skipped: the task t1 that heartbeat automation 'nightly' wakes is failed; nothing "
            f"was queued and {SLOT_TEXT} counts as spent",
        ),
    ],
)
def test_a_refusal_spends_the_slot_and_is_audited(
    automation: Automation, world: dict[str, Any], reason: str
) -> None:
    store = store_with(automation, **world)
    (run,) = fire_due_automations(ports_of(store), NOW)
    assert (run.result, run.reason.render("en")) == ("skipped", reason)
    assert reasons(store) == [("skipped", reason)]
    assert store.get_automation("a1").run_count == 1  # spent
    assert store.get_task(automation_task_id("a1", SLOT)) is None
    assert fire_due_automations(ports_of(store), NOW) == ()


@pytest.mark.rule("SCH-6")
def test_a_failed_permission_lookup_refuses_fail_closed() -> None:
    store = store_with(am())

    class Broken:
        def has_permission(self, user: str | None, project: str, permission: str) -> bool:
            raise OSError("acl service down")

    ports = attrs.evolve(ports_of(store), permissions=Broken())
    (run,) = fire_due_automations(ports, NOW)
    assert run.reason.render("en") == (
        "skipped: the 'create_task' permission lookup for automation 'nightly' failed "
        f"(OSError: acl service down), so the run is refused (fail closed); {SLOT_TEXT} "
        "counts as spent"
    )


@pytest.mark.rule("SCH-6", "SCH-7")
def test_a_paused_automation_never_fires() -> None:
    store = store_with(am(status="paused"))
    assert fire_due_automations(ports_of(store), NOW + 10**7) == ()


@pytest.mark.rule("SCH-6")
def test_a_port_failure_before_the_claim_leaves_the_slot_due() -> None:
    store = store_with(am())
    calls = {"n": 0}
    real = store.insert_task

    def flaky(task: Task) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError("disk full")
        real(task)

    store.insert_task = flaky  # type: ignore[method-assign]
    (first,) = fire_due_automations(ports_of(store), NOW)
    assert (first.result, first.claimed) == ("skipped", False)
    assert first.reason.render("en") == (
        f"not fired: automation 'nightly' could not be fired for {SLOT_TEXT} (OSError: disk "
        "full); the slot was not claimed and is tried again by the next fire"
    )
    (second,) = fire_due_automations(ports_of(store), NOW)
    assert second.result == "task-created"


# ---- crash semantics ----------------------------------------------------------------------


@pytest.mark.rule("SCH-6")
def test_killed_between_materialising_and_claiming_the_rerun_recognises_the_task() -> None:
    """Without a transaction the task is created first, the slot claimed second: a kill
    in between leaves the task; the next fire finds it by its derived id (automation id,
    slot), creates nothing and claims the slot - exactly once, never lost."""
    store = store_with(am())
    real_claim = store.claim_automation

    def killed(*args: Any) -> bool:
        raise Killed

    store.claim_automation = killed  # type: ignore[method-assign]
    with pytest.raises(Killed):
        fire_due_automations(ports_of(store), NOW)
    task_id = automation_task_id("a1", SLOT)
    assert store.get_task(task_id) is not None and store.get_automation("a1").run_count == 0

    store.claim_automation = real_claim  # type: ignore[method-assign]
    (run,) = fire_due_automations(ports_of(store), NOW)
    assert (run.result, run.task_id) == ("task-created", task_id)
    assert run.reason.render("en") == (
        f"automation 'nightly' fired for {SLOT_TEXT}: task {task_id} had already been "
        "created for this slot by an interrupted earlier fire; it was kept (not created "
        "twice) and the slot is now claimed"
    )
    assert [t.id for t in store.export_world(NOW).tasks] == [task_id]
    assert store.get_automation("a1").run_count == 1
    assert fire_due_automations(ports_of(store), NOW) == ()


@pytest.mark.rule("SCH-6")
@pytest.mark.parametrize("bind", [None, "heartbeat"])
def test_killed_inside_the_transaction_the_rerun_fires_the_slot_once(bind: str | None) -> None:
    """With `ports.journal.atomic()` claim + materialisation + audit commit together: a
    kill after the claim rolls the claim back, and the next fire runs the slot once."""
    store = store_with(
        am(bind=bind, bound_task_id="lead" if bind else None),
        tasks=(Task("lead", "p1", created_by="u1"),),
    )
    ports = ports_of(store, journal=store)
    real_insert, real_enqueue = store.insert_task, store.enqueue_followup

    def killed(*args: Any) -> None:
        raise Killed

    store.insert_task = killed  # type: ignore[method-assign]
    store.enqueue_followup = killed  # type: ignore[method-assign]
    with pytest.raises(Killed):
        fire_due_automations(ports, NOW)
    assert store.get_automation("a1").run_count == 0  # the claim was rolled back
    store.insert_task, store.enqueue_followup = real_insert, real_enqueue  # type: ignore[method-assign]
    (run,) = fire_due_automations(ports, NOW)
    assert run.result == ("followup-queued" if bind else "task-created")
    assert fire_due_automations(ports, NOW) == ()
    if bind:
        assert store.take_followups("lead") == ("run it",)
    else:
        assert [t.id for t in store.export_world(NOW).tasks] == sorted(
            ["lead", automation_task_id("a1", SLOT)]
        )
    assert len(reasons(store)) == 1


@pytest.mark.rule("SCH-6")
def test_a_heartbeat_without_a_transaction_is_claimed_before_it_is_queued() -> None:
    """No id to recognise a follow-up by: claim first, so a kill never queues it twice
    (it loses that one wake-up instead)."""
    store = store_with(
        am(bind="heartbeat", bound_task_id="lead"), tasks=(Task("lead", "p1", created_by="u1"),)
    )

    def killed(*args: Any) -> None:
        raise Killed

    store.enqueue_followup = killed  # type: ignore[method-assign]
    with pytest.raises(Killed):
        fire_due_automations(ports_of(store), NOW)
    assert store.get_automation("a1").run_count == 1
    assert fire_due_automations(ports_of(store), NOW) == ()
    assert store.followups_for("lead") == ()


def test_limit_caps_the_automations_of_one_call() -> None:
    store = store_with(am("a1"), am("a2", name="b"), am("a3", name="c"))
    assert [r.automation_id for r in fire_due_automations(ports_of(store), NOW, limit=2)] == [
        "a1",
        "a2",
    ]
    assert [r.automation_id for r in fire_due_automations(ports_of(store), NOW)] == ["a3"]
