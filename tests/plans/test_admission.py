"""Host-wide launch admission (DOT-6, PLN-10) as a pure function: `plans.admit`.

Unit cases name the situations the supervisor meets; the property test drives random
hosts (several runs, shared directories, dependencies, roles live or being launched)
and checks the three promises: never two turns in one directory, never more than
`maxConcurrent` on the host (nor a run's own limit), and fairness across runs."""

from __future__ import annotations

from collections import Counter

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.strategies.plans import proposal_dict, role_dict, valid

from markertools.plans import RunAdmission, RunState, admit, new_run, normalize_cwd

pytestmark = pytest.mark.rule("DOT-6")


def run(
    run_id: str,
    roles: list[tuple[str, str, list[str]]],
    *,
    status: str = "running",
    states: dict[str, str] | None = None,
    max_concurrent: int = 3,
) -> RunState:
    """A run whose roles are (name, cwd, dependsOn); `states` overrides role statuses."""
    workers = [role_dict(n, deps or None, cwd=cwd) for n, cwd, deps in roles]
    state = new_run(run_id, valid(proposal_dict(workers)), 0.0, max_concurrent)
    new_roles = tuple(
        attrs.evolve(r, status=(states or {}).get(r.name, r.status)) for r in state.roles
    )
    return attrs.evolve(state, status=status, roles=new_roles)


def pairs(answer: tuple[object, ...]) -> list[tuple[str, str]]:
    return [(a.run_id, a.role) for a in answer]  # type: ignore[attr-defined]


def test_ready_roles_launch_in_declaration_order_up_to_the_limit() -> None:
    r = run("a", [("x", "/w/1", []), ("y", "/w/2", []), ("z", "/w/3", []), ("q", "/w/4", [])])
    assert pairs(admit([RunAdmission(r)], 3)) == [("a", "x"), ("a", "y"), ("a", "z")]


def test_two_roles_in_one_directory_never_launch_together() -> None:
    r = run("a", [("x", "/w/same", []), ("y", "/w/same/", [])])
    assert pairs(admit([RunAdmission(r)], 3)) == [("a", "x")]


def test_a_directory_busy_in_another_run_blocks_the_role() -> None:
    busy = run("a", [("x", "/w/shared", [])], states={"x": "running"})
    other = run("b", [("y", "/w/shared", []), ("z", "/w/free", [])])
    assert pairs(admit([RunAdmission(busy), RunAdmission(other)], 3)) == [("b", "z")]


def test_a_role_being_launched_holds_its_slot_and_its_directory() -> None:
    r = run("a", [("x", "/w/1", []), ("y", "/w/1", []), ("z", "/w/2", [])])
    answer = admit([RunAdmission(r, launching=frozenset({"x"}))], 2)
    assert pairs(answer) == [("a", "z")]


def test_host_keys_replace_the_proposal_cwd() -> None:
    """The host compares resolved real paths: two spellings of one directory (a
    symlink) collide once the host says they are the same key."""
    r = run("a", [("x", "/w/real", []), ("y", "/w/link", [])])
    plain = admit([RunAdmission(r)], 3)
    resolved = admit([RunAdmission(r, cwd_keys={"x": "/w/real", "y": "/w/real"})], 3)
    assert pairs(plain) == [("a", "x"), ("a", "y")]
    assert pairs(resolved) == [("a", "x")]


def test_dependencies_and_run_status_gate_admission() -> None:
    r = run("a", [("x", "/w/1", []), ("y", "/w/2", ["x"])])
    assert pairs(admit([RunAdmission(r)], 3)) == [("a", "x")]
    done = run("b", [("x", "/w/1", []), ("y", "/w/2", ["x"])], states={"x": "completed"})
    assert pairs(admit([RunAdmission(done)], 3)) == [("b", "y")]
    paused = run("c", [("x", "/w/1", [])], status="paused")
    assert admit([RunAdmission(paused)], 3) == ()


def test_runs_take_turns_and_the_rotation_starts_after_the_last_admitted() -> None:
    a = run("a", [("a1", "/a/1", []), ("a2", "/a/2", []), ("a3", "/a/3", [])])
    b = run("b", [("b1", "/b/1", []), ("b2", "/b/2", [])])
    runs = [RunAdmission(a), RunAdmission(b)]
    assert pairs(admit(runs, 3)) == [("a", "a1"), ("b", "b1"), ("a", "a2")]
    assert pairs(admit(runs, 1, after="a")) == [("b", "b1")]
    assert pairs(admit(runs, 1, after="b")) == [("a", "a1")]


