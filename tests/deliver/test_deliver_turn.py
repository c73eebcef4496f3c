"""The turn as a whole (TRN-3..8, INJ-6): what is delivered, the report's entries and their
order, the audit, port failures, follow-ups, and both locales."""

from __future__ import annotations

import attrs
import pytest
from support.strategies.core import (
    NOW,
    FailingStore,
    cancel,
    create,
    make_world,
    poll,
    retry,
    rig,
    task,
)

from markertools import BlockIssue, Command, msg
from markertools.domain.model import TURN_OUTCOMES
from markertools.parse.params import GoalConvertParams, TaskListParams
from markertools.text.catalog import CATALOG

NOT_COMPLETED = [o for o in TURN_OUTCOMES if o != "completed"]


def goal(text="g", line=40):
    return Command("goal-convert", line, GoalConvertParams(text))


@pytest.mark.rule("TRN-3")
@pytest.mark.parametrize("outcome", NOT_COMPLETED)
def test_non_completed_turns_execute_nothing_and_audit_the_discard(outcome):
    r = rig(make_world(task("t1"), task("t2")))
    before = r.world()
    issue = BlockIssue("task-poll", 9, "skipped", msg("x.y"))
    report = r.deliver(create(), cancel("t2"), goal(), outcome=outcome, issues=(issue,))
    assert not report.delivered
    assert report.entries == () and report.queued_followups == () and report.message is None
    after = r.world()
    assert after.tasks == before.tasks and after.followups == ()
    (audit,) = after.audit
    assert (audit.sender, audit.kind, audit.outcome) == ("t1", "turn", "discarded")
    assert "4 block(s) discarded" in audit.reason and outcome in audit.reason


@pytest.mark.rule("TRN-4", "DOM-2")
@pytest.mark.parametrize(
    "flags",
    [{"goal_mode": True}, {"verify_command": "pytest"}, {"is_coordinator": True}],
)
def test_goal_and_coordinator_senders_deliver_nothing(flags):
    r = rig(make_world(task("t1", **flags), task("t2")))
    report = r.deliver(cancel("t2"), goal())
    assert not report.delivered
    assert r.task("t2").status == "running"
    assert r.world().followups == ()
    assert r.world().audit[0].outcome == "discarded"


@pytest.mark.rule("TRN-4", "DOM-2")
def test_a_coordinator_subtask_sender_is_an_ordinary_task():
    r = rig(make_world(task("t1", coordinator_part="part-2"), task("t2")))
    assert r.deliver(cancel("t2")).entries[0].outcome == "done"


@pytest.mark.rule("TRN-5", "DOM-8")
def test_a_sender_cancelled_before_delivery_executes_nothing():
    r = rig(make_world(task("t1", status="interrupted"), task("t2")))
    report = r.deliver(cancel("t2"))
    assert not report.delivered and r.task("t2").status == "running"
    assert "cancelled" in r.world().audit[0].reason


@pytest.mark.rule("TRN-5")
def test_a_sender_cancelled_during_delivery_stops_the_remaining_blocks():
    class CancelOnKill:
        def __init__(self, store):
            self.store = store

        def kill(self, target):
            # while t2 is being killed, someone cancels the sender
            self.store.transition_task("t1", "running", {"status": "interrupted"})
            from markertools.domain.ports import KillResult

            return KillResult(True, "ok")

    r = rig(make_world(task("t1"), task("t2"), task("t3")))
    r.ports = attrs.evolve(r.ports, executor=CancelOnKill(r.store))
    report = r.deliver(cancel("t2"), cancel("t3", line=3), goal())
    assert [e.outcome for e in report.entries] == ["done", "rejected", "rejected"]
    assert r.task("t3").status == "running"
    assert report.queued_followups == (report.message,)  # no /goal


