"""End to end from a turn's text: parse_turn + deliver_turn with the in-memory ports
(TRN-1, TRN-6, CTL-1, VAL-8, WAI-2, QUO-1, GOA-2)."""

from __future__ import annotations

import pytest
from support.strategies.core import make_world, rig, task

from markertools import deliver_turn


def fence(kind: str, body: str) -> str:
    return f"```{kind}\n{body}\n```\n"


def deliver_text(r, text, sender="t1", **kw):
    return deliver_turn(text, sender=sender, outcome="completed", ports=r.ports, **kw)


@pytest.mark.rule("TRN-1", "TRN-6")
def test_blocks_run_in_execution_order_and_issues_follow():
    r = rig(make_world(task("t1"), task("t2"), task("t3", status="failed")))
    text = (
        "Plan:\n\n"
        + fence("task-poll", '{"task_id": "@w"}')
        + fence("task-retry", '{"task_id": "t3"}')
        + fence("task-cancel", '{"task_id": "t2"}')
        + fence("task-create", '{"name": "w", "prompt": "go"}')
        + fence("task-create", "not json")
        + fence("taskcreate", "{}")
    )
    report = deliver_text(r, text)
    assert [(e.kind, e.outcome) for e in report.entries] == [
        ("task-create", "done"),
        ("task-cancel", "done"),
        ("task-retry", "done"),
        ("task-poll", "done"),
        ("task-create", "skipped"),
        ("taskcreate", "skipped"),
    ]
    assert report.entries[3].target == report.entries[0].target


@pytest.mark.rule("CTL-1")
@pytest.mark.parametrize("field", ["task_id", "to", "to_task_id", "thread_id"])
@pytest.mark.parametrize("kind", ["task-cancel", "task_cancel"])
def test_cancel_aliases(field, kind):
    r = rig(make_world(task("t1"), task("t2")))
    report = deliver_text(r, fence(kind, f'{{"{field}": "t2"}}'))
    assert (report.entries[0].kind, report.entries[0].outcome) == ("task-cancel", "done")
    assert r.task("t2").status == "interrupted"


@pytest.mark.rule("WAI-1", "WAI-2")
def test_wait_aliases_and_dropped_targets_named_once():
    ids = [f"w{i}" for i in range(10)]
    r = rig(make_world(task("t1"), *(task(i, status="completed") for i in ids)))
    body = '{"threads": [' + ", ".join(f'"{i}"' for i in ids) + "]}"
    report = deliver_text(r, fence("wait_threads", body))
    out = report.entries[0].reason.render("en")
    assert "8 finished" in out
    assert out.count("w9") == 1 and "w8" in out


@pytest.mark.rule("QUO-1")
def test_quota_fields_are_ignored_and_said_once():
    r = rig(make_world(task("t1")))
    report = deliver_text(r, fence("quota-status", '{"user": "someone-else"}'))
    out = report.entries[0].reason.render("en")
    assert report.entries[0].outcome == "done" and "quota of u1" in out
    assert out.count("ignored") == 1 and "user" in out


@pytest.mark.rule("GOA-2", "TRN-6")
def test_goal_convert_from_text():
    r = rig(make_world(task("t1")))
    report = deliver_text(
        r, fence("goal-convert", '{"goal": "ship 2.0"}') + fence("task-list", "{}")
    )
    assert report.queued_followups == (report.message, "/goal ship 2.0")


@pytest.mark.rule("TRN-3")
def test_a_failed_turn_from_text_runs_nothing():
    r = rig(make_world(task("t1"), task("t2")))
    report = deliver_turn(
        fence("task-cancel", '{"task_id": "t2"}'), sender="t1", outcome="failed", ports=r.ports
    )
    assert not report.delivered and r.task("t2").status == "running"
    assert "1 block(s) discarded" in r.store.audit_records()[0].reason


@pytest.mark.rule("EXT-2", "TRN-6")
def test_quoted_examples_never_run():
    r = rig(make_world(task("t1"), task("t2")))
    text = "> " + fence("task-cancel", '{"task_id": "t2"}').replace("\n", "\n> ")
    report = deliver_text(r, text)
    assert report.entries == () and r.task("t2").status == "running"
    assert report.delivered and report.message.startswith("markertools report: 0 block(s)")


@pytest.mark.rule("GOA-1", "GOA-2")
@pytest.mark.parametrize(
    "body",
    [
        '{"goal": "g", "verify_command": "pytest"}',
        '{"goal": "g", "goal_max_rounds": 3}',
        '{"goal": "   "}',
        "{}",
    ],
)
def test_goal_convert_with_goal_loop_fields_or_no_goal_is_skipped(body):
    r = rig(make_world(task("t1")))
    report = deliver_text(r, fence("goal-convert", body))
    assert [e.outcome for e in report.entries] == ["skipped"]
    assert report.queued_followups == (report.message,)  # no "/goal"


@pytest.mark.rule("GOA-1")
def test_goal_convert_accepts_null_loop_fields():
    r = rig(make_world(task("t1")))
    report = deliver_text(
        r, fence("goal-convert", '{"goal": "g", "verify_command": null, "goal_max_rounds": null}')
    )
    assert report.queued_followups == (report.message, "/goal g")
