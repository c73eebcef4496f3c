"""Scheduling over the dependency graph (PLN-5, PLN-10) and topological order (PLN-3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.strategies.plans import dags, graph_proposal, proposal_dict, role_dict, valid

from markertools.plans import (
    Proposal,
    ReadyRole,
    ScheduleError,
    find_cycles,
    schedule,
    topological_order,
)


def chain() -> Proposal:
    return valid(
        proposal_dict(
            [
                role_dict("reader"),
                role_dict("fixer", ["reader"]),
                role_dict("docs", ["reader"]),
                role_dict("verifier", ["fixer", "docs"]),
            ]
        )
    )


@pytest.mark.rule("PLN-5")
def test_roots_ready_first() -> None:
    s = schedule(chain(), {})
    assert s.ready == (ReadyRole("reader", ()),)
    assert s.start == ("reader",)
    assert s.waiting == (
        ("fixer", ("reader",)),
        ("docs", ("reader",)),
        ("verifier", ("fixer", "docs")),
    )


@pytest.mark.rule("PLN-5")
def test_dependents_ready_after_accepted_conclusions_and_receive_them() -> None:
    s = schedule(chain(), {"reader": "bug in parse()"})
    assert s.ready == (
        ReadyRole("fixer", (("reader", "bug in parse()"),)),
        ReadyRole("docs", (("reader", "bug in parse()"),)),
    )
    assert s.waiting == (("verifier", ("fixer", "docs")),)
    s = schedule(chain(), {"reader": "r", "fixer": "f"})
    assert [r.name for r in s.ready] == ["docs"]
    assert s.waiting == (("verifier", ("docs",)),)
    s = schedule(chain(), {"reader": "r", "docs": "d", "fixer": "f"})
    assert s.ready == (ReadyRole("verifier", (("fixer", "f"), ("docs", "d"))),)  # dependsOn order
    assert s.finished == ("reader", "fixer", "docs")  # declaration order


@pytest.mark.rule("PLN-5", "PLN-10")
@pytest.mark.parametrize(
    ("max_concurrent", "running", "start"),
    [
        (3, (), ("b", "c", "d")),
        (2, (), ("b", "c")),
        (1, (), ("b",)),
        (3, ("e",), ("b", "c")),
        (1, ("e",), ()),
    ],
)
def test_start_respects_max_concurrent(
    max_concurrent: int, running: tuple[str, ...], start: tuple[str, ...]
) -> None:
    p = valid(
        proposal_dict(
            [
                role_dict("a"),
                role_dict("b", ["a"]),
                role_dict("c", ["a"]),
                role_dict("d", ["a"]),
                role_dict("e", ["a"]),
            ]
        )
    )
    s = schedule(p, {"a": "done"}, running, max_concurrent)
    assert s.start == start
    assert [r.name for r in s.ready] == [n for n in "bcde" if n not in running]
    assert s.running == running


@pytest.mark.rule("PLN-5", "PLN-10")
@pytest.mark.parametrize(
    ("finished", "running", "mc", "fragment"),
    [
        ({"ghost": ""}, (), 3, "unknown role 'ghost'"),
        ({}, ("ghost",), 3, "unknown role 'ghost'"),
        ({"reader": ""}, ("reader",), 3, "both finished and running"),
        ({"fixer": ""}, (), 3, "before its dependency 'reader'"),
        ({}, ("verifier",), 3, "before its dependency 'fixer'"),
        ({}, (), 0, "between 1 and 3"),
        ({}, (), 4, "between 1 and 3"),
    ],
)
def test_inconsistent_schedule_questions_refused(
    finished: dict[str, str], running: tuple[str, ...], mc: int, fragment: str
) -> None:
    with pytest.raises(ScheduleError, match=fragment):
        schedule(chain(), finished, running, mc)


@pytest.mark.rule("PLN-5", "PLN-3", "PLN-10")
@given(dags(), st.integers(1, 3), st.randoms(use_true_random=False))
def test_random_dags_schedule_every_role_once_in_topological_order(
    graph: tuple[list[str], dict[str, list[str]]], max_concurrent: int, rnd: object
) -> None:
    import random

    assert isinstance(rnd, random.Random)
    order, deps = graph
    p = valid(graph_proposal(order, deps))
    finished: dict[str, str] = {}
    running: list[str] = []
    started: list[str] = []
    for _ in range(4 * len(order) + 4):
        if len(finished) == len(order):
            break
        s = schedule(p, finished, running, max_concurrent)
        assert len(running) + len(s.start) <= max_concurrent
        for r in s.ready:  # every ready role has all deps finished, and receives them
            assert r.inputs == tuple((d, finished[d]) for d in deps[r.name])
        for name, missing in s.waiting:
            assert missing and missing == tuple(d for d in deps[name] if d not in finished)
        assert {r.name for r in s.ready} | {w for w, _ in s.waiting} | set(finished) | set(
            running
        ) == set(order)
        take = (
            s.start[: rnd.randint(0, len(s.start))]
            if running
            else s.start[: max(1, rnd.randint(0, len(s.start)))]
        )
        for name in take:
            assert name not in started
            started.append(name)
            running.append(name)
        if running:  # finish a random running role
            done = running.pop(rnd.randrange(len(running)))
            finished[done] = f"conclusion of {done}"
    assert sorted(started) == sorted(order)
    assert len(started) == len(set(started))
    position = {n: i for i, n in enumerate(started)}
    for name in order:
        for d in deps[name]:
            assert position[d] < position[name]


@pytest.mark.rule("PLN-3")
@given(dags())
def test_topological_order_respects_dependencies(
    graph: tuple[list[str], dict[str, list[str]]],
) -> None:
    order, deps = graph
    p = valid(graph_proposal(order, deps))
    topo = topological_order(p)
    assert sorted(topo) == sorted(order)
    position = {n: i for i, n in enumerate(topo)}
    assert all(position[d] < position[n] for n in order for d in deps[n])
    assert find_cycles(order, deps) == []


@pytest.mark.rule("PLN-3")
def test_topological_order_prefers_declaration_order() -> None:
    p = valid(proposal_dict([role_dict("z"), role_dict("y", ["z"]), role_dict("a")]))
    assert topological_order(p) == ("z", "y", "a")


@pytest.mark.rule("PLN-3")
def test_find_cycles_ignores_unknown_and_handles_large_graphs() -> None:
    assert find_cycles(["a"], {"a": ["ghost"]}) == []
    n = 5000  # a long ring: iterative, no recursion limit
    names = [f"n{i}" for i in range(n)]
    deps = {names[i]: [names[i - 1]] for i in range(n)}
    (cycle,) = find_cycles(names, deps)
    assert cycle[0] == cycle[-1] == "n0" and len(cycle) == n + 1
