"""`first_run_at` parsing (AUT-2): the ISO 8601 forms a person writes, Asia/Shanghai
for naive times, epoch numbers (>= 1e11 = milliseconds), independent of the host's TZ."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from markertools.domain.timeparse import epoch_from_number, parse_iso

SHANGHAI = timezone(timedelta(hours=8))  # no DST since 1991


@pytest.mark.rule("AUT-2")
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-10-30", datetime(2026, 10, 30, tzinfo=SHANGHAI)),
        ("2026-10-30T09:00", datetime(2026, 10, 30, 9, tzinfo=SHANGHAI)),
        ("2026-10-30 09:00:05", datetime(2026, 10, 30, 9, 0, 5, tzinfo=SHANGHAI)),
        ("2026-10-30T09:00:05.25", datetime(2026, 10, 30, 9, 0, 5, 250000, tzinfo=SHANGHAI)),
        ("2026-10-30T09:00:05.123456789", datetime(2026, 10, 30, 9, 0, 5, 123456, tzinfo=SHANGHAI)),
        ("2026-10-30T09:00Z", datetime(2026, 10, 30, 9, tzinfo=UTC)),
        (
            "2026-10-30T09:00:00-05:30",
            datetime(2026, 10, 30, 9, tzinfo=timezone(-timedelta(hours=5, minutes=30))),
        ),
        (
            "2026-10-30 23:59:59+14:00",
            datetime(2026, 10, 30, 23, 59, 59, tzinfo=timezone(timedelta(hours=14))),
        ),
    ],
)
def test_accepted_iso_forms(text: str, expected: datetime) -> None:
    assert parse_iso(text) == expected.timestamp()


@pytest.mark.rule("AUT-2")
@pytest.mark.parametrize(
    "text",
    [
        "2026-10-30X09:00",  # any other separator (fromisoformat accepts it)
        "2026-10-30t09:00",
        "2026-W44-5",  # week date
        "2026-303",  # ordinal date
        "20261030",  # compact forms
        "20261030T0900",
        "2026-10-30T0900",
        "2026-10-30T09",  # hour only
        "2026-10-30T09:00+0800",  # offset without a colon
        "2026-10-30T09:00+08",
        "2026-10-30T09:00z",
        " 2026-10-30",
        "2026-10-30 ",
        "2026-1-5",
        "２０２６-10-30",  # non-ASCII digits
        "2026-02-30",
        "2026-13-01",
        "2026-10-30T24:00",
        "2026-10-30T09:60",
        "2026-10-30T09:00:60",
        "2026-10-30T09:00+24:00",
        "0000-01-01",
        "2026-10-30T09:00:00.",
        "2026-10-30T09:00:00.1234567890",
        "",
        "tomorrow",
    ],
)
def test_refused_iso_forms(text: str) -> None:
    assert parse_iso(text) is None


@pytest.mark.rule("AUT-2")
@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (0, 0.0),
        (1793322000, 1793322000.0),
        (99999999999.5, 99999999999.5),
        (1e11, 1e8),
        (1793322000123, 1793322000.123),
    ],
)
def test_epoch_numbers_milliseconds_from_1e11(value: float, seconds: float) -> None:
    assert epoch_from_number(value) == pytest.approx(seconds)


@st.composite
def iso_strings(draw: st.DrawFn) -> str:
    day = draw(
        st.dates(min_value=datetime(1900, 1, 1).date(), max_value=datetime(2200, 12, 31).date())
    )
    text = day.isoformat()
    if draw(st.booleans()):
        text += draw(st.sampled_from(["T", " "]))
        text += f"{draw(st.integers(0, 23)):02d}:{draw(st.integers(0, 59)):02d}"
        if draw(st.booleans()):
            text += f":{draw(st.integers(0, 59)):02d}"
            if draw(st.booleans()):
                text += "." + draw(st.from_regex(r"[0-9]{1,9}", fullmatch=True))
        offset = draw(
            st.sampled_from(["", "", "Z", "+08:00", "-05:00", "+05:45", "-00:00", "+13:00"])
        )
        text += offset
    return text


@contextmanager
def host_tz(zone: str) -> Iterator[None]:
    saved = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = saved
        time.tzset()


@pytest.mark.rule("AUT-2")
@given(st.lists(iso_strings(), min_size=1, max_size=20))
def test_same_instant_under_every_host_time_zone(texts: list[str]) -> None:
    results = []
    for zone in ("UTC", "America/New_York", "Asia/Shanghai", "Pacific/Chatham"):
        with host_tz(zone):
            results.append([parse_iso(t) for t in texts])
    assert all(r == results[0] for r in results)
    assert all(v is not None for v in results[0])


@pytest.mark.rule("AUT-2")
def test_same_instant_in_subprocesses_with_tz_set() -> None:
    texts = [
        "2026-10-30",
        "2026-03-08 02:30",
        "2026-11-01T01:30:00",
        "1988-04-17 02:30",
        "2026-10-30T09:00Z",
    ]
    code = (
        "import json, sys\nfrom markertools.domain.timeparse import parse_iso\n"
        "print(json.dumps([parse_iso(t) for t in json.loads(sys.argv[1])]))"
    )
    outputs = set()
    for zone in ("UTC", "America/New_York", "Asia/Shanghai", "Europe/London"):
        env = {**os.environ, "TZ": zone}
        result = subprocess.run(
            [sys.executable, "-c", code, json.dumps(texts)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        outputs.add(result.stdout)
    (only,) = outputs
    values = json.loads(only)
    assert values[0] == datetime(2026, 10, 30, tzinfo=SHANGHAI).timestamp()
    assert values[3] is not None  # Shanghai's 1988 DST: resolved by the IANA rules, not the host


@pytest.mark.rule("AUT-2")
@given(st.text(max_size=40))
def test_parse_iso_never_raises(text: str) -> None:
    result = parse_iso(text)
    assert result is None or isinstance(result, float)
