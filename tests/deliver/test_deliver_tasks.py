"""task-create, task-cancel, task-retry and goal-convert through deliver_turn (CRE-1..4,
CTL-1..4, GOA-2, VAL-8, DOM-6, DOM-7), against the in-memory ports."""

from __future__ import annotations

import attrs
import pytest
from support.strategies.core import (
    NOW,
    FixedPermissions,
    RaisingPermissions,
    RecordingExecutor,
    cancel,
    create,
    make_world,
    poll,
    retry,
    rig,
    task,
)

from markertools import Command, deliver_turn
from markertools.domain.model import Quota
from markertools.domain.ports import KillResult
from markertools.parse.params import GoalConvertParams, TaskCancelParams
from markertools_adapters.clock import SeededRandom


def reason(report, index=0) -> str:
    return report.entries[index].reason.render("en")


# ---- task-create ----------------------------------------------------------------------------


@pytest.mark.rule("CRE-2", "CRE-1")
def test_created_task_is_a_normal_independent_child_of_the_sender():
    sender = task(
        "t1",
        executor="docker",
        environment_id="env-7",
        model="big-model",
        effort="high",
        worktree="/w/t1",
        host="box-a",
        goal=None,
        prompt="parent prompt",
        result_text="parent history",
    )
    r = rig(make_world(sender))
    report = r.deliver(create("write the docs", name="docs-writer", model="m2", effort="low"))
    entry = report.entries[0]
    assert entry.outcome == "done"
    child = r.task(entry.target)
    expected_id = "t-" + SeededRandom(7).token_hex(8)
    assert child.id == expected_id  # the id comes from the random port
    assert child.status == "queued"
    assert child.project_id == "p1"
    assert child.parent_task_id == "t1"
    assert child.created_by == "u1"
    assert child.environment_id == "env-7"
    assert child.executor == "docker"  # default: the sender's executor
    assert (child.model, child.effort, child.prompt) == ("m2", "low", "write the docs")
    # no goal / coordinator fields, no history, no worktree or host of its own
    assert (child.goal_mode, child.verify_command, child.goal) == (False, None, None)
    assert (child.is_coordinator, child.coordinator_part) == (False, None)
    assert (child.result_text, child.error_text, child.actual_model) == (None, None, None)
    assert (child.worktree, child.host) == (None, None)
    assert child.created_at == NOW
    stored_text = " ".join(str(v) for v in attrs.asdict(child).values())
    assert "docs-writer" not in stored_text  # the name is never stored


@pytest.mark.rule("CRE-1")
def test_explicit_executor_overrides_the_senders():
    r = rig(make_world(task("t1", executor="local")))
    entry = r.deliver(create(executor="cloud")).entries[0]
    assert r.task(entry.target).executor == "cloud"


@pytest.mark.rule("CRE-3", "DOM-6")
def test_create_needs_create_task_for_the_senders_creator_on_its_project():
    seen = []

    class Recording:
        def has_permission(self, user, project_id, permission):
            seen.append((user, project_id, permission))
            return permission != "create_task"

    r = rig(make_world(task("t1", created_by="alice", project="px")), permissions=Recording())
    report = r.deliver(create(), create(line=9))
    assert [e.outcome for e in report.entries] == ["rejected", "rejected"]
    assert "lacks the 'create_task' permission" in reason(report)
    assert seen == [("alice", "px", "create_task")]  # looked up once per turn
    assert len(r.world().tasks) == 1


@pytest.mark.rule("CRE-3", "GAT-4")
def test_a_failing_permission_lookup_counts_as_lacking():
    r = rig(make_world(task("t1")), permissions=RaisingPermissions())
    report = r.deliver(create())
    assert report.entries[0].outcome == "rejected"
    assert "permission lookup failed" in reason(report)
    assert "ConnectionError" in reason(report)
    assert len(r.world().tasks) == 1


