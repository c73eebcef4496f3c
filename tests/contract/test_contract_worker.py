"""Worker-loop ports (claim_next_task, take_followups), automation management (SCH-7),
the record writers and firing (SCH-6) on every storage adapter: memory, the toy kit store,
SQLite and PostgreSQL. Only port methods, World loading and export are used."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from markertools import fire_due_automations
from markertools.deliver.automations_admin import (
    delete_automation,
    pause_automation,
    resume_automation,
    update_automation,
)
from markertools.deliver.automations_fire import automation_task_id
from markertools.domain.model import (
    Automation,
    CostRow,
    Environment,
    PermissionGrant,
    Project,
    Quota,
    Task,
)
from markertools.domain.ports import AutomationNameTaken
from markertools.domain.schedule import is_due, next_run_at
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

MakeStore = Callable[[World], Any]
NOW = 1_798_333_200.0


def queued(tid: str, created: float, project: str = "p1") -> Task:
    return Task(tid, project, status="queued", created_by="u1", created_at=created)


def am(aid: str, **kw: Any) -> Automation:
    fields: dict[str, Any] = {
        "project_id": "p1",
        "name": aid,
        "prompt": f"run {aid}",
        "created_by": "u1",
        "created_at": NOW - 100,
    }
    fields.update(kw)
    return Automation(aid, **fields)


GRANTS = (PermissionGrant("u1", "p1", ("read", "create_task")),)


# ---- claim_next_task -------------------------------------------------------------------


def test_claims_go_oldest_first_set_the_host_and_end_with_none(make_store: MakeStore) -> None:
    store = make_store(
        World(
            now=NOW,
            tasks=(
                queued("b", 2.0),
                queued("a", 2.0),
                queued("c", 1.0),
                queued("x", 0.0, project="p2"),
                Task("r", "p1", status="running", created_at=0.0),
            ),
        )
    )
    claimed = [store.claim_next_task("p1", "host-1") for _ in range(4)]
    assert [t.id if t else None for t in claimed] == ["c", "a", "b", None]
    assert all(t.status == "running" and t.host == "host-1" for t in claimed if t)
    assert store.get_task("a").status == "running"
    assert store.get_task("x").status == "queued"


def test_concurrent_claimers_never_share_a_task(make_store: MakeStore) -> None:
    store = make_store(World(now=NOW, tasks=tuple(queued(f"t{i:03}", float(i)) for i in range(60))))
    got: list[str] = []
    lock = threading.Lock()

    def worker(host: str) -> None:
        while (task := store.claim_next_task("p1", host)) is not None:
            with lock:
                got.append(task.id)

    threads = [threading.Thread(target=worker, args=(f"h{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == [f"t{i:03}" for i in range(60)]


# ---- take_followups --------------------------------------------------------------------


def test_take_followups_returns_in_order_once(make_store: MakeStore) -> None:
    store = make_store(World(now=NOW, tasks=(queued("t1", 0.0), queued("t2", 0.0))))
    for text in ("one", "two", "three"):
        store.enqueue_followup("t1", text)
    store.enqueue_followup("t2", "other")
    assert store.take_followups("t1") == ("one", "two", "three")
    assert store.take_followups("t1") == ()
    store.enqueue_followup("t1", "four")
    assert store.take_followups("t1") == ("four",)
    assert store.take_followups("t2") == ("other",)
    exported = store.export_world(NOW).followups
    assert [(f.task_id, f.text, f.consumed) for f in exported] == [
        ("t1", "one", True),
        ("t1", "two", True),
        ("t1", "three", True),
        ("t2", "other", True),
        ("t1", "four", True),
    ]


def test_consumed_followups_round_trip_through_a_world(make_store: MakeStore) -> None:
    from markertools.domain.model import Followup

    world = World(
        now=NOW,
        tasks=(queued("t1", 0.0),),
        followups=(Followup("t1", "old", consumed=True), Followup("t1", "new")),
    )
    store = make_store(world)
    assert store.export_world(NOW) == world
    assert store.take_followups("t1") == ("new",)


# ---- record writers --------------------------------------------------------------------


def test_record_writers(make_store: MakeStore) -> None:
    store = make_store(World(now=NOW, tasks=(Task("t1", "p1", created_by="u1"),)))
    store.put_project(Project("p1", "shop", None, Environment("dev", "main", "ready")))
    store.put_project(Project("p1", "shop2"))
    assert store.get_project("p1") == Project("p1", "shop2")
    store.set_permissions("u1", "p1", ["read", "create_task"])
    assert store.has_permission("u1", "p1", "create_task")
    store.set_permissions("u1", "p1", ["read"])
    assert not store.has_permission("u1", "p1", "create_task")
    assert store.has_permission("u1", "p1", "read")
    store.put_quota(Quota("u1", 10.0, 1.0))
    assert store.charge_quota("u1", 2.5) == Quota("u1", 10.0, 3.5)
    assert store.charge_quota("nobody", 1.0) is None
    store.put_quota(Quota("u1", None, 0.0))
    assert store.get_quota("u1") == Quota("u1", None, 0.0)
    store.record_cost(CostRow("t1", 1, None, 500, False, False))
    store.record_cost(CostRow("t1", 1, 0.5, 100, False, True))
    assert store.task_costs("t1") == (
        CostRow("t1", 1, None, 500, False, False),
        CostRow("t1", 1, 0.5, 100, False, True),
    )
    assert store.unpriced_tokens("u1") == 500
    world = store.export_world(NOW)
    assert world.permissions == (PermissionGrant("u1", "p1", ("read",)),)


# ---- automation management (SCH-7) -----------------------------------------------------


@pytest.mark.rule("SCH-7")
def test_pause_resume_update_delete_keep_the_schedule(make_store: MakeStore) -> None:
    store = make_store(World(now=NOW, automations=(am("a1"), am("a2", project_id="p2"))))
    assert [a.id for a in store.list_automations(None)] == ["a1", "a2"]
    assert [a.id for a in store.list_automations("p1")] == ["a1"]

    paused = pause_automation(store, "a1")
    assert paused.ok and paused.automation.status == "paused"
    assert store.due_automations(NOW) == (store.get_automation("a2"),)  # paused: never due
    assert not store.claim_automation("a1", NOW - 100, NOW)
    again = pause_automation(store, "a1")
    assert not again.ok and again.reason.render("en") == (
        "automation 'a1' is paused, not active; nothing changed"
    )
    assert resume_automation(store, "a1").ok
    assert [a.id for a in store.due_automations(NOW)] == ["a1", "a2"]

    later = NOW + 3600
    changed = update_automation(
        store, "a1", NOW, prompt="new", interval_seconds=3600, first_run_at=later, once=True
    )
    assert changed.ok, changed.reason.render("en")
    row = store.get_automation("a1")
    assert (row.prompt, row.interval_seconds, row.first_run_at, row.run_once) == (
        "new",
        3600,
        later,
        True,
    )
    assert not is_due(row, NOW) and [a.id for a in store.due_automations(later)] == ["a1", "a2"]
    assert store.claim_automation("a1", later, later)
    assert store.due_automations(later + 10**6) == (store.get_automation("a2"),)  # once: spent
    refused = update_automation(store, "a1", later, first_run_at=later + 10)
    assert not refused.ok and "only applies before the first run" in refused.reason.render("en")
    past = update_automation(store, "a2", NOW, first_run_at=NOW - 1)
    assert not past.ok and "is before the current time" in past.reason.render("en")
    bad = update_automation(store, "a2", NOW, interval_seconds=59)
    assert not bad.ok and bad.reason.render("en") == (
        "interval_seconds must be an integer from 60 to 2592000, not 59"
    )

    assert delete_automation(store, "a2").ok
    assert [a.id for a in store.list_automations(None)] == ["a1"]
    assert store.due_automations(later + 10**7) == ()
    assert not delete_automation(store, "a2").ok
    assert store.update_automation("a2", {"prompt": "x"}) is None
    with pytest.raises(ValueError):
        store.update_automation("a1", {"name": "x"})


@pytest.mark.rule("SCH-7", "AUT-3")
def test_resume_refuses_a_name_an_active_automation_took(make_store: MakeStore) -> None:
    store = make_store(World(now=NOW, automations=(am("a1", name="n", status="paused"),)))
    store.insert_automation(am("a2", name="n"))
    with pytest.raises(AutomationNameTaken):
        store.set_automation_status("a1", "paused", "active")
    result = resume_automation(store, "a1")
    assert not result.ok and result.reason.render("en") == (
        "automation 'a1' cannot be resumed: an active automation of its project is already "
        "named 'n' (AUT-3); rename or pause that one first"
    )
    assert store.get_automation("a1").status == "paused"


# ---- firing (SCH-6) --------------------------------------------------------------------


@pytest.mark.rule("SCH-6")
def test_fire_creates_each_task_once_and_audits(make_store: MakeStore) -> None:
    store = make_store(
        World(
            now=NOW,
            permissions=GRANTS,
            tasks=(Task("lead", "p1", created_by="u1"),),
            automations=(
                am("a1", repo_url="https://git.example/r.git"),
                am("hb", bind="heartbeat", bound_task_id="lead"),
                am("later", first_run_at=NOW + 60),
            ),
        )
    )
    ports = store_ports(
        store, clock=VirtualClock(NOW), random=SeededRandom(1), executor=NoopExecutor()
    )
    fired = fire_due_automations(ports, NOW)
    assert [(r.automation_id, r.result) for r in fired] == [
        ("a1", "task-created"),
        ("hb", "followup-queued"),
    ]
    task = store.get_task(automation_task_id("a1", NOW - 100))
    assert (task.status, task.prompt, task.created_by, task.parent_task_id, task.repo_url) == (
        "queued",
        "run a1",
        "u1",
        None,
        "https://git.example/r.git",
    )
    assert store.take_followups("lead") == ("run hb",)
    assert fire_due_automations(ports, NOW) == ()  # claimed: nothing twice
    audit = [a for a in store.export_world(NOW).audit if a.kind == "automation-fire"]
    assert [(a.sender, a.outcome, a.target) for a in audit] == [
        ("a1", "task-created", task.id),
        ("hb", "followup-queued", "lead"),
    ]
    assert next_run_at(store.get_automation("a1")) == NOW - 100 + 86400


@pytest.mark.rule("SCH-6", "SCH-4")
def test_two_concurrent_firers_create_each_task_once(make_store: MakeStore) -> None:
    autos = tuple(am(f"a{i}") for i in range(8))
    store = make_store(World(now=NOW, permissions=GRANTS, automations=autos))
    ports = store_ports(
        store, clock=VirtualClock(NOW), random=SeededRandom(1), executor=NoopExecutor()
    )
    results: list[Any] = []
    barrier = threading.Barrier(2)

    def fire() -> None:
        barrier.wait()
        results.extend(fire_due_automations(ports, NOW))

    threads = [threading.Thread(target=fire) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.automation_id for r in results) == [f"a{i}" for i in range(8)]
    tasks = store.export_world(NOW).tasks
    assert sorted(t.id for t in tasks) == sorted(automation_task_id(a.id, NOW - 100) for a in autos)
