"""The pure automation schedule (docs/rules.md SCH): next_run_at, is_due, apply_claim."""

from __future__ import annotations

import math

import attrs
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from support.strategies.todo import NOW, auto, automations, epoch, intervals

from markertools.domain.model import Automation
from markertools.domain.schedule import (
    apply_claim,
    is_due,
    next_run_at,
    next_slot_after,
    shanghai_iso,
    shanghai_stamp,
    whole_seconds,
)
from markertools.text.msg import msg


@pytest.mark.rule("SCH-1")
def test_never_run_is_due_at_first_run_at() -> None:
    a = auto(first_run_at=NOW + 100, created_at=NOW)
    assert next_run_at(a) == NOW + 100
    assert not is_due(a, NOW + 99.5)
    assert is_due(a, NOW + 100)
    assert is_due(a, NOW + 10_000)


@pytest.mark.rule("SCH-1")
def test_never_run_without_first_run_at_is_due_at_creation() -> None:
    a = auto(first_run_at=None, created_at=NOW)
    assert next_run_at(a) == NOW
    assert is_due(a, NOW)
    assert not is_due(a, NOW - 1)


@pytest.mark.rule("SCH-2")
def test_missed_slots_are_skipped_not_replayed() -> None:
    # daily at NOW; claimed three and a half days late for the first slot
    a = auto(first_run_at=NOW, interval_seconds=86400, created_at=NOW - 5)
    claimed = apply_claim(a, NOW, NOW + 3.5 * 86400)
    assert claimed is not None
    assert next_run_at(claimed) == NOW + 4 * 86400
    assert not is_due(claimed, NOW + 3.9 * 86400)
    assert is_due(claimed, NOW + 4 * 86400)


@pytest.mark.rule("SCH-2")
def test_claim_exactly_on_a_later_slot_moves_past_it() -> None:
    a = auto(last_slot_at=NOW, last_run_at=NOW + 120, run_count=1, interval_seconds=60)
    assert next_run_at(a) == NOW + 180  # first s + k*60 strictly later than t = s + 120


@pytest.mark.rule("SCH-2")
@given(slot=epoch, late=st.floats(0, 5e7, allow_nan=False), interval=intervals)
def test_next_slot_is_first_multiple_after_the_claim(
    slot: float, late: float, interval: int
) -> None:
    t = slot + late
    nxt = next_slot_after(slot, t, interval)
    assert nxt is not None
    assert nxt > t
    k = round((nxt - slot) / interval)
    assert k >= 1
    assert math.isclose(nxt, slot + k * interval, rel_tol=0, abs_tol=1e-6)
    # the slot before it (if any after s) is not later than t: nothing skipped too far
    assert k == 1 or slot + (k - 1) * interval <= t


@pytest.mark.rule("SCH-2")
@given(a=automations(), now_delta=st.floats(0, 1e7, allow_nan=False))
def test_after_a_claim_the_automation_is_not_due_at_the_claim_time(
    a: Automation, now_delta: float
) -> None:
    a = attrs.evolve(a, status="active", run_once=False)
    slot = next_run_at(a)
    assume(slot is not None)
    assert slot is not None
    now = slot + now_delta
    claimed = apply_claim(a, slot, now)
    assert claimed is not None
    assert claimed.run_count == a.run_count + 1
    assert claimed.last_run_at == now and claimed.last_slot_at == slot
    assert not is_due(claimed, now)
    nxt = next_run_at(claimed)
    assert nxt is not None and nxt > now


@pytest.mark.rule("SCH-3")
def test_once_automation_that_ran_is_never_due_again() -> None:
    a = auto(first_run_at=NOW, run_once=True, interval_seconds=60)
    assert is_due(a, NOW)
    claimed = apply_claim(a, NOW, NOW + 1)
    assert claimed is not None
    assert next_run_at(claimed) is None
    for later in (NOW + 60, NOW + 86400, NOW + 1e9):
        assert not is_due(claimed, later)
        assert apply_claim(claimed, NOW + 60, later) is None
    # a legacy once row (run_count only) is spent as well
    assert not is_due(auto(run_once=True, run_count=1, created_at=NOW), NOW + 1e6)


