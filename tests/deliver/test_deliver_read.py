"""task-poll and wait-threads on the clock port (POL-1..4, WAI-1..5, TRN-5): reads at once,
then every interval until terminal or timeout, one store read per round, early stop when
the sender is cancelled; nothing sleeps on the real clock (VirtualClock)."""

from __future__ import annotations

import attrs
import pytest
from support.strategies.core import (
    NOW,
    CountingStore,
    FixedPermissions,
    RaisingPermissions,
    create,
    make_world,
    poll,
    rig,
    task,
    wait,
)

from markertools.deliver.handlers.read import round_bound
from markertools_adapters.clock import VirtualClock


class ScriptedClock(VirtualClock):
    """A virtual clock that applies scheduled task changes when time passes them."""

    def __init__(self, now, store, script):
        super().__init__(now)
        self.store = store
        self.script = sorted(script, key=lambda s: s[0])  # (at, task_id, changes)

    def sleep(self, seconds):
        super().sleep(seconds)
        while self.script and self.script[0][0] <= self.now():
            _, task_id, changes = self.script.pop(0)
            current = self.store.get_task(task_id)
            self.store.transition_task(task_id, current.status, changes)


def scripted(world, script, **overrides):
    r = rig(world, **overrides)
    clock = ScriptedClock(world.now, r.store, script)
    r.clock = clock
    r.ports = attrs.evolve(r.ports, clock=clock)
    return r


def text(report, index=0):
    return report.entries[index].reason.render("en")


# ---- task-poll ----------------------------------------------------------------------------------


@pytest.mark.rule("POL-1", "POL-3")
def test_timeout_zero_is_one_immediate_snapshot():
    r = rig(make_world(task("t1"), task("t2")))
    report = r.deliver(poll("t2", timeout_seconds=0))
    assert report.entries[0].outcome == "done"
    assert r.clock.slept == []
    assert "immediate snapshot" in text(report)


@pytest.mark.rule("POL-3", "POL-1")
def test_poll_reads_every_interval_until_the_target_is_terminal():
    world = make_world(task("t1"), task("t2", status="running"))
    r = scripted(world, [(NOW + 12, "t2", {"status": "completed", "result_text": "all done"})])
    report = r.deliver(poll("t2", interval_seconds=5, timeout_seconds=60))
    assert r.clock.slept == [5, 5, 5]
    out = text(report)
    assert report.entries[0].outcome == "done"
    assert "'completed', finished" in out and "all done" in out


@pytest.mark.rule("POL-3")
def test_a_poll_that_times_out_is_done_and_says_so():
    r = rig(make_world(task("t1"), task("t2", status="queued")))
    report = r.deliver(poll("t2", interval_seconds=7, timeout_seconds=20))
    assert r.clock.slept == [7, 7, 6]
    assert report.entries[0].outcome == "done"
    out = text(report)
    assert "NOT finished: timed out after 20 s" in out and "last status seen 'queued'" in out


@pytest.mark.rule("POL-2")
@pytest.mark.parametrize(
    "target,needle",
    [("nope", "does not exist"), ("other", "another project"), ("t1", "cannot poll itself")],
)
def test_poll_rejections_change_nothing(target, needle):
    r = rig(make_world(task("t1"), task("other", project="p2")))
    before = r.world()
    report = r.deliver(poll(target, timeout_seconds=30))
    assert report.entries[0].outcome == "rejected"
    assert needle in text(report)
    assert r.clock.slept == []
    assert r.world().tasks == before.tasks


@pytest.mark.rule("POL-2", "GAT-4")
@pytest.mark.parametrize(
    "perms,needle",
    [(FixedPermissions([]), "lacks the 'read'"), (RaisingPermissions(), "lookup failed")],
)
def test_poll_needs_read_and_fails_closed(perms, needle):
    r = rig(make_world(task("t1"), task("t2")), permissions=perms)
    report = r.deliver(poll("t2"))
    assert report.entries[0].outcome == "rejected"
    assert needle in text(report)


@pytest.mark.rule("POL-3", "DOM-2")
def test_goal_tasks_may_be_polled():
    r = rig(make_world(task("t1"), task("g", goal_mode=True, result_text="round 3")))
    report = r.deliver(poll("g"))
    assert report.entries[0].outcome == "done" and "round 3" in text(report)


@pytest.mark.rule("POL-4", "DOM-4")
def test_snapshot_keeps_the_tail_in_code_points_and_says_how_much_was_cut():
    output = "头" * 150 + "🙂" * 100 + "END"  # 253 code points
    r = rig(
        make_world(
            task("t1"),
            task("t2", status="completed", result_text=output, model="m-1", actual_model="m-2"),
        )
    )
    report = r.deliver(poll("t2", chars=200))
    out = text(report)
    assert "the last 200 of 253 characters (53 earlier characters cut)" in out
    assert "头" * 97 + "🙂" * 100 + "END" in out
    assert "头" * 98 not in out
    assert "model m-2" in out  # actual_model before model


