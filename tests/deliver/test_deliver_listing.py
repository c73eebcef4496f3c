"""task-list (TLS-1/2), task-cost (CST-1/2) and quota-status (QUO-1/2) through delivery."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.strategies.core import FixedPermissions, RaisingPermissions, make_world, rig, task

from markertools import Command
from markertools.deliver.handlers.read import summarize_costs, usd
from markertools.domain.model import CostRow, Quota
from markertools.parse.params import QuotaStatusParams, TaskCostParams, TaskListParams


def listing(**kw):
    return Command("task-list", 1, TaskListParams(**kw))


def cost(target):
    return Command("task-cost", 1, TaskCostParams(target))


def quota(*ignored):
    return Command("quota-status", 1, QuotaStatusParams(tuple(ignored)))


def text(report, index=0):
    return report.entries[index].reason.render("en")


def many_tasks():
    tasks = [task("t1", created_at=0.0, prompt="the sender")]
    statuses = ["queued", "running", "failed", "failed", "completed"]
    for i in range(25):
        tasks.append(
            task(
                f"k{i:02d}",
                status=statuses[i % 5],
                created_at=float(100 + i),
                prompt=f"Job {i} FIX login\nline two",
            )
        )
    tasks.append(task("far", project="p2", prompt="fix login elsewhere", created_at=999.0))
    return tasks


@pytest.mark.rule("TLS-1", "TLS-2")
def test_task_list_newest_first_with_counts_and_more():
    r = rig(make_world(*many_tasks()))
    before = r.world()
    out = text(r.deliver(listing(limit=3)))
    assert "26 task(s) of your project match" in out
    assert "completed 5, failed 10, queued 5, running 6" in out
    assert out.index("k24") < out.index("k23") < out.index("k22")
    assert "k21" not in out
    assert "23 more not shown" in out
    assert "far" not in out  # other projects never appear
    assert r.world().tasks == before.tasks  # read-only


@pytest.mark.rule("TLS-1", "TLS-2")
def test_task_list_filters_by_status_and_case_insensitive_prompt_substring():
    r = rig(make_world(*many_tasks()))
    out = text(r.deliver(listing(status="failed", q="fix LOGIN")))
    assert "10 task(s) of your project match" in out
    assert "failed 10" in out and "more not shown" not in out
    assert "far" not in out
    empty = text(r.deliver(listing(q="no such words")))
    assert "no task of your project matches" in empty


@pytest.mark.rule("TLS-1")
def test_task_list_rows_show_the_start_of_the_prompt_on_one_line():
    r = rig(make_world(task("t1", prompt="x" * 500 + "\n```task-create\n{}\n```")))
    out = text(r.deliver(listing()))
    assert "x" * 79 + "…" in out
    assert "x" * 81 not in out


@pytest.mark.rule("TLS-2", "GAT-4")
@pytest.mark.parametrize(
    ("perms", "reason"),
    [
        (FixedPermissions([]), "your creator (u1) lacks the 'read' permission on project p1"),
        (
            RaisingPermissions(),
            "the 'read' permission lookup failed (ConnectionError: permission service "
            "unreachable); denied, because a failed lookup never grants",
        ),
    ],
)
def test_task_list_requires_read(perms, reason):
    r = rig(make_world(task("t1")), permissions=perms)
    entry = r.deliver(listing()).entries[0]
    assert entry.outcome == "rejected"
    assert entry.reason.render("en") == reason


# ---- task-cost ----------------------------------------------------------------------------------


COSTS = (
    CostRow("t2", 1, usd=0.12, tokens=3000),
    CostRow("t2", 2, usd=0.08, tokens=1000, estimated=True),
    CostRow("t2", 2, usd=None, tokens=500, priced=False),
    CostRow("t2", 3, usd=None, tokens=250, priced=True),  # priced flag but no amount: unpriced
    CostRow("t2", 3, usd=None, tokens=40, priced=False, estimated=True),
)


@pytest.mark.rule("CST-2")
def test_cost_sums_priced_rows_splits_tokens_and_lists_unpriced_separately():
    r = rig(make_world(task("t1"), task("t2", parent_task_id="t1"), costs=COSTS))
    out = text(r.deliver(cost("t2")))
    assert "$0.20 over 2 priced row(s)" in out
    assert "3750 actual, 1040 estimated" in out
    assert "3 round(s)" in out
    assert "750 actual token(s) have no price; they are NOT counted as $0" in out


@pytest.mark.rule("CST-2")
def test_cost_without_priced_rows_never_says_zero_dollars():
    rows = (CostRow("t2", 1, usd=None, tokens=900, priced=False),)
    r = rig(make_world(task("t1"), task("t2"), costs=rows))
    out = text(r.deliver(cost("t2")))
    assert "$0" not in out.replace("NOT counted as $0", "")
    assert "dollars unknown" in out and "900 actual token(s) have no price" in out


@given(
    st.lists(
        st.builds(
            CostRow,
            task_id=st.just("t"),
            round=st.integers(1, 5),
            usd=st.none() | st.floats(0, 100),
            tokens=st.integers(0, 10**6),
            estimated=st.booleans(),
            priced=st.booleans(),
        ),
        max_size=20,
    )
)
@pytest.mark.rule("CST-2")
def test_cost_summary_partitions_the_tokens(rows):
    s = summarize_costs(rows)
    assert s.actual_tokens + s.estimated_tokens == sum(r.tokens for r in rows)
    assert s.unpriced_actual_tokens <= s.actual_tokens
    assert s.priced_rows == sum(1 for r in rows if r.priced and r.usd is not None)
    assert s.rounds == len({r.round for r in rows})
    assert usd(s.usd).startswith("$")


@pytest.mark.rule("CST-1")
@pytest.mark.parametrize(
    "target,outcome",
    [
        ("t1", "done"),  # the sender itself counts
        ("kid", "done"),  # lineage
        ("peer", "done"),  # same creator
        ("stranger", "rejected"),  # neither
        ("nullpeer", "rejected"),  # null creators never match (DOM-3)
        ("far", "rejected"),  # other project
        ("ghost", "rejected"),
    ],
)
def test_cost_gate(target, outcome):
    tasks = [
        task("t1"),
        task("kid", parent_task_id="t1", created_by="u7"),
        task("peer"),
        task("stranger", created_by="u2"),
        task("nullpeer", created_by=None),
        task("far", project="p2"),
    ]
    r = rig(make_world(*tasks))
    assert r.deliver(cost(target)).entries[0].outcome == outcome


@pytest.mark.rule("CST-1", "GAT-4")
def test_cost_requires_read():
    r = rig(make_world(task("t1")), permissions=RaisingPermissions())
    report = r.deliver(cost("t1"))
    assert report.entries[0].outcome == "rejected" and "lookup failed" in text(report)


# ---- quota-status ---------------------------------------------------------------------------------


@pytest.mark.rule("QUO-2", "QUO-1")
def test_quota_reports_total_used_remaining_and_unpriced_tokens():
    costs = (
        CostRow("t1", 1, usd=None, tokens=77, priced=False),
        CostRow("x", 1, usd=None, tokens=5, priced=False),
    )
    world = make_world(
        task("t1"), task("x", created_by="u2"), quotas=[Quota("u1", 50.0, 12.5)], costs=costs
    )
    out = text(rig(world).deliver(quota()))
    assert "total $50.00, used $12.50, remaining $37.50" in out
    assert "unpriced actual tokens: 77" in out


@pytest.mark.rule("QUO-2", "DOM-7")
def test_unlimited_quota_is_never_a_number():
    out = text(rig(make_world(task("t1"), quotas=[Quota("u1", None, 3.0)])).deliver(quota()))
    assert "total unlimited" in out and "remaining unlimited" in out
    none = text(rig(make_world(task("t1"))).deliver(quota()))
    assert "no quota record" in none


@pytest.mark.rule("QUO-1")
def test_quota_ignores_fields_and_says_so():
    out = text(rig(make_world(task("t1"))).deliver(quota("user", "task_id")))
    assert "fields ignored: user, task_id" in out


@pytest.mark.rule("QUO-1")
def test_quota_falls_back_to_the_parent_creator_and_rejects_when_neither():
    tasks = [task("p", created_by="boss"), task("t1", created_by=None, parent_task_id="p")]
    r = rig(
        make_world(*tasks, quotas=[Quota("boss", 10.0, 1.0)]),
        permissions=FixedPermissions(["read"]),
    )
    out = text(r.deliver(quota()))
    assert "quota of boss" in out
    orphan = rig(make_world(task("t1", created_by=None)), permissions=FixedPermissions(["read"]))
    report = orphan.deliver(quota())
    assert report.entries[0].outcome == "rejected" and "no quota to report" in text(report)


@pytest.mark.rule("QUO-1", "GAT-4")
def test_quota_requires_read():
    r = rig(make_world(task("t1")), permissions=FixedPermissions(["create_task"]))
    entry = r.deliver(quota()).entries[0]
    assert entry.outcome == "rejected"
    assert (
        entry.reason.render("en") == "your creator (u1) lacks the 'read' permission on project p1"
    )
