"""Storage contract: TaskStore, ProjectLookup, CostLookup, PermissionLookup, AuditLog,
FollowupQueue and WorldStore semantics, as the port docstrings state them. Runs once per
storage adapter (see conftest.STORE_FACTORIES); tests only port behaviour, never internals."""

from __future__ import annotations

import threading

import attrs
import pytest

from markertools.domain.model import (
    Attempt,
    AuditRecord,
    Automation,
    CostRow,
    Environment,
    Followup,
    PermissionGrant,
    Project,
    Quota,
    Task,
    Todo,
)
from markertools_adapters.world import World

NOW = 1_800_000_000.0


def t(task_id: str, **kw) -> Task:
    kw.setdefault("project_id", "p1")
    kw.setdefault("created_by", "u1")
    return Task(task_id, **kw)


def world(*tasks: Task, **kw) -> World:
    return World(now=NOW, tasks=tasks, **kw)


# ---- reads -----------------------------------------------------------------------------------


def test_get_task_returns_the_stored_record_or_none(make_store):
    full = t(
        "a",
        status="failed",
        parent_task_id="root",
        executor="docker",
        environment_id="e1",
        model="m",
        effort="high",
        goal_mode=True,
        verify_command="make",
        is_coordinator=True,
        coordinator_part="p",
        prompt="héllo 🙂",
        result_text="r",
        error_text="e",
        actual_model="am",
        worktree="/w",
        host="h",
        created_at=12.5,
        goal="g",
        interrupted_reason="why",
        auto_resume_count=3,
    )
    store = make_store(world(full))
    assert store.get_task("a") == full
    assert store.get_task("zz") is None


def test_get_tasks_returns_existing_ids_only(make_store):
    store = make_store(world(t("a"), t("b"), t("c")))
    got = store.get_tasks(["c", "missing", "a", "a"])
    assert dict(got) == {"a": store.get_task("a"), "c": store.get_task("c")}
    assert dict(store.get_tasks([])) == {}


@pytest.mark.rule("LIN-4")
def test_lineage_walks_up_from_the_task_itself(make_store):
    store = make_store(
        world(t("r"), t("m", parent_task_id="r", coordinator_part="x"), t("c", parent_task_id="m"))
    )
    links = store.lineage("c", 32)
    assert [(x.id, x.parent_task_id, x.coordinator_part) for x in links] == [
        ("c", "m", None),
        ("m", "r", "x"),
        ("r", None, None),
    ]
    assert [x.id for x in store.lineage("c", 1)] == ["c", "m"]
    assert [x.id for x in store.lineage("c", 0)] == ["c"]
    assert store.lineage("unknown", 32) == ()


@pytest.mark.rule("LIN-4")
def test_lineage_stops_at_a_missing_parent_and_repeats_a_cycle_to_the_bound(make_store):
    store = make_store(
        world(
            t("o", parent_task_id="ghost"), t("a", parent_task_id="b"), t("b", parent_task_id="a")
        )
    )
    assert [x.id for x in store.lineage("o", 32)] == ["o"]
    cyc = store.lineage("a", 5)
    assert [x.id for x in cyc] == ["a", "b", "a", "b", "a", "b"]


@pytest.mark.rule("LIN-3")
def test_count_children_excludes_coordinator_subtasks(make_store):
    store = make_store(
        world(
            t("p"),
            t("k1", parent_task_id="p"),
            t("k2", parent_task_id="p"),
            t("s1", parent_task_id="p", coordinator_part="part"),
            t("g", parent_task_id="k1"),
            t("e", parent_task_id="p", coordinator_part=""),
        )
    )
    assert store.count_children("p") == 3
    assert store.count_children("k1") == 1
    assert store.count_children("nobody") == 0


# ---- writes ------------------------------------------------------------------------------------


def test_insert_task_adds_and_refuses_an_existing_id(make_store):
    store = make_store(world(t("a")))
    new = t("b", status="queued", parent_task_id="a", created_at=NOW)
    store.insert_task(new)
    assert store.get_task("b") == new
    with pytest.raises(Exception):  # noqa: B017 - any adapter error type
        store.insert_task(t("a", prompt="other"))
    assert store.get_task("a") == t("a")