@pytest.mark.rule("POL-4")
def test_snapshot_shows_result_then_error_and_falls_back_to_model():
    r = rig(
        make_world(
            task("t1"),
            task(
                "t2",
                status="failed",
                result_text="partial",
                error_text="Traceback: boom",
                model="m-1",
            ),
        )
    )
    out = text(r.deliver(poll("t2")))
    assert out.index("partial") < out.index("Traceback: boom")
    assert "model m-1" in out


# ---- wait-threads -------------------------------------------------------------------------------


def counted_rig(world, script=()):
    r = scripted(world, list(script))
    counting = CountingStore(r.store)
    r.ports = attrs.evolve(r.ports, tasks=counting)
    return r, counting


@pytest.mark.rule("WAI-4", "WAI-3")
@pytest.mark.parametrize("n", [1, 4, 8])
def test_each_wait_round_is_one_store_read_whatever_the_number_of_targets(n):
    targets = [task(f"w{i}", status="running") for i in range(n)]
    r, counting = counted_rig(make_world(task("t1"), *targets))
    report = r.deliver(wait(*(t.id for t in targets), interval_seconds=10, timeout_seconds=60))
    assert report.entries[0].outcome == "done"
    rounds = len(r.clock.slept)
    assert rounds == 6
    # one get_task: delivery's initial read of the sender; then one get_tasks per round
    assert counting.calls == {"get_task": 1, "get_tasks": rounds + 1}


@pytest.mark.rule("WAI-4")
def test_wait_ends_when_every_target_is_terminal_and_reports_all_together():
    world = make_world(task("t1"), task("a"), task("b"), task("c"))
    script = [
        (NOW + 3, "a", {"status": "completed", "result_text": "A out"}),
        (NOW + 14, "b", {"status": "failed", "error_text": "B err"}),
        (NOW + 9, "c", {"status": "merged"}),
    ]
    r, counting = counted_rig(world, script)
    report = r.deliver(wait("a", "b", "c", interval_seconds=5, timeout_seconds=300))
    assert r.clock.slept == [5, 5, 5]
    out = text(report)
    assert "3 finished, 0 not finished" in out
    assert out.index("A out") < out.index("B err")
    assert counting.calls == {"get_task": 1, "get_tasks": 4}


@pytest.mark.rule("WAI-3", "WAI-2")
def test_bad_targets_are_settled_at_once_and_dropped_ones_are_named():
    world = make_world(task("t1"), task("ok", status="running"), task("far", project="p2"))
    r = rig(world)
    report = r.deliver(
        wait(
            "ok",
            "ghost",
            "far",
            "t1",
            dropped_task_ids=("x9", "x10"),
            timeout_seconds=10,
            interval_seconds=5,
        )
    )
    entry = report.entries[0]
    assert entry.outcome == "done"
    out = text(report)
    assert "task ghost: not waited for: task ghost does not exist" in out
    assert "task far: not waited for" in out and "another project" in out
    assert "task t1: not waited for: a task cannot wait for itself" in out
    assert "over the 8-target limit" in out and "x9, x10" in out
    assert "NOT finished: timed out after 10 s" in out
    assert "1 not finished; 3 target(s) settled at once" in out


@pytest.mark.rule("WAI-3")
def test_a_wait_with_no_valid_target_is_rejected_without_waiting():
    r = rig(make_world(task("t1")))
    report = r.deliver(wait("ghost", "t1"))
    assert report.entries[0].outcome == "rejected"
    assert report.entries[0].reason.render("en") == (
        "no target can be waited for:\ntask ghost: not waited for: task ghost does not exist\n\n"
        "task t1: not waited for: a task cannot wait for itself"
    )
    assert r.clock.slept == []


@pytest.mark.rule("WAI-3", "GAT-4")
def test_wait_needs_read():
    r = rig(make_world(task("t1"), task("t2")), permissions=RaisingPermissions())
    report = r.deliver(wait("t2"))
    assert report.entries[0].outcome == "rejected" and "lookup failed" in text(report)


@pytest.mark.rule("WAI-1", "VAL-8")
def test_targets_resolving_to_the_same_task_are_waited_for_once():
    r = rig(make_world(task("t1")))
    report = r.deliver(create("x", name="x"), wait("@x", "@x", timeout_seconds=0))
    created = report.entries[0].target
    out = text(report, 1)
    assert out.count(f"task {created}:") == 1
    assert report.entries[1].target == created


