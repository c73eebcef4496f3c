"""Lineage and generation (LIN-1..4): the pure functions over a parent walk, and the same
facts gathered from the in-memory store (chains, the 32-step bound, cycles, missing rows,
coordinator subtasks), and their use by task-create and the control gate."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.strategies.core import cancel, create, make_world, rig, task

from markertools.deliver.lineage import (
    LINEAGE_MAX_STEPS,
    MAX_DIRECT_CHILDREN,
    children_cap_reached,
    generation,
    in_lineage,
    may_spawn,
)
from markertools.domain.model import LineageLink
from markertools_adapters.memory import MemoryStore


def chain(n: int, *, root_parent: str | None = None, prefix: str = "c") -> list:
    """c0 <- c1 <- ... <- c{n-1}: c0 is the root (its parent root_parent)."""
    out = [task(f"{prefix}0", parent_task_id=root_parent)]
    out += [task(f"{prefix}{i}", parent_task_id=f"{prefix}{i - 1}") for i in range(1, n)]
    return out


def store_of(*tasks) -> MemoryStore:
    return MemoryStore.from_world(make_world(*tasks))


@pytest.mark.rule("LIN-4")
def test_in_lineage_at_every_depth_up_to_the_bound():
    store = store_of(*chain(40))
    for depth in range(1, 40):
        links = store.lineage(f"c{depth}", LINEAGE_MAX_STEPS)
        assert in_lineage(links, "c0") is (depth <= LINEAGE_MAX_STEPS), depth


@pytest.mark.rule("LIN-4")
def test_a_task_is_not_in_its_own_lineage_and_descendants_are_not_ancestors():
    store = store_of(*chain(5))
    assert not in_lineage(store.lineage("c2", 32), "c2")
    assert not in_lineage(store.lineage("c2", 32), "c3")  # c3 is below c2, not above
    assert in_lineage(store.lineage("c3", 32), "c2")


@pytest.mark.rule("LIN-4")
def test_cycles_end_the_walk_as_not_in_lineage():
    a = task("a", parent_task_id="b")
    b = task("b", parent_task_id="a")
    store = store_of(a, b, task("s"))
    links = store.lineage("a", LINEAGE_MAX_STEPS)
    assert len(links) == LINEAGE_MAX_STEPS + 1  # repeats until the bound, never hangs
    assert not in_lineage(links, "s")
    assert in_lineage(links, "b")  # a member of the cycle is reached


@pytest.mark.rule("LIN-4")
def test_missing_rows_end_the_walk():
    store = store_of(task("x", parent_task_id="ghost"), task("s"))
    links = store.lineage("x", LINEAGE_MAX_STEPS)
    assert [link.id for link in links] == ["x"]
    assert not in_lineage(links, "ghost")
    assert store.lineage("nobody", LINEAGE_MAX_STEPS) == ()


@pytest.mark.rule("LIN-1")
def test_generation_counts_parent_steps_to_a_root():
    store = store_of(*chain(6))
    for i in range(6):
        assert generation(store.lineage(f"c{i}", LINEAGE_MAX_STEPS)) == i


@pytest.mark.rule("LIN-1")
def test_coordinator_subtasks_are_generation_zero_and_restart_the_count():
    tasks = [
        task("root"),
        task("coord", parent_task_id="root", is_coordinator=True),
        task("sub", parent_task_id="coord", coordinator_part="part-1"),
        task("kid", parent_task_id="sub"),
        task("grandkid", parent_task_id="kid"),
    ]
    store = store_of(*tasks)
    assert generation(store.lineage("sub", 32)) == 0
    assert generation(store.lineage("kid", 32)) == 1
    assert generation(store.lineage("grandkid", 32)) == 2
    assert generation(store.lineage("coord", 32)) == 1  # a coordinator task itself is normal here


@pytest.mark.rule("LIN-1", "LIN-2")
def test_a_missing_parent_counts_as_a_root_and_a_cycle_fails_closed():
    store = store_of(
        task("orphan", parent_task_id="ghost"),
        task("a", parent_task_id="b"),
        task("b", parent_task_id="a"),
    )
    assert generation(store.lineage("orphan", 32)) == 1
    assert generation(store.lineage("a", 32)) == LINEAGE_MAX_STEPS
    assert not may_spawn(generation(store.lineage("a", 32)))


@pytest.mark.rule("LIN-2")
def test_may_spawn_only_below_generation_three():
    assert [may_spawn(g) for g in range(6)] == [True, True, True, False, False, False]


@pytest.mark.rule("LIN-3")
def test_children_cap_counts_this_turns_creations():
    assert not children_cap_reached(19, 0)
    assert children_cap_reached(20, 0)
    assert children_cap_reached(15, 5)
    assert not children_cap_reached(15, 4)
    assert MAX_DIRECT_CHILDREN == 20


@given(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=1, max_size=40))
@pytest.mark.rule("LIN-1", "LIN-4")
def test_generation_and_lineage_are_bounded_for_any_walk(parents):
    links = [LineageLink(f"n{i}", p) for i, p in enumerate(parents)]
    g = generation(links)
    assert 0 <= g <= LINEAGE_MAX_STEPS
    assert in_lineage(links, "n0") is False  # the target itself never counts


# ---- through delivery ----------------------------------------------------------------------


@pytest.mark.rule("LIN-2", "CRE-3")
@pytest.mark.parametrize("depth,allowed", [(0, True), (1, True), (2, True), (3, False), (4, False)])
def test_task_create_respects_the_generation_limit(depth, allowed):
    tasks = chain(depth + 1)
    r = rig(make_world(*tasks))
    report = r.deliver(create(), sender=f"c{depth}")
    assert report.entries[0].outcome == ("done" if allowed else "rejected")
    if not allowed:
        assert "generation" in report.entries[0].reason.render("en")
        assert len(r.world().tasks) == depth + 1


@pytest.mark.rule("LIN-1", "LIN-2")
def test_a_coordinator_subtask_deep_in_a_tree_may_still_spawn():
    tasks = [*chain(4), task("sub", parent_task_id="c3", coordinator_part="p")]
    r = rig(make_world(*tasks))
    assert r.deliver(create(), sender="sub").entries[0].outcome == "done"


@pytest.mark.rule("LIN-3", "CRE-3")
def test_direct_children_cap_counts_existing_and_same_turn_children():
    existing = [task(f"k{i}", parent_task_id="t1") for i in range(17)]
    coordinator_subtasks = [
        task(f"s{i}", parent_task_id="t1", coordinator_part="x") for i in range(5)
    ]
    r = rig(make_world(task("t1"), *existing, *coordinator_subtasks))
    report = r.deliver(*(create(f"job {i}", line=i + 1) for i in range(5)))
    assert [e.outcome for e in report.entries] == ["done", "done", "done", "rejected", "rejected"]
    assert "20" in report.entries[3].reason.render("en")
    assert r.store.count_children("t1") == 20


@pytest.mark.rule("LIN-4", "GAT-1")
def test_cancel_reaches_deep_descendants_but_not_past_the_bound():
    tasks = [task("t1", created_by="u1"), *chain(34, root_parent="t1", prefix="d")]
    # descendants created by another user, so only lineage can allow the cancel
    tasks = [tasks[0]] + [attrs.evolve(t, created_by="u2") for t in tasks[1:]]
    r = rig(make_world(*tasks))
    # d31 is 32 steps below t1 (d0 is 1 step), d32 is 33 steps
    ok = r.deliver(cancel("d31"))
    assert ok.entries[0].outcome == "done"
    too_far = r.deliver(cancel("d32"))
    assert too_far.entries[0].outcome == "rejected"
    assert "lineage" in too_far.entries[0].reason.render("en")
