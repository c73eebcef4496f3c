"""Contract tests for the core storage ports every adapter shares: TaskStore,
ProjectLookup, CostLookup, PermissionLookup, AuditLog, FollowupQueue and WorldStore.
Each test runs once per entry of STORE_FACTORIES (memory, sqlite, ...)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from support.strategies.sqlite import worlds

from markertools.domain.model import (
    AuditRecord,
    CostRow,
    Environment,
    Followup,
    LineageLink,
    PermissionGrant,
    Project,
    Quota,
    Task,
)
from markertools_adapters.world import World

MakeStore = Callable[[World], Any]


def _task(tid: str, parent: str | None = None, **kw: Any) -> Task:
    return Task(id=tid, project_id=kw.pop("project_id", "p"), parent_task_id=parent, **kw)


# ---- TaskStore -------------------------------------------------------------------------


def test_get_task_and_get_tasks(make_store: MakeStore) -> None:
    store = make_store(World(tasks=(_task("a"), _task("b"), _task("c"))))
    assert store.get_task("a") == _task("a")
    assert store.get_task("zz") is None
    got = store.get_tasks(["c", "zz", "a", "c"])
    assert dict(got) == {"c": _task("c"), "a": _task("a")}
    assert dict(store.get_tasks([])) == {}


@pytest.mark.rule("LIN-4", "LIN-1")
def test_lineage_walks_up_to_a_root(make_store: MakeStore) -> None:
    store = make_store(
        World(tasks=(_task("r"), _task("c1", "r", coordinator_part="x"), _task("g", "c1")))
    )
    assert store.lineage("g", 32) == (
        LineageLink("g", "c1", None),
        LineageLink("c1", "r", "x"),
        LineageLink("r", None, None),
    )
    assert store.lineage("g", 1) == (LineageLink("g", "c1", None), LineageLink("c1", "r", "x"))
    assert store.lineage("g", 0) == (LineageLink("g", "c1", None),)
    assert store.lineage("g", -1) == ()
    assert store.lineage("nope", 32) == ()


@pytest.mark.rule("LIN-4")
def test_lineage_stops_at_a_missing_parent_row(make_store: MakeStore) -> None:
    store = make_store(World(tasks=(_task("a", "ghost"), _task("b", "a"))))
    assert store.lineage("b", 32) == (LineageLink("b", "a"), LineageLink("a", "ghost"))


@pytest.mark.rule("LIN-4")
def test_lineage_cycle_repeats_until_the_bound(make_store: MakeStore) -> None:
    store = make_store(World(tasks=(_task("a", "b"), _task("b", "a"), _task("s", "s"))))
    walk = store.lineage("a", 5)
    assert [link.id for link in walk] == ["a", "b", "a", "b", "a", "b"]
    assert [link.id for link in store.lineage("s", 3)] == ["s"] * 4


@pytest.mark.rule("LIN-3")
def test_count_children_ignores_coordinator_subtasks(make_store: MakeStore) -> None:
    store = make_store(
        World(
            tasks=(
                _task("p0"),
                _task("k1", "p0"),
                _task("k2", "p0", coordinator_part=""),
                _task("k3", "p0", coordinator_part="review"),
                _task("k4", "k1"),
            )
        )
    )
    assert store.count_children("p0") == 2
    assert store.count_children("k1") == 1
    assert store.count_children("none") == 0


def test_insert_task_refuses_an_existing_id(make_store: MakeStore) -> None:
    store = make_store(World(tasks=(_task("a"),)))
    store.insert_task(_task("b", "a", prompt="new", created_at=5.0))
    assert store.get_task("b") == _task("b", "a", prompt="new", created_at=5.0)
    with pytest.raises(ValueError):
        store.insert_task(_task("a", prompt="other"))
    assert store.get_task("a") == _task("a")


@pytest.mark.rule("CTL-4")
def test_transition_is_compare_and_set(make_store: MakeStore) -> None:
    store = make_store(World(tasks=(_task("a", status="running", result_text="r"),)))
    new = store.transition_task(
        "a", "running", {"status": "interrupted", "interrupted_reason": "x"}
    )
    assert new == store.get_task("a")
    assert new.status == "interrupted" and new.interrupted_reason == "x" and new.result_text == "r"
    # the status moved on: a second transition from "running" changes nothing
    assert store.transition_task("a", "running", {"status": "queued"}) is None
    assert store.get_task("a") == new
    assert store.transition_task("missing", "running", {"status": "queued"}) is None
    # an empty change set still checks the status
    assert store.transition_task("a", "interrupted", {}) == new
    assert store.transition_task("a", "running", {}) is None


@pytest.mark.rule("CTL-4")
def test_transition_rejects_unknown_fields(make_store: MakeStore) -> None:
    store = make_store(World(tasks=(_task("a"),)))
    with pytest.raises(ValueError):
        store.transition_task("a", "running", {"status": "queued", "colour": "red"})
    assert store.get_task("a") == _task("a")


@pytest.mark.rule("TLS-1", "TLS-2")
def test_list_tasks_filters_orders_counts_and_limits(make_store: MakeStore) -> None:
    tasks = (
        _task("t1", status="running", prompt="Build the Shop", created_at=10.0),
        _task("t2", status="failed", prompt="shop tests", created_at=20.0),
        _task("t3", status="running", prompt="docs", created_at=20.0),
        _task("t4", status="queued", prompt="SHOP deploy", created_at=5.0),
        _task("x1", project_id="other", prompt="shop", created_at=30.0),
    )
    store = make_store(World(tasks=tasks))
    listing = store.list_tasks("p", status=None, q=None, limit=2)
    assert [t.id for t in listing.rows] == ["t3", "t2"]  # created_at desc, then id desc
    assert listing.total == 4
    assert listing.counts == (("failed", 1), ("queued", 1), ("running", 2))
    shop = store.list_tasks("p", status=None, q="sHoP", limit=50)
    assert [t.id for t in shop.rows] == ["t2", "t1", "t4"]
    assert shop.counts == (("failed", 1), ("queued", 1), ("running", 1))
    running = store.list_tasks("p", status="running", q="shop", limit=50)
    assert [t.id for t in running.rows] == ["t1"] and running.total == 1
    assert store.list_tasks("p", status="merged", q=None, limit=5).total == 0
    assert store.list_tasks("p", status=None, q=None, limit=0).rows == ()
    assert store.list_tasks("nope", status=None, q=None, limit=5).counts == ()


# ---- ProjectLookup / CostLookup -----------------------------------------------------------


def test_get_project(make_store: MakeStore) -> None:
    project = Project(
        id="p", name="shop", repo_url="git@x", environment=Environment("dev", "main", "ready")
    )
    store = make_store(World(projects=(project, Project(id="q"))))
    assert store.get_project("p") == project
    assert store.get_project("q") == Project(id="q")
    assert store.get_project("r") is None


@pytest.mark.rule("CST-2", "QUO-2")
def test_costs_quota_and_unpriced_tokens(make_store: MakeStore) -> None:
    costs = (
        CostRow("a", 2, usd=0.5, tokens=100),
        CostRow("a", 1, usd=None, tokens=40, priced=False),
        CostRow("a", 1, usd=0.25, tokens=7, priced=False),
        CostRow("a", 3, usd=None, tokens=1000, priced=True),  # priced flag but no usd
        CostRow("a", 4, usd=None, tokens=5000, estimated=True, priced=False),
        CostRow("b", 1, usd=None, tokens=9, priced=False),
        CostRow("orphan", 1, usd=None, tokens=11, priced=False),
    )
    store = make_store(
        World(
            tasks=(_task("a", created_by="u"), _task("b", created_by="v")),
            costs=costs,
            quotas=(Quota("u", total_usd=None, used_usd=1.5), Quota("v", 10.0, 2.0)),
        )
    )
    assert store.task_costs("a") == (costs[1], costs[2], costs[0], costs[3], costs[4])
    assert store.task_costs("none") == ()
    assert store.get_quota("u") == Quota("u", None, 1.5)
    assert store.get_quota("w") is None
    assert store.unpriced_tokens("u") == 40 + 7 + 1000
    assert store.unpriced_tokens("v") == 9
    assert store.unpriced_tokens("w") == 0


# ---- PermissionLookup -------------------------------------------------------------------------


@pytest.mark.rule("DOM-6")
def test_permission_lookup(make_store: MakeStore) -> None:
    store = make_store(
        World(
            permissions=(
                PermissionGrant("u", "p", ("read", "create_task")),
                PermissionGrant("u", "p", ("approve_merge",)),
                PermissionGrant("v", "p", ()),
            )
        )
    )
    assert store.has_permission("u", "p", "read")
    assert store.has_permission("u", "p", "approve_merge")
    assert not store.has_permission("u", "q", "read")
    assert not store.has_permission("v", "p", "read")
    assert not store.has_permission(None, "p", "read")
    assert store.export_world(0.0).permissions == (
        PermissionGrant("u", "p", ("approve_merge", "create_task", "read")),
        PermissionGrant("v", "p", ()),
    )


# ---- AuditLog / FollowupQueue ---------------------------------------------------------------


@pytest.mark.rule("TRN-7")
def test_audit_and_followups_keep_insertion_order(make_store: MakeStore) -> None:
    first = AuditRecord("s", "task-cancel", "t", "done", "ok", 5.0)
    store = make_store(World(audit=(first,), followups=(Followup("s", "old"),)))
    records = [
        AuditRecord("s", k, None, "rejected", f"r{i}", float(i)) for i, k in enumerate("zab")
    ]
    for record in records:
        store.record_audit(record)
    store.enqueue_followup("s", "report")
    store.enqueue_followup("t", "other")
    store.enqueue_followup("s", "/goal ship")
    world = store.export_world(9.0)
    assert world.audit == (first, *records)
    assert world.followups == (
        Followup("s", "old"),
        Followup("s", "report"),
        Followup("t", "other"),
        Followup("s", "/goal ship"),
    )


# ---- WorldStore ------------------------------------------------------------------------------


@given(world=worlds)
@settings(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_world_load_then_export_is_the_identity(make_store: MakeStore, world: World) -> None:
    store = make_store(world)
    exported = store.export_world(world.now)
    assert exported == world
    assert repr(exported) == repr(world)  # floats keep their sign and type


def test_export_is_canonical_whatever_the_load_order(make_store: MakeStore) -> None:
    world = World(
        tasks=(_task("b"), _task("a")),
        costs=(CostRow("b", 2), CostRow("a", 9), CostRow("b", 1)),
        permissions=(
            PermissionGrant("v", "p", ("read",)),
            PermissionGrant("u", "p", ("read", "create_task")),
        ),
        quotas=(Quota("z"), Quota("y")),
    )
    exported = make_store(world).export_world(1.0)
    assert [t.id for t in exported.tasks] == ["a", "b"]
    assert [(c.task_id, c.round) for c in exported.costs] == [("a", 9), ("b", 1), ("b", 2)]
    assert [(g.user, g.grants) for g in exported.permissions] == [
        ("u", ("create_task", "read")),
        ("v", ("read",)),
    ]
    assert [q.user for q in exported.quotas] == ["y", "z"]
    assert exported.now == 1.0


def test_world_load_refuses_duplicate_ids(make_store: MakeStore) -> None:
    with pytest.raises(ValueError):
        make_store(World(projects=(Project("p"),), tasks=(_task("a"), _task("a", prompt="x"))))


@pytest.mark.rule("FLT-5")
def test_a_task_inserted_without_created_at_gets_the_store_clocks_now(
    make_store: MakeStore,
) -> None:
    """FLT-5: `Task(...)` leaves created_at at 0 ("not given"); the store stamps its
    clock's now, so a task made through the library never jumps ahead of older ones."""
    import time

    store = make_store(World(tasks=(_task("old", created_at=1000.0),)))
    before = time.time()
    store.insert_task(_task("new"))
    after = time.time()
    stamped = store.get_task("new")
    assert stamped is not None and before <= stamped.created_at <= after
    store.insert_task(_task("given", created_at=42.5))  # a given time is kept
    given = store.get_task("given")
    assert given is not None and given.created_at == 42.5
