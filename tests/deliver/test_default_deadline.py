"""TRN-11, issue 24 item 3: a library call without `deadline` no longer waits for as long
as its blocks ask (five 3600 s polls and two waits were hours): all the waiting of one
delivery shares DEFAULT_DELIVERY_DEADLINE (600 s on the clock port). A caller raises or
lowers it with `deadline=`, and `deadline=None` is the explicit opt-in to no bound. The
agent reads in the entry that the delivery's deadline, not its own timeout, cut the
wait - and how long the deadline was - or that the delivery was cancelled."""

from __future__ import annotations

import threading

import pytest
from support.strategies.core import NOW, make_world, poll, rig, task, wait

import markertools
from markertools import DEFAULT_DELIVERY_DEADLINE, deliver_turn
from markertools.parse.plan import TurnPlan

DEADLINE_CUT = (
    "NOT finished: stopped waiting after {waited} s because the delivery's deadline passed "
    "({deadline} s from its start, shared by every poll and wait of the turn), last status "
    "seen 'running'; poll again in a later turn"
)


def long_turn() -> TurnPlan:
    """Five polls and two waits of an hour each on a task that never finishes."""
    polls = [poll("t2", line=i, interval_seconds=60, timeout_seconds=3600) for i in range(1, 6)]
    waits = [wait("t2", line=i, interval_seconds=60, timeout_seconds=3600) for i in (6, 7)]
    return TurnPlan(commands=(*polls, *waits), issues=())


def reasons(report: markertools.DeliveryReport) -> list[str]:
    return [e.reason.render("en") for e in report.entries]


@pytest.mark.rule("TRN-11")
def test_the_default_deadline_is_public_and_600_seconds() -> None:
    assert DEFAULT_DELIVERY_DEADLINE == 600.0
    assert "DEFAULT_DELIVERY_DEADLINE" in markertools.__all__
    assert markertools.DEFAULT_DELIVERY_DEADLINE is DEFAULT_DELIVERY_DEADLINE


@pytest.mark.rule("TRN-11")
def test_without_a_deadline_all_the_waiting_of_a_turn_stops_at_600_seconds() -> None:
    r = rig(make_world(task("t1"), task("t2", status="running")))
    report = deliver_turn(long_turn(), sender="t1", outcome="completed", ports=r.ports)
    assert r.clock.now() - NOW == 600  # not 7 x 3600 s
    assert [e.outcome for e in report.entries] == ["done"] * 7
    first, *rest = reasons(report)
    assert DEADLINE_CUT.format(waited=600, deadline=600) in first
    # the later blocks find the deadline passed: each is one snapshot, cut at 0 s
    for text in rest:
        assert DEADLINE_CUT.format(waited=0, deadline=600) in text
    assert "because the delivery's deadline passed (600 s" in (report.message or "")


@pytest.mark.rule("TRN-11")
def test_a_caller_raises_or_lowers_the_deadline() -> None:
    for seconds in (1200, 90):
        r = rig(make_world(task("t1"), task("t2", status="running")))
        report = deliver_turn(
            long_turn(), sender="t1", outcome="completed", ports=r.ports, deadline=seconds
        )
        assert r.clock.now() - NOW == seconds
        assert DEADLINE_CUT.format(waited=seconds, deadline=seconds) in reasons(report)[0]


@pytest.mark.rule("TRN-11")
def test_deadline_none_is_the_explicit_opt_in_to_no_bound() -> None:
    r = rig(make_world(task("t1"), task("t2", status="running")))
    plan = TurnPlan(commands=(poll("t2", interval_seconds=60, timeout_seconds=3600),), issues=())
    report = deliver_turn(plan, sender="t1", outcome="completed", ports=r.ports, deadline=None)
    assert r.clock.now() - NOW == 3600
    (text,) = reasons(report)
    assert "NOT finished: timed out after 3600 s, last status seen 'running'" in text
    assert "deadline" not in text


@pytest.mark.rule("TRN-11")
def test_a_poll_that_ends_before_the_deadline_does_not_mention_it() -> None:
    r = rig(make_world(task("t1"), task("t2", status="running")))
    plan = TurnPlan(commands=(poll("t2", interval_seconds=10, timeout_seconds=300),), issues=())
    report = deliver_turn(plan, sender="t1", outcome="completed", ports=r.ports)
    (text,) = reasons(report)
    assert "NOT finished: timed out after 300 s, last status seen 'running'" in text
    assert "deadline" not in text


@pytest.mark.rule("TRN-11")
def test_a_cancellation_is_named_as_such_not_as_the_deadline() -> None:
    r = rig(make_world(task("t1"), task("t2", status="running")))
    stop = threading.Event()
    stop.set()
    report = deliver_turn(long_turn(), sender="t1", outcome="completed", ports=r.ports, cancel=stop)
    assert r.clock.now() == NOW
    for text in reasons(report):
        assert (
            "NOT finished: stopped waiting after 0 s because the delivery was cancelled, last "
            "status seen 'running'; poll again in a later turn"
        ) in text
    zh = report.entries[0].reason.render("zh")
    assert "投递已被取消，等待 0 秒后停止" in zh


@pytest.mark.rule("TRN-11")
def test_the_deadline_cut_reads_in_chinese_too() -> None:
    r = rig(make_world(task("t1"), task("t2", status="running")))
    report = deliver_turn(long_turn(), sender="t1", outcome="completed", ports=r.ports)
    assert (
        "未结束：投递的截止时间已到（从投递开始共 600 秒，本轮所有查询与等待共用），等待 600 秒后停止"
    ) in report.entries[0].reason.render("zh")