def test_the_host_limit_counts_live_turns_of_every_run() -> None:
    a = run("a", [("x", "/a/1", []), ("y", "/a/2", [])], states={"x": "running", "y": "stopping"})
    b = run("b", [("z", "/b/1", [])])
    assert admit([RunAdmission(a), RunAdmission(b)], 2) == ()
    assert pairs(admit([RunAdmission(a), RunAdmission(b)], 3)) == [("b", "z")]


def test_a_run_never_exceeds_its_own_limit() -> None:
    r = run("a", [("x", "/1", []), ("y", "/2", []), ("z", "/3", [])], max_concurrent=1)
    assert pairs(admit([RunAdmission(r)], 3)) == [("a", "x")]


# ---- properties -----------------------------------------------------------------

DIRS = ["/w/a", "/w/b", "/w/c", "/w/d", "/w/e", "/w/f"]
STATUSES = ["queued", "queued", "queued", "running", "starting", "stopping", "completed", "paused"]


@st.composite
def hosts(draw: st.DrawFn) -> tuple[list[RunAdmission], int, str | None]:
    n_runs = draw(st.integers(1, 4))
    runs: list[RunAdmission] = []
    for i in range(n_runs):
        n_roles = draw(st.integers(1, 5))
        names = [f"r{i}{j}" for j in range(n_roles)]
        roles = []
        for j, name in enumerate(names):
            deps = draw(st.lists(st.sampled_from(names[:j]), unique=True)) if j else []
            roles.append((name, draw(st.sampled_from(DIRS)), deps))
        states = {n: draw(st.sampled_from(STATUSES)) for n in names}
        status = draw(st.sampled_from(["running", "running", "running", "paused", "ready"]))
        limit = draw(st.integers(1, 3))
        state = run(f"run{i}", roles, status=status, states=states, max_concurrent=limit)
        queued = [n for n in names if states[n] == "queued"]
        launching = frozenset(draw(st.lists(st.sampled_from(queued), unique=True)) if queued else [])
        runs.append(RunAdmission(state, launching=launching))
    after = draw(st.none() | st.sampled_from([r.state.run_id for r in runs]))
    return runs, draw(st.integers(1, 3)), after


def _busy_keys(runs: list[RunAdmission]) -> list[str]:
    return [normalize_cwd(r.key(n) or "") for r in runs for n in r.busy()]


@settings(max_examples=400, deadline=None)
@given(hosts())
def test_admission_never_shares_a_directory_nor_exceeds_a_limit(
    host: tuple[list[RunAdmission], int, str | None],
) -> None:
    runs, limit, after = host
    answer = admit(runs, limit, after=after)
    by_id = {r.state.run_id: r for r in runs}
    before = _busy_keys(runs)
    new_keys = [by_id[a.run_id].key(a.role) for a in answer]
    # Rule 2: no new turn in a busy directory, no two new turns in one directory
    assert not set(new_keys) & set(before)
    assert len(set(new_keys)) == len(new_keys)
    # Rule 1: host-wide and per-run limits
    busy_total = sum(len(r.busy()) for r in runs)
    assert busy_total + len(answer) <= max(limit, busy_total)
    per_run = Counter(a.run_id for a in answer)
    for run_id, n in per_run.items():
        r = by_id[run_id]
        assert len(r.busy()) + n <= r.state.max_concurrent
    # Rule 3: only ready roles, each at most once
    for a in answer:
        assert a.role in by_id[a.run_id].ready()
    assert len(set(pairs(answer))) == len(answer)


@settings(max_examples=400, deadline=None)
@given(hosts())
def test_admission_is_fair_and_leaves_no_admissible_role_behind(
    host: tuple[list[RunAdmission], int, str | None],
) -> None:
    runs, limit, after = host
    answer = admit(runs, limit, after=after)
    by_id = {r.state.run_id: r for r in runs}
    busy_total = sum(len(r.busy()) for r in runs)
    if busy_total + len(answer) < limit:
        # maximal: every ready role left out has a busy directory or a full run
        used = set(_busy_keys(runs)) | {by_id[a.run_id].key(a.role) for a in answer}
        per_run = Counter(a.run_id for a in answer)
        for r in runs:
            for role in r.ready():
                if (r.state.run_id, role) in pairs(answer):
                    continue
                full = len(r.busy()) + per_run[r.state.run_id] >= r.state.max_concurrent
                assert full or r.key(role) in used
    # Rule 4: a run left with nothing while another got two had no admissible role
    # at its turn (its ready roles' directories were taken, or it was full)
    per_run = Counter(a.run_id for a in answer)
    if per_run and max(per_run.values()) >= 2:
        for r in runs:
            if per_run[r.state.run_id] == 0 and r.ready():
                full = len(r.busy()) >= r.state.max_concurrent
                keys = {r.key(n) for n in r.ready()}
                taken = set(_busy_keys(runs)) | {by_id[a.run_id].key(a.role) for a in answer}
                assert full or keys <= taken