@pytest.mark.rule("TRN-6", "TRN-1")
def test_entries_are_executed_blocks_in_order_then_issues_in_order_of_appearance():
    r = rig(make_world(task("t1"), task("t2"), task("t3", status="failed")))
    issues = (
        BlockIssue("task-poll", 3, "skipped", msg("x.a")),
        BlockIssue("task_pol", 8, "unknown", msg("x.b")),
        BlockIssue("task-create", 30, "ignored", msg("x.c")),
    )
    commands = (create(line=20), cancel("t2", line=2), retry("t3", line=11), poll("t2", line=1))
    report = r.deliver(*commands, issues=issues)
    got = [(e.kind, e.line, e.outcome) for e in report.entries]
    assert got == [
        ("task-create", 20, "done"),
        ("task-cancel", 2, "done"),
        ("task-retry", 11, "done"),
        ("task-poll", 1, "done"),
        ("task-poll", 3, "skipped"),
        ("task_pol", 8, "skipped"),  # near-miss fences count as skipped
        ("task-create", 30, "ignored"),
    ]
    assert report.message.startswith("markertools report: 7 block(s)")
    assert report.queued_followups == (report.message,)
    assert r.store.followups_for("t1") == (report.message,)


@pytest.mark.rule("TRN-7")
def test_every_executed_or_rejected_block_writes_one_audit_record():
    r = rig(make_world(task("t1"), task("t2")))
    issues = (BlockIssue("task-poll", 3, "skipped", msg("x.a")),)
    r.clock.advance(5)
    r.deliver(create(), cancel("ghost", line=4), issues=issues)
    audit = r.store.audit_records()
    assert [(a.kind, a.target is None, a.outcome) for a in audit] == [
        ("task-create", False, "done"),
        ("task-cancel", False, "rejected"),
    ]
    assert all(a.sender == "t1" and a.time == NOW + 5 for a in audit)
    assert "does not exist" in audit[1].reason


@pytest.mark.rule("TRN-8")
@pytest.mark.parametrize(
    "method,rejected",
    [
        ("insert_task", ["task-create"]),
        ("lineage", ["task-create", "task-cancel", "task-retry"]),
        ("transition_task", ["task-cancel", "task-retry"]),
        ("list_tasks", ["task-list"]),
        ("count_children", ["task-create"]),
    ],
)
def test_a_raising_store_call_rejects_only_its_block(method, rejected):
    tasks = [
        task("t1"),
        task("t2", parent_task_id="t1"),
        task("t3", status="failed", parent_task_id="t1"),
    ]
    r = rig(make_world(*tasks))
    r.ports = attrs.evolve(r.ports, tasks=FailingStore(r.store, [method]))
    report = r.deliver(
        create(line=1),
        cancel("t2", line=2),
        retry("t3", line=3),
        Command("task-list", 4, TaskListParams()),
    )
    assert [e.kind for e in report.entries if e.outcome == "rejected"] == rejected
    for e in report.entries:
        assert (e.outcome == "rejected") is (f"{method} failed" in e.reason.render("en"))
    assert report.delivered and report.queued_followups == (report.message,)


@pytest.mark.rule("TRN-8")
def test_an_unreadable_sender_discards_the_turn_without_raising():
    r = rig(make_world(task("t1")))
    r.ports = attrs.evolve(r.ports, tasks=FailingStore(r.store, ["get_task"]))
    report = r.deliver(create())
    assert not report.delivered
    assert "could not be read" in r.world().audit[0].reason


@pytest.mark.rule("TRN-8", "TRN-7")
def test_a_failing_audit_write_is_reported_not_raised():
    class BrokenAudit:
        def record_audit(self, record):
            raise OSError("audit disk full")

    r = rig(make_world(task("t1")), audit=BrokenAudit())
    report = r.deliver(create())
    assert report.entries[0].outcome == "done"
    assert "audit record could not be written" in report.entries[0].reason.render("en")


class FailingClock:
    """A clock port that answers `good` times, then raises (a clock read from a service)."""

    def __init__(self, good, now=NOW):
        self.good = good
        self.now_value = now

    def now(self):
        if self.good <= 0:
            raise OSError("clock service unreachable")
        self.good -= 1
        return self.now_value

    def sleep(self, seconds):
        self.now_value += seconds