@pytest.mark.rule("SCH-3", "SCH-4")
@given(a=automations(), dt=st.floats(-1e6, 1e8, allow_nan=False))
def test_claim_agrees_with_is_due(a: Automation, dt: float) -> None:
    slot = next_run_at(a)
    now = (slot if slot is not None else NOW) + dt
    claimed = apply_claim(a, slot if slot is not None else now, now)
    assert (claimed is not None) == is_due(a, now)
    if claimed is not None and a.run_once:
        assert not is_due(claimed, now + 1e9)


@pytest.mark.rule("SCH-4")
def test_claim_of_a_wrong_or_spent_slot_fails() -> None:
    a = auto(first_run_at=NOW, interval_seconds=60)
    assert apply_claim(a, NOW + 60, NOW + 61) is None  # not the automation's next slot
    assert apply_claim(a, NOW, NOW - 1) is None  # not due yet
    first = apply_claim(a, NOW, NOW + 1)
    assert first is not None
    assert apply_claim(first, NOW, NOW + 2) is None  # the same slot twice


def test_only_active_automations_are_due() -> None:
    for status in ("paused", "deleted", "disabled", ""):
        a = auto(status=status, created_at=NOW)
        assert not is_due(a, NOW + 1)
        assert apply_claim(a, NOW, NOW + 1) is None


def test_broken_schedules_fail_closed() -> None:
    ran = {"last_slot_at": NOW, "last_run_at": NOW, "run_count": 1}
    assert next_run_at(auto(interval_seconds=0, **ran)) is None
    assert next_run_at(auto(interval_seconds=-5, **ran)) is None
    assert next_run_at(auto(first_run_at=math.inf)) is None
    assert not is_due(auto(first_run_at=math.nan), NOW)
    assert not is_due(auto(created_at=NOW), math.nan)
    # precision exhausted: adding the interval no longer changes the time
    assert next_slot_after(1e300, 1e300, 60) is None


def test_shanghai_clock_text() -> None:
    assert shanghai_stamp(NOW) == "20261227090000"
    assert shanghai_iso(NOW) == "2026-12-27T09:00:00+08:00"
    assert shanghai_iso(0) == "1970-01-01T08:00:00+08:00"
    assert shanghai_stamp(1e20) == "00000000000000"  # out of datetime's range: no crash
    assert shanghai_iso(math.nan) == "nan"


@pytest.mark.rule("DOM-5")
@pytest.mark.parametrize(
    ("epoch", "en", "zh"),
    [
        (NOW + 0.9828212, "slot 1798333200 (2026-12-27T09:00:00+08:00)", "时间槽 1798333200（2026-12-27T09:00:00+08:00）"),
        (NOW, "slot 1798333200 (2026-12-27T09:00:00+08:00)", "时间槽 1798333200（2026-12-27T09:00:00+08:00）"),
        (-0.5, "slot -1 (1970-01-01T07:59:59+08:00)", "时间槽 -1（1970-01-01T07:59:59+08:00）"),
        (math.inf, "slot inf (inf)", "时间槽 inf（inf）"),
        (math.nan, "slot nan (nan)", "时间槽 nan（nan）"),
    ],
)  # fmt: skip
def test_epoch_seconds_beside_a_time_are_whole_seconds(epoch: float, en: str, zh: str) -> None:
    """A reason shows epoch seconds rounded down to the second, beside the ISO time; a
    non-finite number (never a real time) is shown as it is, never raised on."""
    text = msg("schedule.slot", epoch=whole_seconds(epoch), iso=shanghai_iso(epoch))
    assert (text.render("en"), text.render("zh")) == (en, zh)
    assert type(whole_seconds(epoch)) is (int if math.isfinite(epoch) else float)


@pytest.mark.rule("SCH-2")
@given(
    slot=st.floats(allow_nan=False, allow_infinity=False),
    t=st.floats(allow_nan=False, allow_infinity=False),
    interval=st.integers(min_value=1, max_value=10**30),
)
def test_next_slot_after_never_raises_and_is_later_than_t(slot, t, interval):
    nxt = next_slot_after(slot, t, interval)
    assert nxt is None or (math.isfinite(nxt) and nxt > t)


@pytest.mark.rule("SCH-2")
def test_next_slot_after_near_the_float_limit_is_never_due_instead_of_overflowing():
    assert next_slot_after(-1.7e308, 1.7e308, 60) is None