@pytest.mark.rule("CTL-4")
def test_transition_is_compare_and_set_on_the_status(make_store):
    store = make_store(world(t("a", status="running", result_text="x")))
    assert store.transition_task("a", "queued", {"status": "interrupted"}) is None
    assert store.get_task("a").status == "running"
    assert store.transition_task("zz", "running", {"status": "interrupted"}) is None
    updated = store.transition_task(
        "a", "running", {"status": "interrupted", "interrupted_reason": "r"}
    )
    assert updated == t("a", status="interrupted", result_text="x", interrupted_reason="r")
    assert store.get_task("a") == updated


@pytest.mark.rule("CTL-3")
def test_transition_can_clear_fields_to_null(make_store):
    store = make_store(
        world(t("a", status="failed", result_text="r", error_text="e", actual_model="m"))
    )
    changes = {"status": "queued", "result_text": None, "error_text": None, "actual_model": None}
    assert store.transition_task("a", "failed", changes) == t("a", status="queued")


@pytest.mark.rule("CTL-4")
def test_concurrent_transitions_have_exactly_one_winner(make_store):
    store = make_store(world(t("a", status="running")))
    barrier = threading.Barrier(8)
    results = []

    def worker(i):
        barrier.wait()
        results.append(
            store.transition_task(
                "a", "running", {"status": "interrupted", "interrupted_reason": f"w{i}"}
            )
        )

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    assert store.get_task("a") == winners[0]


# ---- task-list ---------------------------------------------------------------------------------


@pytest.mark.rule("TLS-1", "TLS-2")
def test_list_tasks_filters_orders_counts_and_limits(make_store):
    tasks = [
        t("a", status="failed", created_at=1.0, prompt="Fix LOGIN bug"),
        t("b", status="running", created_at=3.0, prompt="fix login page"),
        t("c", status="failed", created_at=3.0, prompt="write docs"),
        t("d", status="queued", created_at=2.0, prompt="LOGIN tests"),
        t("x", project_id="p2", status="failed", created_at=9.0, prompt="fix login"),
    ]
    store = make_store(world(*tasks))
    everything = store.list_tasks("p1", status=None, q=None, limit=50)
    assert [r.id for r in everything.rows] == ["c", "b", "d", "a"]  # created_at desc, id desc
    assert everything.total == 4
    assert dict(everything.counts) == {"failed": 2, "running": 1, "queued": 1}
    assert list(everything.counts) == sorted(everything.counts)
    limited = store.list_tasks("p1", status=None, q="login", limit=2)
    assert [r.id for r in limited.rows] == ["b", "d"]
    assert limited.total == 3
    assert dict(limited.counts) == {"failed": 1, "running": 1, "queued": 1}
    failed = store.list_tasks("p1", status="failed", q="LoGiN", limit=10)
    assert [r.id for r in failed.rows] == ["a"] and failed.total == 1
    none = store.list_tasks("p3", status=None, q=None, limit=10)
    assert (none.rows, none.total, none.counts) == ((), 0, ())


def test_list_tasks_q_is_plain_text_not_a_pattern(make_store):
    store = make_store(world(t("a", prompt="100% done_ok"), t("b", prompt="1000 doneXok")))
    assert [r.id for r in store.list_tasks("p1", status=None, q="0% done_", limit=9).rows] == ["a"]


# ---- lookups -----------------------------------------------------------------------------------


@pytest.mark.rule("DOM-6")
def test_permissions_are_per_user_and_project_and_never_for_a_null_user(make_store):
    grants = (
        PermissionGrant("u1", "p1", ("read", "create_task")),
        PermissionGrant("u2", "p2", ("approve_merge",)),
    )
    store = make_store(World(now=NOW, permissions=grants))
    assert store.has_permission("u1", "p1", "read") is True
    assert store.has_permission("u1", "p1", "approve_merge") is False
    assert store.has_permission("u1", "p2", "read") is False
    assert store.has_permission("u2", "p2", "approve_merge") is True
    assert store.has_permission(None, "p1", "read") is False


def test_projects_lookup(make_store):
    p = Project("p1", "shop", "https://git.example/shop", Environment("dev", "main", "ready"))
    store = make_store(World(now=NOW, projects=(p, Project("p2"))))
    assert store.get_project("p1") == p
    assert store.get_project("p2") == Project("p2")
    assert store.get_project("p9") is None


