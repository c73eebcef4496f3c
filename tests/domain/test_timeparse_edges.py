"""Edges of time parsing the mutation run found unread (issue 20): the offset limits of
an ISO 8601 time (hours 0-23, minutes 0-59) and the error for a zone name that is not
a string (AUT-2 and DOM-5 of docs/rules.md)."""

from __future__ import annotations

import pytest

from markertools.domain.timeparse import default_time_zone, parse_iso, set_default_time_zone


@pytest.mark.rule("AUT-2")
@pytest.mark.parametrize(
    ("offset", "seconds"),
    [
        ("+23:00", 23 * 3600),
        ("-23:59", -(23 * 3600 + 59 * 60)),
        ("+05:59", 5 * 3600 + 59 * 60),
        ("+00:00", 0),
    ],
)
def test_offsets_up_to_23_59_are_read(offset: str, seconds: int) -> None:
    assert parse_iso("2026-01-02T00:00:00" + offset) == 1767312000 - seconds


@pytest.mark.rule("AUT-2")
@pytest.mark.parametrize("offset", ["+05:60", "-00:60", "+24:00", "+24:30", "-99:00"])
def test_offsets_outside_23_59_are_refused(offset: str) -> None:
    assert parse_iso("2026-01-02T00:00:00" + offset) is None


@pytest.mark.rule("AUT-2")
@pytest.mark.parametrize("name", [5, None, "", "   "])
def test_a_zone_name_that_is_not_a_name_is_a_value_error(name: object) -> None:
    expected = f"time zone must be an IANA zone name such as 'Europe/Berlin', not {name!r}"
    with pytest.raises(ValueError) as raised:
        set_default_time_zone(name)  # type: ignore[arg-type]
    assert str(raised.value) == expected
    with pytest.raises(ValueError) as raised, default_time_zone(name):  # type: ignore[arg-type]
        pass
    assert str(raised.value) == expected