@pytest.mark.rule("CRE-3", "DOM-7")
@pytest.mark.parametrize(
    "quota,exhausted",
    [
        (None, False),  # no record: no limit
        (Quota("u1", None, 1e9), False),  # null total: unlimited
        (Quota("u1", 10.0, 9.99), False),
        (Quota("u1", 10.0, 10.0), True),  # used >= total
        (Quota("u1", 10.0, 12.0), True),
        (Quota("u1", 0.0, 0.0), True),
    ],
)
def test_quota_exhaustion_rejects_every_create_of_the_turn(quota, exhausted):
    r = rig(make_world(task("t1"), quotas=[quota] if quota else []))
    report = r.deliver(*(create(f"job {i}", line=i) for i in range(3)))
    outcomes = {e.outcome for e in report.entries}
    assert outcomes == ({"rejected"} if exhausted else {"done"})
    if exhausted:
        assert all("quota" in e.reason.render("en") for e in report.entries)


@pytest.mark.rule("CRE-3")
def test_quota_is_read_once_per_turn_before_creations():
    calls = []

    class Costs:
        def get_quota(self, user):
            calls.append(user)
            return Quota(user, 5.0, 1.0)

    r = rig(make_world(task("t1")))
    r.ports = attrs.evolve(r.ports, costs=Costs())
    report = r.deliver(*(create(f"job {i}", line=i) for i in range(5)))
    assert [e.outcome for e in report.entries] == ["done"] * 5
    assert calls == ["u1"]


@pytest.mark.rule("CRE-3", "TRN-8")
def test_a_failing_quota_lookup_rejects_every_create_of_the_turn():
    """CRE-3: the quota is checked once per turn; a failed check fails closed for the
    whole turn (a later lookup that would succeed is never made)."""
    calls = []

    class Costs:
        def get_quota(self, user):
            calls.append(user)
            if len(calls) == 1:
                raise TimeoutError("quota service timed out")
            return None

    r = rig(make_world(task("t1")))
    r.ports = attrs.evolve(r.ports, costs=Costs())
    report = r.deliver(create("a", line=1), create("b", line=2))
    assert [e.outcome for e in report.entries] == ["rejected", "rejected"]
    assert all("TimeoutError" in e.reason.render("en") for e in report.entries)
    assert calls == ["u1"]


@pytest.mark.rule("CRE-4")
def test_spawned_tasks_outlive_their_cancelled_parent():
    r = rig(make_world(task("t1"), task("peer")))
    created = r.deliver(create("a"), create("b", line=2))
    kids = [e.target for e in created.entries]
    executor = RecordingExecutor()
    r.ports = attrs.evolve(r.ports, executor=executor)
    # a peer with the same creator cancels the parent
    report = r.deliver(cancel("t1"), sender="peer")
    assert report.entries[0].outcome == "done"
    assert r.task("t1").status == "interrupted"
    assert executor.killed == ["t1"]
    assert [r.task(k).status for k in kids] == ["queued", "queued"]


# ---- @NAME references (VAL-8) -----------------------------------------------------------------


@pytest.mark.rule("VAL-8")
def test_at_name_resolves_to_the_task_created_this_turn():
    r = rig(make_world(task("t1")))
    report = r.deliver(create("a", name="builder"), cancel("@builder", line=2))
    created, cancelled = report.entries
    assert cancelled.outcome == "done"
    assert cancelled.target == created.target
    assert r.task(created.target).status == "interrupted"


@pytest.mark.rule("VAL-8")
def test_duplicate_names_and_rejected_creates_leave_references_unresolved():
    r = rig(make_world(task("t1")))
    report = r.deliver(
        create("a", name="dup"),
        create("b", name="dup", line=2),
        poll("@dup"),
        poll("@none", line=5),
    )
    assert [e.outcome for e in report.entries] == ["done", "done", "rejected", "rejected"]
    assert "ambiguous" in reason(report, 2)
    assert "@none" in reason(report, 3)
    r2 = rig(make_world(task("t1")), permissions=FixedPermissions(["read"]))
    report2 = r2.deliver(create("a", name="x"), poll("@x"))
    assert [e.outcome for e in report2.entries] == ["rejected", "rejected"]


