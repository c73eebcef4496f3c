"""What a same-turn poll or wait call waits for, read before its delivery
(`plan_call_wait`), and its delivery after a wait done elsewhere (`deliver_call(...,
waited=SECONDS)`), in the pure core on the memory store and a virtual clock (TOL-11,
TOL-6, TOL-4): the report counts the earlier wait exactly ("timed out after N s", or
cut short at the call's limit), the call's limit text says nothing of later turns,
`calls_left` counts down the turn's cap, and a plan is made only for a call whose
delivery would wait - reading, never changing, the world."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from markertools import CallWait, Task, deliver_call, plan_call_wait
from markertools.domain.model import PermissionGrant, Project
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.memory import MemoryStore
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

NOW = 1_798_333_200.0


def _store() -> MemoryStore:
    return MemoryStore.from_world(
        World(
            now=NOW,
            projects=(Project("p1", "shop"), Project("p2", "other")),
            permissions=(
                PermissionGrant("u1", "p1", ("read", "create_task")),
                PermissionGrant("u3", "p1", ("create_task",)),
            ),
            tasks=(
                Task("t1", "p1", status="running", created_by="u1", turn=1),
                Task("t2", "p1", status="running", created_by="u1", parent_task_id="t1"),
                Task("t3", "p1", status="queued", created_by="u1", parent_task_id="t1"),
                Task("t4", "p1", status="completed", created_by="u1", parent_task_id="t1"),
                Task("t9", "p2", status="running", created_by="u2"),
                Task("g1", "p1", status="running", created_by="u1", goal_mode=True, goal="g"),
                Task("r1", "p1", status="running", created_by="u3", turn=1),
            ),
        )
    )


def _ports(store: MemoryStore, clock: VirtualClock | None = None) -> Any:
    return store_ports(
        store, clock=clock or VirtualClock(NOW), random=SeededRandom(1), executor=NoopExecutor()
    )


def _plan(kind: str, args: Any, store: MemoryStore | None = None, **kw: Any) -> CallWait | None:
    store = store if store is not None else _store()
    sender = kw.pop("sender", "t1")
    return plan_call_wait(kind, args, sender=sender, ports=_ports(store), **kw)


# ---- plan_call_wait --------------------------------------------------------------------------


@pytest.mark.rule("TOL-11")
def test_a_poll_or_wait_of_running_targets_is_planned_with_its_clamped_timeout() -> None:
    store = _store()
    before = store.export_world(NOW)
    poll = _plan("task_poll", {"task_id": "t2", "timeout_seconds": 99_999}, store)
    wait = _plan("wait_threads", {"task_ids": ["t2", "t4", "t3", "t2", "t9"]}, store)
    short = _plan("task_poll", {"task_id": "t3", "wait_seconds": 7}, store)
    assert poll == CallWait("t1", ("t2",), 3600.0)  # clamped to 0..3600 as for a block
    # finished, foreign and repeated targets are not waited for; the default is 300 s
    assert wait == CallWait("t1", ("t2", "t3"), 300.0)
    assert short == CallWait("t1", ("t3",), 7.0)
    assert store.export_world(NOW) == before  # nothing counted, audited or journalled


@pytest.mark.rule("TOL-11")
@pytest.mark.parametrize(
    ("kind", "args", "kw"),
    [
        ("task_list", {}, {}),  # not a waiting kind
        ("no_such_tool", {"task_id": "t2"}, {}),
        ("task_poll", {"task_id": "t2"}, {}),  # timeout 0: one snapshot
        ("task_poll", {"task_id": "t4", "timeout_seconds": 60}, {}),  # finished already
        ("task_poll", {"task_id": "t9", "timeout_seconds": 60}, {}),  # another project
        ("task_poll", {"task_id": "t1", "timeout_seconds": 60}, {}),  # the sender itself
        ("task_poll", {"task_id": "nope", "timeout_seconds": 60}, {}),
        ("task_poll", {"task_id": "@child", "timeout_seconds": 60}, {}),  # no names in a call
        ("task_poll", {"task_id": 5, "timeout_seconds": 60}, {}),  # the validator refuses
        ("task_poll", ["t2"], {}),  # no JSON object
        ("wait_threads", {"task_ids": ["t4", "t9"]}, {}),  # nothing to wait for
        ("task_poll", {"task_id": "t2", "timeout_seconds": 60}, {"sender": "g1"}),  # a goal
        ("task_poll", {"task_id": "t2", "timeout_seconds": 60}, {"sender": "t9"}),  # other p
        ("task_poll", {"task_id": "t2", "timeout_seconds": 60}, {"sender": "t4"}),  # finished
        ("task_poll", {"task_id": "t2", "timeout_seconds": 60}, {"sender": "r1"}),  # no read
        ("task_poll", {"task_id": "t2", "timeout_seconds": 60}, {"call_id": ""}),
    ],
)
def test_a_call_its_delivery_answers_at_once_is_not_planned(
    kind: str, args: Any, kw: dict[str, Any]
) -> None:
    assert _plan(kind, args, **kw) is None


@pytest.mark.rule("TOL-11", "TOL-4", "TOL-5")
def test_a_call_over_its_cap_or_a_repeat_of_a_finished_call_id_is_not_planned() -> None:
    store = _store()
    ports = _ports(store)
    args = {"task_ids": ["t2"], "timeout_seconds": 0}
    first = deliver_call("wait_threads", args, sender="t1", ports=ports, call_id="w1")
    assert first.entry.outcome == "done"
    waiting = {"task_ids": ["t2"], "timeout_seconds": 60}
    assert plan_call_wait("wait_threads", waiting, sender="t1", ports=ports, call_id="w1") is None
    assert plan_call_wait("wait_threads", waiting, sender="t1", ports=ports) is not None
    deliver_call("wait_threads", args, sender="t1", ports=ports)  # the turn's second: the cap
    assert plan_call_wait("wait_threads", waiting, sender="t1", ports=ports) is None
    assert (
        plan_call_wait(
            "task_poll", {"task_id": "t2", "timeout_seconds": 9}, sender="t1", ports=ports
        )
        is not None
    )  # another kind's cap


# ---- deliver_call(..., waited=SECONDS) -------------------------------------------------------


def _poll(clock: VirtualClock, store: MemoryStore, waited: float, **kw: Any) -> Any:
    args = {"task_id": "t2", "interval_seconds": 60, "timeout_seconds": kw.pop("timeout")}
    ports = attrs.evolve(_ports(store, clock))
    return deliver_call("task_poll", args, sender="t1", ports=ports, waited=waited, **kw)


@pytest.mark.rule("TOL-11", "TOL-6")
def test_a_call_that_waited_its_timeout_already_reports_it_without_waiting_again() -> None:
    clock = VirtualClock(NOW)
    result = _poll(clock, _store(), 30.0, timeout=30, deadline=100)
    assert clock.slept == [] and clock.now() == NOW
    assert "task t2: status 'running', NOT finished: timed out after 30 s" in result.text


@pytest.mark.rule("TOL-11", "TOL-6")
def test_the_rest_of_the_timeout_is_waited_from_where_the_earlier_wait_left_off() -> None:
    clock = VirtualClock(NOW)
    result = _poll(clock, _store(), 4.0, timeout=10, deadline=None)
    assert sum(clock.slept) == 6.0  # 10 s in all, 4 of them before the delivery
    assert "NOT finished: timed out after 10 s, last status seen 'running'" in result.text


@pytest.mark.rule("TOL-11", "TOL-6")
def test_a_call_cut_short_by_its_limit_says_so_in_both_locales_and_nothing_of_later_turns() -> None:
    for locale, expected in (
        (
            "en",
            "NOT finished: stopped waiting after 5 s, the limit of one call (5 s), "
            "last status seen 'running'",
        ),
        (
            "zh",
            "未结束：等待 5 秒后停止，已到单次调用的上限（5 秒），最后看到的状态为“running”",
        ),
    ):
        clock = VirtualClock(NOW)
        result = _poll(clock, _store(), 5.0, timeout=600, deadline=5, locale=locale)
        assert clock.slept == []
        assert expected in result.text
        assert "later turn" not in result.text and "之后的轮次" not in result.text


@pytest.mark.rule("TOL-11")
@pytest.mark.parametrize("waited", [-1.0, float("nan"), float("inf"), True, "3"])
def test_a_bad_waited_is_a_value_error(waited: Any) -> None:
    with pytest.raises(ValueError, match="waited must be a finite number of seconds"):
        deliver_call("task_list", {}, sender="t1", ports=_ports(_store()), waited=waited)


@pytest.mark.rule("TOL-4")
def test_calls_left_counts_down_the_turns_cap() -> None:
    ports = _ports(_store())
    args = {"task_ids": ["t4"]}
    results = [deliver_call("wait_threads", args, sender="t1", ports=ports) for _ in range(3)]
    assert [r.entry.outcome for r in results] == ["done", "done", "ignored"]
    assert [r.calls_left for r in results] == [1, 0, 0]
    refused = deliver_call("wait_threads", args, sender="t4", ports=ports)
    assert refused.entry.outcome == "rejected" and refused.calls_left is None  # not counted