@pytest.mark.rule("TRN-8", "TRN-7")
@pytest.mark.parametrize("good", [0, 1, 2])
def test_a_failing_clock_never_escapes_delivery(good):
    # the clock is a port too: when it fails inside a handler the block is rejected, and
    # when it fails while the audit record is stamped the entry says so - never a raise
    r = rig(make_world(task("t1"), task("t2", parent_task_id="t1")))
    r.ports = attrs.evolve(r.ports, clock=FailingClock(good))
    report = r.deliver(create(line=1), cancel("t2", line=2))
    assert report.delivered and len(report.entries) == 2
    texts = [e.reason.render("en") for e in report.entries]
    assert any("clock service unreachable" in t for t in texts)
    for entry, text in zip(report.entries, texts, strict=True):
        if entry.outcome == "done" and "clock service unreachable" in text:
            assert "audit record could not be written" in text
    assert report.queued_followups == (report.message,)


class UnprintableError(Exception):
    def __str__(self):
        raise ValueError("this error cannot be printed")


@pytest.mark.rule("TRN-8")
@pytest.mark.parametrize("method", ["get_task", "insert_task", "lineage", "transition_task"])
def test_an_error_that_cannot_be_printed_still_rejects_only_its_block(method):
    class Raising:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            if name != method:
                return getattr(self.inner, name)

            def boom(*args, **kwargs):
                raise UnprintableError()

            return boom

    r = rig(make_world(task("t1"), task("t2", parent_task_id="t1")))
    r.ports = attrs.evolve(r.ports, tasks=Raising(r.store))
    report = r.deliver(create(line=1), cancel("t2", line=2))
    if method == "get_task":  # the sender itself cannot be read: the turn is discarded
        assert not report.delivered
        assert "UnprintableError" in r.world().audit[-1].reason
        return
    rejected = [e for e in report.entries if e.outcome == "rejected"]
    assert rejected and all("UnprintableError" in e.reason.render("en") for e in rejected)


@pytest.mark.rule("VAL-4")
def test_parse_notes_are_appended_to_the_entry():
    note = msg("deliver.ref_unresolved", ref="@n")
    cmd = Command("task-list", 1, TaskListParams(limit=50), notes=(note,))
    r = rig(make_world(task("t1")))
    out = r.deliver(cmd).entries[0].reason.render("en")
    assert out.endswith("(notes: " + note.render("en") + ")")


# ---- locales (INJ-6) ------------------------------------------------------------------------------


MY_PREFIXES = ("tasks.", "read.", "deliver.", "report.")


@pytest.mark.rule("INJ-6")
def test_every_delivery_message_has_english_and_chinese_with_the_same_fields():
    import string

    for key, entry in CATALOG.items():
        if not key.startswith(MY_PREFIXES):
            continue
        assert set(entry) >= {"en", "zh"}, key
        fields = [
            {f for _, f, _, _ in string.Formatter().parse(entry[loc]) if f} for loc in ("en", "zh")
        ]
        assert fields[0] == fields[1], key
        if key not in {"read.join_blank", "read.join_line", "read.list_rows", "read.list_count"}:
            assert entry["en"] != entry["zh"], key


@pytest.mark.rule("INJ-6")
def test_the_report_renders_in_chinese():
    r = rig(make_world(task("t1"), task("t2", result_text="半成品")))
    report = r.deliver(cancel("t2"), poll("t2", line=5), goal(), locale="zh")
    assert report.locale == "zh"
    assert "markertools 报告" in report.message
    assert "已取消任务 t2" in report.message
    assert "不是指令" in report.message  # the data framing sentence
    assert report.queued_followups[1] == "/goal g"


@pytest.mark.rule("DOM-5")
def test_created_at_and_audit_time_come_from_the_clock_port():
    r = rig(make_world(task("t1")))
    r.clock.advance(123.5)
    report = r.deliver(create())
    assert r.task(report.entries[0].target).created_at == NOW + 123.5
    assert r.store.audit_records()[0].time == NOW + 123.5