@pytest.mark.rule("VAL-8")
@pytest.mark.parametrize(
    "other_block",
    [
        '```task-create\n{"name": "dup", "prompt": ""}\n```\n',  # skipped: blank prompt
        '```task-create\n{"name": "dup", "prompt": "p", "effort": "huge"}\n```\n',  # skipped
    ],
)
def test_a_name_shared_with_a_create_that_does_not_run_is_ambiguous(other_block):
    """A name used by two task-create blocks of the turn never resolves, even when one of
    the two blocks was skipped: `@dup` must not silently pick the block that ran."""
    from markertools import parse_turn

    text = (
        '```task-create\n{"name": "dup", "prompt": "build"}\n```\n\n'
        '```task-poll\n{"task_id": "@dup"}\n```\n\n' + other_block
    )
    plan = parse_turn(text)
    assert plan.unexecuted_create_names == ("dup",)
    r = rig(make_world(task("t1")))
    report = deliver_turn(plan, sender="t1", outcome="completed", ports=r.ports)
    by_kind = {(e.kind, e.outcome) for e in report.entries}
    assert ("task-create", "done") in by_kind
    (poll_entry,) = [e for e in report.entries if e.kind == "task-poll"]
    assert poll_entry.outcome == "rejected"
    assert "ambiguous" in str(poll_entry.reason)


@pytest.mark.rule("VAL-8", "CRE-1")
def test_a_name_over_the_cap_also_counts_for_ambiguity():
    from markertools import parse_turn

    creates = "".join(
        f'```task-create\n{{"name": "n{i}", "prompt": "p"}}\n```\n\n' for i in range(5)
    )
    text = creates + '```task-create\n{"name": "n0", "prompt": "p"}\n```\n\n'
    text += '```task-cancel\n{"task_id": "@n0"}\n```\n'
    plan = parse_turn(text)
    assert [i.outcome for i in plan.issues] == ["ignored"]
    r = rig(make_world(task("t1")))
    report = deliver_turn(plan, sender="t1", outcome="completed", ports=r.ports)
    (cancel_entry,) = [e for e in report.entries if e.kind == "task-cancel"]
    assert cancel_entry.outcome == "rejected" and "ambiguous" in str(cancel_entry.reason)


# ---- task-cancel -------------------------------------------------------------------------------


@pytest.mark.rule("CTL-2", "TRN-7")
@pytest.mark.parametrize("signalled", [True, False])
def test_cancel_sets_interrupted_records_the_reason_then_kills(signalled):
    executor = RecordingExecutor(signalled=signalled)
    r = rig(make_world(task("t1"), task("t2", parent_task_id="t1")), executor=executor)
    report = r.deliver(cancel("t2", line=12))
    entry = report.entries[0]
    assert entry.outcome == "done" and entry.target == "t2"
    t2 = r.task("t2")
    assert t2.status == "interrupted"
    assert "t1" in t2.interrupted_reason and "12" in t2.interrupted_reason
    assert executor.killed == ["t2"]
    text = reason(report)
    assert ("killed" in text) if signalled else ("no live process" in text)
    (audit,) = r.store.audit_records()
    assert (audit.sender, audit.kind, audit.target, audit.outcome) == (
        "t1",
        "task-cancel",
        "t2",
        "done",
    )
    assert audit.time == NOW


@pytest.mark.rule("CTL-2")
def test_a_failing_kill_leaves_the_entry_done_with_the_error_in_report_and_audit():
    executor = RecordingExecutor(fail=True)
    r = rig(make_world(task("t1"), task("t2")), executor=executor)
    report = r.deliver(cancel("t2"))
    assert report.entries[0].outcome == "done"
    assert r.task("t2").status == "interrupted"
    assert "operation not permitted" in reason(report)
    assert "operation not permitted" in r.store.audit_records()[0].reason


@pytest.mark.rule("CTL-2")
@pytest.mark.parametrize("answer", [None, 42, "killed", KillResult("yes", "pgid 1")])
def test_a_kill_answering_nonsense_is_a_failed_kill_not_a_rejection(answer):
    # the status change already stands: the entry must not claim nothing was changed
    class OddExecutor:
        def kill(self, task):
            return answer

    r = rig(make_world(task("t1"), task("t2")), executor=OddExecutor())
    report = r.deliver(cancel("t2"))
    assert report.entries[0].outcome == "done"
    assert r.task("t2").status == "interrupted"
    assert "not a KillResult" in reason(report)
    assert "not a KillResult" in r.store.audit_records()[0].reason


@pytest.mark.rule("CTL-2")
def test_the_noop_executor_reports_that_nothing_was_signalled():
    r = rig(make_world(task("t1"), task("t2")))
    report = r.deliver(cancel("t2"))
    assert report.entries[0].outcome == "done"
    assert "nothing was signalled" in reason(report)
    assert "nothing was signalled" in r.store.audit_records()[0].reason