@pytest.mark.rule("WAI-5", "TRN-5", "DOM-8")
def test_wait_stops_when_the_sender_is_cancelled_and_later_blocks_do_not_run():
    world = make_world(task("t1"), task("a"), task("b", status="failed"))
    r, counting = counted_rig(world, [(NOW + 15, "t1", {"status": "interrupted"})])
    report = r.deliver(
        wait("a", timeout_seconds=600, interval_seconds=5), poll("a", line=9), create(line=10)
    )
    assert sum(r.clock.slept) == 15
    # the sender was seen cancelled by the wait's own round read (no extra get_task)
    assert counting.calls == {"get_task": 1, "get_tasks": 4}
    assert "you (the sender) were cancelled" in text(report)
    assert [e.outcome for e in report.entries] == ["done", "rejected", "rejected"]
    assert "cancelled during delivery" in text(report, 1)
    assert len(r.world().tasks) == 3


@pytest.mark.rule("WAI-5", "POL-3")
def test_poll_stops_when_the_sender_is_cancelled():
    world = make_world(task("t1"), task("a"))
    r, _ = counted_rig(world, [(NOW + 10, "t1", {"status": "interrupted"})])
    report = r.deliver(poll("a", timeout_seconds=3600, interval_seconds=5))
    assert sum(r.clock.slept) == 10
    assert "you (the sender) were cancelled" in text(report)


@pytest.mark.rule("WAI-4", "POL-3")
def test_a_change_waiter_replaces_sleeping_with_the_same_loop():
    calls = []

    class Waiter:
        def __init__(self, clock):
            self.clock = clock

        def wait_for_change(self, task_ids, seconds):
            calls.append((tuple(task_ids), seconds))
            self.clock.advance(seconds)

    r = rig(make_world(task("t1"), task("a"), task("b")))
    r.ports = attrs.evolve(r.ports, waiter=Waiter(r.clock))
    report = r.deliver(wait("a", "b", interval_seconds=30, timeout_seconds=70))
    assert report.entries[0].outcome == "done"
    # the sender (t1) is watched too, so its cancellation would wake the wait (WAI-5)
    assert calls == [(("a", "b", "t1"), 30), (("a", "b", "t1"), 30), (("a", "b", "t1"), 10)]
    assert r.clock.slept == []


@pytest.mark.rule("WAI-4")
def test_a_waiter_that_never_lets_time_pass_cannot_hang_the_wait():
    calls = []

    class StuckWaiter:
        def wait_for_change(self, task_ids, seconds):
            calls.append(seconds)

    r = rig(make_world(task("t1"), task("a")))
    r.ports = attrs.evolve(r.ports, waiter=StuckWaiter())
    report = r.deliver(wait("a", interval_seconds=1, timeout_seconds=5))
    assert report.entries[0].outcome == "done"
    assert "NOT finished" in text(report)
    # the waiter's budget is spent, then the clock carries the wait to its full timeout
    assert len(calls) == round_bound(1, 5, 1)
    assert sum(r.clock.slept) == 5


@pytest.mark.rule("WAI-4", "POL-3")
def test_early_wake_ups_never_end_a_wait_before_its_timeout():
    """A target that keeps changing between non-terminal states wakes the waiter at once
    every time; the wait still lasts its whole timeout and sees the final status."""

    class NoisyWaiter:
        def __init__(self):
            self.calls = 0

        def wait_for_change(self, task_ids, seconds):
            self.calls += 1  # returns at once: "something changed"

    r = rig(make_world(task("t1"), task("a")))
    noisy = NoisyWaiter()
    r.ports = attrs.evolve(r.ports, waiter=noisy)
    report = r.deliver(poll("a", interval_seconds=10, timeout_seconds=600))
    assert noisy.calls == round_bound(10, 600, 1)
    assert sum(r.clock.slept) == 600  # waited until the timeout, not cut short
    assert "NOT finished: timed out after 600 s" in text(report)


@pytest.mark.rule("TRN-8", "WAI-4")
def test_a_failing_store_read_rejects_only_the_wait():
    class Flaky:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def get_tasks(self, ids):
            raise ConnectionError("database is locked")

    r = rig(make_world(task("t1"), task("a")))
    r.ports = attrs.evolve(r.ports, tasks=Flaky(r.store))
    report = r.deliver(wait("a"), create(line=7))
    assert [e.outcome for e in report.entries] == ["rejected", "done"]
    assert "database is locked" in text(report)


@pytest.mark.rule("POL-3", "WAI-3")
def test_a_target_that_disappears_while_watched_is_reported_as_such():
    class Vanishing:
        def __init__(self, inner):
            self.inner = inner
            self.reads = 0

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def get_tasks(self, ids):
            self.reads += 1
            rows = dict(self.inner.get_tasks(ids))
            if self.reads > 1:
                rows.pop("a", None)
            return rows

    r = rig(make_world(task("t1"), task("a"), task("b")))
    r.ports = attrs.evolve(r.ports, tasks=Vanishing(r.store))
    report = r.deliver(wait("a", "b", interval_seconds=5, timeout_seconds=10))
    out = text(report)
    assert report.entries[0].outcome == "done"
    assert "task a: status 'running', the task disappeared while being watched" in out
    assert "task b: status 'running', NOT finished: timed out after 10 s" in out
