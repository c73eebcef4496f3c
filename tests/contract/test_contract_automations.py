"""AutomationStore contract (docs/rules.md AUT, SCH): every storage adapter must pass these. The
due query must agree with the pure `is_due` on every row (SCH-5) and claims must be
compare-and-set (SCH-4). Only port methods and World loading are used."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markertools.domain.model import Automation, Project
from markertools.domain.schedule import apply_claim, is_due, next_run_at
from markertools_adapters.world import World

MakeStore = Callable[[World], Any]
NOW = 1_798_333_200.0
PROJECTS = (Project("p1", "shop"), Project("p2", "other"))
FIXTURE_OK = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


def world(*automations: Automation) -> World:
    return World(now=NOW, projects=PROJECTS, automations=automations)


def am(aid: str, **kw: Any) -> Automation:
    fields: dict[str, Any] = {
        "project_id": "p1",
        "name": aid,
        "prompt": "do it",
        "created_by": "u1",
        "created_at": NOW,
    }
    fields.update(kw)
    return Automation(aid, **fields)


# ---- strategies (kept here so the contract suite is self-contained) --------------------

_epoch = st.one_of(
    st.integers(1_700_000_000, 1_900_000_000).map(float),
    st.floats(1_700_000_000, 1_900_000_000, allow_nan=False, allow_infinity=False),
)
_interval = st.one_of(st.sampled_from([60, 3600, 86400, 2592000]), st.integers(60, 2592000))


@st.composite
def _automation(draw: st.DrawFn, aid: str) -> Automation:
    base = am(
        aid,
        project_id=draw(st.sampled_from(["p1", "p2"])),
        interval_seconds=draw(_interval),
        first_run_at=draw(st.none() | _epoch),
        run_once=draw(st.booleans()),
        status=draw(st.sampled_from(["active", "active", "paused", "deleted"])),
        created_at=draw(_epoch),
    )
    state = draw(st.sampled_from(["never", "claimed", "legacy"]))
    if state == "never":
        return base
    slot = draw(_epoch)
    ran = slot + draw(st.just(0.0) | st.floats(0, 10 * base.interval_seconds))
    count = draw(st.integers(1, 40))
    if state == "claimed":
        return attrs.evolve(base, last_slot_at=slot, last_run_at=ran, run_count=count)
    return attrs.evolve(base, last_run_at=ran, run_count=count)  # legacy: no last_slot_at


@st.composite
def _rows_and_now(draw: st.DrawFn) -> tuple[tuple[Automation, ...], float]:
    n = draw(st.integers(1, 6))
    rows = tuple(draw(_automation(f"a{i}")) for i in range(n))
    # put `now` right at, just before or just after some row's next slot, or anywhere
    slots = [s for s in (next_run_at(a) for a in rows) if s is not None]
    anchor = draw(st.sampled_from(slots)) if slots else draw(_epoch)
    delta = draw(st.sampled_from([0.0, -1.0, 1.0, -0.001, 0.001]) | st.floats(-1e7, 1e7))
    return rows, anchor + delta


# ---- tests -------------------------------------------------------------------------------


@pytest.mark.rule("AUT-1")
def test_insert_and_get_round_trip(make_store: MakeStore) -> None:
    store = make_store(world())
    a = am(
        "a1",
        name="每日新闻",
        interval_seconds=3600,
        first_run_at=NOW + 0.25,
        run_once=True,
        bind="heartbeat",
        bound_task_id="t1",
        repo_url="https://git.example/x.git",
    )
    store.insert_automation(a)
    assert store.get_automation("a1") == a
    assert store.get_automation("zz") is None
    with pytest.raises(Exception):  # noqa: B017 - an existing id is refused
        store.insert_automation(am("a1", name="other"))
    assert store.get_automation("a1") == a


@pytest.mark.rule("AUT-3")
def test_active_names_are_per_project_and_active_only(make_store: MakeStore) -> None:
    store = make_store(
        world(
            am("a1", name="nightly"),
            am("a2", name="paused", status="paused"),
            am("a3", name="theirs", project_id="p2"),
        )
    )
    store.insert_automation(am("a4", name="fresh"))
    assert store.active_automation_names("p1") == frozenset({"nightly", "fresh"})
    assert store.active_automation_names("p2") == frozenset({"theirs"})
    assert store.active_automation_names("p9") == frozenset()


@pytest.mark.rule("SCH-5", "SCH-1", "SCH-2", "SCH-3")
@FIXTURE_OK
@given(case=_rows_and_now())
def test_due_query_agrees_with_is_due(
    make_store: MakeStore, case: tuple[tuple[Automation, ...], float]
) -> None:
    rows, now = case
    store = make_store(world(*rows))
    want = [a.id for a in sorted(rows, key=lambda a: a.id) if is_due(a, now)]
    got = store.due_automations(now)
    assert [a.id for a in got] == want
    assert all(a == store.get_automation(a.id) for a in got)


@pytest.mark.rule("SCH-4", "SCH-5")
@FIXTURE_OK
@given(case=_rows_and_now())
def test_claim_agrees_with_the_pure_claim(
    make_store: MakeStore, case: tuple[tuple[Automation, ...], float]
) -> None:
    rows, now = case
    store = make_store(world(*rows))
    for a in rows:
        slot = next_run_at(a)
        if slot is None:
            assert not store.claim_automation(a.id, now, now)
            continue
        expected = apply_claim(a, slot, now)
        assert store.claim_automation(a.id, slot, now) == (expected is not None)
        assert store.get_automation(a.id) == (expected if expected is not None else a)
        # a second claim of the same slot never wins
        assert not store.claim_automation(a.id, slot, now)
    # after the claims the due query still agrees with is_due on the stored rows
    stored = [store.get_automation(a.id) for a in rows]
    want = [a.id for a in sorted(stored, key=lambda a: a.id) if is_due(a, now)]
    assert [a.id for a in store.due_automations(now)] == want


@pytest.mark.rule("SCH-4")
def test_claim_is_compare_and_set_on_the_slot(make_store: MakeStore) -> None:
    store = make_store(world(am("a1", first_run_at=NOW, interval_seconds=60)))
    assert not store.claim_automation("missing", NOW, NOW)
    assert not store.claim_automation("a1", NOW, NOW - 1)  # not due yet
    assert not store.claim_automation("a1", NOW + 60, NOW + 61)  # not its slot
    assert store.claim_automation("a1", NOW, NOW + 150)
    assert not store.claim_automation("a1", NOW, NOW + 151)  # the slot is spent
    got = store.get_automation("a1")
    assert (got.run_count, got.last_run_at, got.last_slot_at) == (1, NOW + 150, NOW)
    # SCH-2: missed slots skipped: next is NOW + 180 (first NOW + k*60 after NOW + 150)
    assert [a.id for a in store.due_automations(NOW + 179)] == []
    assert [a.id for a in store.due_automations(NOW + 180)] == ["a1"]
    assert not store.claim_automation("a1", NOW + 120, NOW + 180)
    assert store.claim_automation("a1", NOW + 180, NOW + 180)


@pytest.mark.rule("SCH-3")
def test_once_automation_is_due_claimed_once_then_never(make_store: MakeStore) -> None:
    store = make_store(world(am("a1", run_once=True, first_run_at=NOW)))
    assert [a.id for a in store.due_automations(NOW)] == ["a1"]
    assert store.claim_automation("a1", NOW, NOW + 5)
    for later in (NOW + 5, NOW + 86400, NOW + 1e8):
        assert store.due_automations(later) == ()
        assert not store.claim_automation("a1", NOW, later)
        assert not store.claim_automation("a1", NOW + 86400, later)


@pytest.mark.rule("SCH-5")
def test_due_listing_is_ordered_by_id_and_skips_inactive(make_store: MakeStore) -> None:
    store = make_store(
        world(
            am("b", created_at=NOW - 10),
            am("a", created_at=NOW - 5),
            am("c", status="paused", created_at=NOW - 10),
            am("d", first_run_at=NOW + 10),
            am("e", project_id="p2", created_at=NOW),
        )
    )
    assert [a.id for a in store.due_automations(NOW)] == ["a", "b", "e"]
    assert not store.claim_automation("c", NOW - 10, NOW)