class RacingStore:
    """A store in which another writer changes the target between the gate's read and
    the compare-and-set."""

    def __init__(self, inner, new_status):
        self._inner = inner
        self._new_status = new_status

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def transition_task(self, task_id, expected_status, changes):
        current = self._inner.get_task(task_id)
        self._inner.transition_task(task_id, current.status, {"status": self._new_status})
        return self._inner.transition_task(task_id, expected_status, changes)


@pytest.mark.rule("CTL-4")
@pytest.mark.parametrize(
    "command,start,raced", [(cancel, "running", "completed"), (retry, "failed", "queued")]
)
def test_compare_and_set_rejects_changed_meanwhile(command, start, raced):
    executor = RecordingExecutor()
    r = rig(make_world(task("t1"), task("t2", status=start)), executor=executor)
    racing = RacingStore(r.store, raced)
    r.ports = attrs.evolve(r.ports, tasks=racing)
    report = r.deliver(command("t2"))
    assert report.entries[0].outcome == "rejected"
    assert "changed meanwhile" in reason(report)
    assert r.task("t2").status == raced  # the concurrent writer's change stands
    assert executor.killed == []


# ---- task-retry ---------------------------------------------------------------------------------


@pytest.mark.rule("CTL-3")
@pytest.mark.parametrize("status", ["failed", "interrupted", "merge-failed"])
def test_retry_requeues_and_clears_exactly_the_named_fields(status):
    before = task(
        "t2",
        status=status,
        prompt="p",
        model="m",
        effort="high",
        result_text="r",
        error_text="e",
        actual_model="am",
        interrupted_reason="why",
        worktree="/w",
        host="h",
        auto_resume_count=2,
    )
    r = rig(make_world(task("t1"), before))
    report = r.deliver(retry("t2"))
    assert report.entries[0].outcome == "done"
    after = r.task("t2")
    expected = attrs.evolve(
        before,
        status="queued",
        result_text=None,
        error_text=None,
        actual_model=None,
        retried_after_attempt=2,  # ATT-4: the ledger rows so far are stale for a preamble
    )
    assert after == expected


@pytest.mark.rule("CTL-3", "GAT-1")
@pytest.mark.parametrize("status", ["queued", "running", "completed", "merged"])
def test_retry_refuses_other_statuses(status):
    r = rig(make_world(task("t1"), task("t2", status=status)))
    report = r.deliver(retry("t2"))
    assert report.entries[0].outcome == "rejected"
    assert report.entries[0].reason.render("en") == (
        f"task t2 is '{status}'; only failed, interrupted or merge-failed tasks can be retried"
    )
    assert r.task("t2").status == status


@pytest.mark.rule("CTL-1")
def test_cancel_and_retry_act_on_the_task_id_field():
    r = rig(make_world(task("t1"), task("t2"), task("t3", status="failed")))
    report = r.deliver(Command("task-cancel", 1, TaskCancelParams(task_id="t2")), retry("t3"))
    assert [(e.target, e.outcome) for e in report.entries] == [("t2", "done"), ("t3", "done")]


# ---- goal-convert -------------------------------------------------------------------------------


@pytest.mark.rule("GOA-2")
def test_goal_convert_queues_the_goal_after_the_report():
    r = rig(make_world(task("t1")))
    goal = Command("goal-convert", 3, GoalConvertParams("ship release 2.0\nwith notes"))
    report = r.deliver(create(), goal)
    assert report.queued_followups == (report.message, "/goal ship release 2.0\nwith notes")
    assert r.store.followups_for("t1") == report.queued_followups
    assert report.entries[1].outcome == "done"
    assert r.task("t1").goal_mode is False  # the conversion itself happens through /goal


@pytest.mark.rule("GOA-2", "TRN-8")
def test_no_goal_followup_is_queued_without_its_report():
    class FailingQueue:
        def enqueue_followup(self, task_id, text):
            raise OSError("queue down")

    r = rig(make_world(task("t1")), followups=FailingQueue())
    report = r.deliver(Command("goal-convert", 3, GoalConvertParams("g")))
    assert report.queued_followups == ()
