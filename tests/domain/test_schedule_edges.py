"""Edges of the pure schedule that the mutation run found unread (issue 20): the float
rounding the correction loop of `next_slot_after` exists for (both directions), rows
that carry only some of the run fields, slots before the claim time, and the values
for which no next slot can be computed (SCH-2, Rule 4 of domain/schedule.py)."""

from __future__ import annotations

import math
import random

import pytest
from support.strategies.todo import auto

from markertools.domain.schedule import has_run, is_due, next_run_at, next_slot_after


def first_later_slot(slot: float, t: float, interval: int) -> int:
    """The oracle: the smallest k >= 1 whose slot `slot + k*interval`, in the same float
    arithmetic, is strictly later than t, found by stepping (no division)."""
    k = 1 if t < slot else max(1, math.floor((t - slot) / interval) - 3)
    while slot + k * interval <= t:
        k += 1
    return k


def rounding_cases() -> list[tuple[str, float, float, int]]:
    """Claim times on or next to a slot, where the division in `next_slot_after` rounds
    to the wrong k: 'up' (the first guess is a slot not later than t) and 'down' (the
    slot before the guess is already later than t)."""
    rnd = random.Random(20)
    cases: list[tuple[str, float, float, int]] = []
    while len([c for c in cases if c[0] == "down"]) < 5 or len(cases) < 40:
        slot = rnd.uniform(0, 2e9)
        interval = rnd.choice([1, 3, 7, 60, 86400, 10 ** rnd.randint(0, 6) + rnd.randint(0, 99)])
        k = rnd.randint(1, 10 ** rnd.randint(1, 9))
        t = slot + k * interval + rnd.choice([0.0, -1e-7, 1e-7])
        guess = 1 if t < slot else math.floor((t - slot) / interval) + 1
        right = first_later_slot(slot, t, interval)
        if guess < right:
            cases.append(("up", slot, t, interval))
        elif guess > right:
            cases.append(("down", slot, t, interval))
    return cases


@pytest.mark.rule("SCH-2")
def test_the_correction_loop_fixes_rounding_in_both_directions() -> None:
    cases = rounding_cases()
    assert {c[0] for c in cases} == {"up", "down"}
    for _, slot, t, interval in cases:
        k = first_later_slot(slot, t, interval)
        got = next_slot_after(slot, t, interval)
        assert got == slot + k * interval, (slot, t, interval)
        assert got is not None and got > t
        assert k == 1 or slot + (k - 1) * interval <= t


@pytest.mark.rule("SCH-2")
def test_a_guess_of_the_second_slot_is_corrected_down_to_the_first() -> None:
    # t just below slot + interval, where the division rounds up to exactly 1: the
    # first guess is k = 2, the right answer k = 1 (the smallest correction down)
    rnd = random.Random(3)
    found = []
    while len(found) < 3:
        slot = rnd.uniform(0, 10 ** rnd.randint(0, 12))
        interval = rnd.randint(1, 10 ** rnd.randint(0, 7))
        t = slot + interval
        for _ in range(rnd.randint(0, 3)):
            t = math.nextafter(t, -math.inf)
        guess_two = t >= slot and math.floor((t - slot) / interval) == 1
        if guess_two and first_later_slot(slot, t, interval) == 1:
            found.append((slot, t, interval))
    for slot, t, interval in found:
        assert next_slot_after(slot, t, interval) == slot + interval


@pytest.mark.rule("SCH-2")
@pytest.mark.parametrize(("t", "expected"), [(0.0, 110.0), (99.0, 110.0), (100.0, 110.0)])
def test_a_claim_before_or_on_its_slot_moves_one_interval_on(t: float, expected: float) -> None:
    # k >= 1: never the slot itself, never an earlier one
    assert next_slot_after(100.0, t, 10) == expected


@pytest.mark.rule("SCH-2")
def test_interval_one_is_a_valid_interval() -> None:
    assert next_slot_after(100.0, 100.5, 1) == 101.0
    assert next_slot_after(100.0, 100.0, 1) == 101.0


@pytest.mark.rule("SCH-2")
@pytest.mark.parametrize(
    ("slot", "t", "interval"),
    [
        (100.0, -math.inf, 10),  # a non-finite claim time
        (100.0, math.inf, 10),
        (100.0, math.nan, 10),
        (-math.inf, 0.0, 10),  # a non-finite slot
        (math.nan, 0.0, 10),
        (100.0, 100.0, 2.5),  # not an integer interval
        (100.0, 100.0, 0),
        (100.0, 100.0, -10),
        (1.7e308, 0.0, 10**308),  # the next slot overflows to infinity
    ],
)
def test_no_next_slot_when_it_cannot_be_computed(slot: float, t: float, interval: int) -> None:
    assert next_slot_after(slot, t, interval) is None


@pytest.mark.rule("SCH-3")
@pytest.mark.parametrize(
    "fields",
    [
        {"run_count": 1},
        {"last_run_at": 5.0},
        {"last_slot_at": 5.0},
    ],
)
def test_any_one_run_field_means_the_automation_has_run(fields: dict[str, object]) -> None:
    a = auto(created_at=0.0, interval_seconds=10, **fields)
    assert has_run(a)
    assert has_run(auto(run_once=True, **fields))
    assert next_run_at(auto(run_once=True, **fields)) is None
    assert not has_run(auto())


@pytest.mark.rule("SCH-2")
@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        # only the count: the run is taken as claimed at its base slot
        ({"run_count": 1, "created_at": 100.0}, 110.0),
        ({"run_count": 1, "created_at": 100.0, "first_run_at": 50.0}, 60.0),
        # only the slot: claimed at that slot
        ({"last_slot_at": 200.0, "created_at": 100.0}, 210.0),
        # a slot before the row's creation still counts from the slot, not the base
        ({"last_slot_at": 200.0, "created_at": 300.0}, 210.0),
        # only the run time: its slot is the run time
        ({"last_run_at": 150.0, "created_at": 100.0}, 160.0),
        ({"last_run_at": 150.0, "created_at": 100.0, "first_run_at": 50.0}, 160.0),
        # both: the slot counts, the run time says which slots are missed
        ({"last_run_at": 235.0, "last_slot_at": 200.0, "created_at": 100.0}, 240.0),
    ],
)
def test_next_run_of_rows_with_some_run_fields(fields: dict[str, object], expected: float) -> None:
    a = auto(interval_seconds=10, **fields)
    assert next_run_at(a) == expected
    assert is_due(a, expected)
    assert not is_due(a, expected - 0.5)
