"""The default time zone of AUT-2 is a setting (issue 19): Asia/Shanghai unless an
embedding codebase chooses another IANA zone, process-wide or for one block."""

from __future__ import annotations

import threading
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from markertools import parse_turn
from markertools.domain import timeparse

NAIVE = "2026-10-30T09:00"


def _epoch(zone: str) -> float:
    return datetime(2026, 10, 30, 9, 0, tzinfo=ZoneInfo(zone)).timestamp()


@pytest.mark.rule("AUT-2")
def test_asia_shanghai_is_the_default() -> None:
    assert timeparse.default_time_zone_name() == "Asia/Shanghai"
    assert timeparse.parse_iso(NAIVE) == _epoch("Asia/Shanghai")


@pytest.mark.rule("AUT-2")
def test_a_block_can_choose_another_zone_and_offsets_still_win() -> None:
    with timeparse.default_time_zone("Europe/Berlin"):
        assert timeparse.parse_iso(NAIVE) == _epoch("Europe/Berlin")
        assert timeparse.parse_iso(NAIVE + "Z") == _epoch("UTC")
        plan = parse_turn(
            '```automation-create\n{"prompt": "p", "interval_seconds": 3600, '
            f'"first_run_at": "{NAIVE}"}}\n```'
        )
        assert plan.commands[0].params.first_run_at == _epoch("Europe/Berlin")
    assert timeparse.parse_iso(NAIVE) == _epoch("Asia/Shanghai")


@pytest.mark.rule("AUT-2")
def test_the_process_wide_setting_and_thread_isolation_of_blocks() -> None:
    try:
        timeparse.set_default_time_zone("America/New_York")
        assert timeparse.parse_iso(NAIVE) == _epoch("America/New_York")
        seen: list[float | None] = []
        with timeparse.default_time_zone("Europe/Berlin"):
            worker = threading.Thread(target=lambda: seen.append(timeparse.parse_iso(NAIVE)))
            worker.start()
            worker.join()
        assert seen == [_epoch("America/New_York")]  # a block is this thread's only
    finally:
        timeparse.set_default_time_zone("Asia/Shanghai")


def test_an_unknown_zone_is_refused_when_set() -> None:
    for bad in ("Mars/Olympus", "", "../etc/passwd"):
        with pytest.raises(ValueError):
            timeparse.set_default_time_zone(bad)
    assert timeparse.default_time_zone_name() == "Asia/Shanghai"


@pytest.mark.rule("AUT-2")
def test_reasons_name_the_configured_default_zone() -> None:
    from markertools import parse_turn
    from markertools.domain.timeparse import default_time_zone

    body = '```automation-create\n{"prompt": "x", "first_run_at": "not a time"}\n```\n'
    with default_time_zone("Europe/Berlin"):
        reason = parse_turn(body).issues[0].reason.render("en")
    assert "without one it is Europe/Berlin time" in reason
    assert "Asia/Shanghai" not in reason
    default = parse_turn(body).issues[0].reason.render("en")
    assert "without one it is Asia/Shanghai time" in default
