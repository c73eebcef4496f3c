"""Stateful property test: random task forests and random turns delivered one after another.
After every turn: exactly one report entry per block; nothing outside the sender's project
changes; goal tasks are never cancelled or retried; terminal targets are never cancelled;
no created task is above generation 3; no parent gets more than 20 direct children;
non-delivered turns change nothing but the audit."""

from __future__ import annotations

import contextlib

import attrs
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from support.strategies.core import (
    FixedPermissions,
    RaisingPermissions,
    forests,
    make_world,
    rig,
)

from markertools import BlockIssue, Command, msg
from markertools.deliver.lineage import generation
from markertools.domain.model import TURN_OUTCOMES, is_goal_task, is_terminal
from markertools.parse.params import (
    TaskCancelParams,
    TaskCreateParams,
    TaskPollParams,
    TaskRetryParams,
    WaitThreadsParams,
)


@st.composite
def turns(draw, ids):
    targets = st.sampled_from([*ids, "missing", "@a", "@b"])
    command = st.one_of(
        st.builds(
            lambda n: ("task-create", TaskCreateParams("p", name=n)),
            st.sampled_from([None, "a", "b"]),
        ),
        st.builds(lambda t: ("task-cancel", TaskCancelParams(t)), targets),
        st.builds(lambda t: ("task-retry", TaskRetryParams(t)), targets),
        st.builds(
            lambda t, s: ("task-poll", TaskPollParams(t, interval_seconds=5, timeout_seconds=s)),
            targets,
            st.sampled_from([0, 10]),
        ),
        st.builds(
            lambda ts: (
                "wait-threads",
                WaitThreadsParams(tuple(dict.fromkeys(ts)), timeout_seconds=10),
            ),
            st.lists(targets, min_size=1, max_size=8),
        ),
    )
    drawn = draw(st.lists(command, max_size=12))
    commands = tuple(Command(kind, i + 1, params) for i, (kind, params) in enumerate(drawn))
    issues = tuple(
        BlockIssue("task-poll", 100 + i, "skipped", msg("x.y"))
        for i in range(draw(st.integers(0, 2)))
    )
    return commands, issues


class RecordingTransitions:
    """The store, recording every successful compare-and-set as (before, after)."""

    def __init__(self, inner):
        self.inner = inner
        self.done = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def transition_task(self, task_id, expected_status, changes):
        before = self.inner.get_task(task_id)
        after = self.inner.transition_task(task_id, expected_status, changes)
        if after is not None:
            self.done.append((before, after))
        return after


