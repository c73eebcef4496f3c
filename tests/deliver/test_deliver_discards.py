"""A turn that is not delivered (TRN-3, TRN-4): a goal or coordinator task's turn is never
parsed, whatever its outcome; a normal task's turn that did not complete is discarded
with its blocks counted in the audit record."""

from __future__ import annotations

import pytest
from support.strategies.core import make_world, rig, task

from markertools import deliver_turn


def blk(kind: str, body: str) -> str:
    return f"```{kind}\n{body}\n```\n"


@pytest.mark.rule("TRN-4", "TRN-3")
@pytest.mark.parametrize("outcome", ["completed", "failed"])
@pytest.mark.parametrize(
    "fields", [{"goal_mode": True}, {"verify_command": "make test"}, {"is_coordinator": True}]
)
def test_a_goal_or_coordinator_turn_is_never_parsed(monkeypatch, outcome, fields):
    import markertools.parse.turn as parse_module

    def no_parse(text: str) -> object:
        raise AssertionError("a goal or coordinator turn was parsed")

    monkeypatch.setattr(parse_module, "parse_turn", no_parse)
    r = rig(make_world(task("t1", **fields)))
    report = deliver_turn(
        blk("task-create", '{"prompt": "x"}'), sender="t1", outcome=outcome, ports=r.ports
    )
    assert report.delivered is False and report.entries == () and report.queued_followups == ()
    (audit,) = r.world().audit
    assert audit.outcome == "discarded" and "not parsed" in audit.reason
    assert len(r.world().tasks) == 1


@pytest.mark.rule("TRN-3")
def test_a_normal_discarded_turn_still_counts_its_blocks():
    r = rig(make_world(task("t1")))
    text = blk("task-create", '{"prompt": "x"}') + blk("task_list", "{}")
    report = deliver_turn(text, sender="t1", outcome="timed_out", ports=r.ports)
    assert report.delivered is False
    (audit,) = r.world().audit
    assert "2 block(s) discarded" in audit.reason and "'timed_out'" in audit.reason