@pytest.mark.rule("CST-2", "QUO-2", "DOM-7")
def test_costs_quotas_and_unpriced_tokens(make_store):
    costs = (
        CostRow("a", 2, usd=0.5, tokens=10),
        CostRow("a", 1, usd=None, tokens=7, priced=False),
        CostRow("a", 3, usd=None, tokens=3, priced=False, estimated=True),
        CostRow("b", 1, usd=None, tokens=100, priced=False),
        CostRow("c", 1, usd=None, tokens=1000, priced=False),
        CostRow("a", 4, usd=None, tokens=20, priced=True),
    )
    quotas = (Quota("u1", 50.0, 12.5), Quota("u2", None, 3.0))
    store = make_store(world(t("a"), t("b"), t("c", created_by="u2"), costs=costs, quotas=quotas))
    assert sorted(store.task_costs("a"), key=lambda r: (r.round, r.tokens)) == sorted(
        [c for c in costs if c.task_id == "a"], key=lambda r: (r.round, r.tokens)
    )
    assert store.task_costs("zz") == ()
    assert store.get_quota("u1") == Quota("u1", 50.0, 12.5)
    assert store.get_quota("u2") == Quota("u2", None, 3.0)
    assert store.get_quota("u3") is None
    assert store.unpriced_tokens("u1") == 7 + 100 + 20
    assert store.unpriced_tokens("u2") == 1000
    assert store.unpriced_tokens("nobody") == 0


# ---- audit, follow-ups, world round trip -------------------------------------------------------


@pytest.mark.rule("TRN-7")
def test_audit_and_followups_keep_insertion_order(make_store):
    store = make_store(world(t("a"), t("b")))
    records = [AuditRecord("a", "task-create", None, "done", f"r{i}", NOW + i) for i in range(3)]
    for rec in records:
        store.record_audit(rec)
    store.enqueue_followup("b", "second-queue first")
    store.enqueue_followup("a", "report")
    store.enqueue_followup("a", "/goal x")
    exported = store.export_world(NOW)
    assert exported.audit == tuple(records)
    assert exported.followups == (
        Followup("b", "second-queue first"),
        Followup("a", "report"),
        Followup("a", "/goal x"),
    )


FULL_WORLD = World(
    now=NOW,
    projects=(Project("p1", "shop", None, Environment("dev", "main", "ready")), Project("p0")),
    permissions=(PermissionGrant("u1", "p1", ("approve_merge", "create_task", "read")),),
    tasks=(t("t2", created_at=5.0, parent_task_id="t1"), t("t1", status="queued")),
    todos=(
        Todo("d2", "p1", "second", status="completed", completed_at=9.0, created_at=2.0),
        Todo("d1", "p1", "first", due_at=99.5, sort_order=3),
    ),
    automations=(
        Automation(
            "a1", "p1", "nightly", "run it", first_run_at=NOW + 60, created_by="u1", created_at=NOW
        ),
    ),
    costs=(CostRow("t1", 1, usd=0.25, tokens=12), CostRow("t1", 2, tokens=5, priced=False)),
    quotas=(Quota("u1", 50.0, 12.5), Quota("u0", None, 0.0)),
    attempts=(Attempt("t1", 1, "platform_fresh", "restart", -1, "out", None, 3.0),),
    audit=(AuditRecord("t1", "turn", None, "discarded", "why", 4.0),),
    followups=(Followup("t1", "hello"),),
)


def canonical(w: World) -> World:
    return attrs.evolve(
        w,
        projects=tuple(sorted(w.projects, key=lambda p: p.id)),
        tasks=tuple(sorted(w.tasks, key=lambda x: x.id)),
        todos=tuple(sorted(w.todos, key=lambda x: x.id)),
        quotas=tuple(sorted(w.quotas, key=lambda x: x.user)),
        costs=tuple(sorted(w.costs, key=lambda c: (c.task_id, c.round))),
    )


def test_export_returns_every_table_in_canonical_order(make_store):
    store = make_store(FULL_WORLD)
    exported = store.export_world(NOW + 7)
    assert exported == attrs.evolve(canonical(FULL_WORLD), now=NOW + 7)
    again = make_store(exported).export_world(NOW + 7)
    assert again == exported