class DeliveryMachine(RuleBasedStateMachine):
    @initialize(
        forest=forests(),
        permissions=st.sampled_from(["all", "all", "all", "none", "read-only", "raises"]),
    )
    def setup(self, forest, permissions):
        perms = {
            "all": FixedPermissions(["read", "create_task", "approve_merge"]),
            "none": FixedPermissions([]),
            "read-only": FixedPermissions(["read"]),
            "raises": RaisingPermissions(),
        }[permissions]
        self.perms = perms
        self.turns = 0
        self.rig = rig(make_world(*forest), permissions=perms)
        self.transitions = RecordingTransitions(self.rig.store)
        self.rig.ports = attrs.evolve(self.rig.ports, tasks=self.transitions)
        self.created: set[str] = set()

    @rule(data=st.data(), outcome=st.sampled_from([*TURN_OUTCOMES, "completed", "completed"]))
    def deliver_a_turn(self, data, outcome):
        before = {t.id: t for t in self.rig.world().tasks}
        self.transitions.done.clear()
        sender_id = data.draw(st.sampled_from(["t1", "t1", *sorted(before)]))
        commands, issues = data.draw(turns(sorted(before)))
        report = self.rig.deliver(*commands, sender=sender_id, outcome=outcome, issues=issues)
        after = {t.id: t for t in self.rig.world().tasks}
        sender = before[sender_id]
        runs = (
            outcome == "completed"
            and not is_goal_task(sender)
            and not sender.is_coordinator
            and sender.status == "running"  # FLT-7: only a running sender delivers
        )

        # exactly one entry per block (or none when nothing was delivered)
        if runs:
            assert report.delivered
            assert len(report.entries) == len(commands) + len(issues)
            assert [e.line for e in report.entries[: len(commands)]] == [c.line for c in commands]
        else:
            assert not report.delivered and report.entries == ()
            assert after == before
            return

        for task_id, new in after.items():
            old = before.get(task_id)
            if old is None:  # created by this turn
                self.created.add(task_id)
                assert new.project_id == sender.project_id
                assert new.parent_task_id == sender_id
                assert new.status in ("queued", "interrupted")  # @NAME may cancel it at once
                assert not is_goal_task(new) and not new.is_coordinator and not new.coordinator_part
                continue
            if old != new:  # only cancel / retry change an existing task
                assert new.project_id == old.project_id == sender.project_id, "crossed projects"
                assert not is_goal_task(old), "a goal task was cancelled or retried"
                assert task_id != sender_id
        for old, new in self.transitions.done:
            assert old.project_id == sender.project_id and old.id != sender_id
            assert not is_goal_task(old), "a goal task was cancelled or retried"
            if new.status == "interrupted":
                assert not is_terminal(old.status), "a terminal target was cancelled"
            else:
                assert old.status in ("failed", "interrupted", "merge-failed")
                cleared = attrs.evolve(
                    old,
                    status="queued",
                    result_text=None,
                    error_text=None,
                    actual_model=None,
                    retried_after_attempt=old.auto_resume_count,  # ATT-4
                )
                assert new == cleared

    @rule(data=st.data(), crash_at=st.none() | st.integers(min_value=1, max_value=40))
    def deliver_with_a_turn_id_crash_then_redeliver(self, data, crash_at):
        """TRN-9: a turn delivered with a turn id - crashing at a random store write, or
        not - then delivered again (twice) ends exactly as one clean delivery of it."""
        from support.exactly_once import Crash, Crashing

        from markertools import TurnPlan, deliver_turn

        world_before = self.rig.world()
        ids = sorted(t.id for t in world_before.tasks)
        sender_id = data.draw(st.sampled_from(["t1", *ids]))
        commands, issues = data.draw(turns(ids))
        plan = TurnPlan(commands=commands, issues=issues)
        self.turns += 1
        turn_id = f"turn-{self.turns}"
        reference = rig(world_before, permissions=self.perms)
        expected = deliver_turn(plan, sender=sender_id, outcome="completed", ports=reference.ports, turn_id=turn_id)
        if crash_at is not None:
            crashing = Crashing(self.rig.store, crash_at)
            ports = attrs.evolve(
                self.rig.ports, tasks=crashing, todos=crashing, audit=crashing,
                followups=crashing, journal=crashing,
            )
            with contextlib.suppress(Crash):  # a crash (or none, when past the last write)
                deliver_turn(plan, sender=sender_id, outcome="completed", ports=ports, turn_id=turn_id)
        report = deliver_turn(plan, sender=sender_id, outcome="completed", ports=self.rig.ports, turn_id=turn_id)
        again = deliver_turn(plan, sender=sender_id, outcome="completed", ports=self.rig.ports, turn_id=turn_id)
        got, want = self.rig.world(), reference.world()
        shape = lambda w: sorted((t.id, t.status, t.parent_task_id or "") for t in w.tasks)  # noqa: E731
        assert shape(got) == shape(want)
        # the report queued once (its poll snapshots may read differently: time moved)
        assert sorted(f.task_id for f in got.followups) == sorted(f.task_id for f in want.followups)
        assert [e.outcome for e in report.entries] == [e.outcome for e in expected.entries]
        assert again.replayed or not again.delivered
        for task in got.tasks:
            if task.id not in {t.id for t in world_before.tasks}:
                self.created.add(task.id)
        self.rig.clock.advance(max(0.0, reference.clock.now() - self.rig.clock.now()))

    @invariant()
    def created_tasks_respect_generation_and_children_limits(self):
        if not hasattr(self, "rig"):
            return
        store = self.rig.store
        for task_id in self.created:
            assert generation(store.lineage(task_id, 32)) <= 3
            parent = store.get_task(task_id).parent_task_id
            assert store.count_children(parent) <= 20


TestDeliveryMachine = DeliveryMachine.TestCase
TestDeliveryMachine.settings = settings(
    TestDeliveryMachine.settings,
    stateful_step_count=12,
    max_examples=min(settings().max_examples, 200),
)
pytestmark = pytest.mark.rule(
    "GAT-1", "LIN-2", "LIN-3", "TRN-6", "TRN-3", "TRN-4", "TRN-5", "CRE-2", "TRN-9"
)
