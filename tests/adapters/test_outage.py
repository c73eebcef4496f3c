"""FLT-3: the outage helper's pure parts - the backoff pauses (capped, with full jitter)
and one outage's life (begins at the first failure, ends at the next success, too long
past its budget), with the two log lines a person reads."""

from __future__ import annotations

import logging
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from markertools_adapters._outage import (
    BACKOFF_CAP,
    Outage,
    OutageTooLong,
    backoff_delay,
    retry_call,
)
from markertools_adapters.errors import StoreError, StoreUnavailable


@pytest.mark.rule("FLT-3")
@given(
    attempt=st.integers(min_value=-5, max_value=10_000),
    draw=st.floats(min_value=0.0, max_value=1.0),
    base=st.floats(min_value=0.001, max_value=10.0),
    cap=st.floats(min_value=0.001, max_value=60.0),
)
def test_a_pause_is_never_negative_nor_above_its_cap(
    attempt: int, draw: float, base: float, cap: float
) -> None:
    pause = backoff_delay(attempt, base=base, cap=cap, rng=lambda: draw)
    assert 0.0 <= pause <= cap
    assert pause <= base * 2 ** max(0, min(attempt, 30)) + 1e-9


@pytest.mark.rule("FLT-3")
def test_the_ceiling_doubles_until_the_cap() -> None:
    ceilings = [backoff_delay(n, rng=lambda: 1.0) for n in range(10)]
    assert ceilings[:4] == [0.1, 0.2, 0.4, 0.8]
    assert ceilings[-1] == BACKOFF_CAP
    assert ceilings == sorted(ceilings)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.mark.rule("FLT-3")
def test_one_outage_is_two_log_lines_with_its_cause(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    log = logging.getLogger("markertools.test.outage")
    outage = Outage("the database", 30, log=log, clock=clock)
    with caplog.at_level(logging.WARNING, logger=log.name):
        for _ in range(5):  # five failed tries: one line
            outage.failed(StoreUnavailable("OperationalError: connection refused"))
            clock.t += 2
        assert outage.active and outage.outages == 1
        outage.ok()
        outage.ok()  # no outage: nothing more
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "the database outage began: StoreUnavailable: OperationalError: connection refused",
        "the database outage ended after 10.0 s (it began with: StoreUnavailable: "
        "OperationalError: connection refused)",
    ]
    assert not outage.active


@pytest.mark.rule("FLT-3")
def test_an_outage_longer_than_its_budget_names_the_budget_and_the_cause() -> None:
    clock = Clock()
    outage = Outage("the database", 30, clock=clock)
    outage.failed(StoreUnavailable("server closed the connection"))
    clock.t += 31
    with pytest.raises(OutageTooLong) as caught:
        outage.failed(StoreUnavailable("server closed the connection"))
    assert str(caught.value) == (
        "the database was unavailable for 31 s, longer than the outage budget of 30 s"
        " (--store-outage-seconds); last error: StoreUnavailable: server closed the connection"
    )
    again = Outage("the database", 30, clock=clock)  # 30.4 s: never "30 s, longer than 30 s"
    again.failed(StoreUnavailable("server closed the connection"))
    clock.t += 30.4
    with pytest.raises(OutageTooLong) as caught:
        again.failed(StoreUnavailable("server closed the connection"))
    assert str(caught.value).startswith(
        "the database was unavailable for 30.4 s, longer than the outage budget of 30 s"
    )


@pytest.mark.rule("FLT-3", "FLT-8")
def test_retry_call_retries_only_what_a_retry_can_cure() -> None:
    outage = Outage("the database", 60)
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise StoreUnavailable("database is locked")
        return "ok"

    stop = threading.Event()
    assert retry_call(outage, flaky, stop=stop) == "ok"
    assert len(calls) == 3 and not outage.active

    def broken() -> None:
        calls.append(1)
        raise StoreError("no such table: tasks")

    before = len(calls)
    with pytest.raises(StoreError, match="no such table"):
        retry_call(outage, broken, stop=stop)
    assert len(calls) == before + 1  # never retried
