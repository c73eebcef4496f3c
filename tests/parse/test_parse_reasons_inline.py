"""Reasons and notes of the parse layer never carry an agent's text across a line break:
a value, a field name or an id is escaped onto the reason's own line (INJ-7 defence: a
reason can never start a line of its own, so it can never open a fence in a report)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from markertools import parse_turn

hostile = st.text(
    alphabet=st.sampled_from(["a", "`", "~", "\n", "\r", "\u2028", "\t", " ", "x"]),
    min_size=1,
    max_size=30,
)


def block(kind: str, body: dict[str, object]) -> str:
    return f"```{kind}\n{json.dumps(body)}\n```\n"


def rendered_lines(text: str) -> list[str]:
    plan = parse_turn(text)
    out = [str(i.reason) for i in plan.issues]
    out += [str(n) for c in plan.commands for n in c.notes]
    return out


@pytest.mark.rule("VAL-1", "INJ-7")
@given(value=hostile)
def test_a_wrong_choice_value_is_shown_on_one_line(value: str) -> None:
    for reason in rendered_lines(block("task-create", {"prompt": "p", "effort": value})):
        assert "\n" not in reason and "\r" not in reason and "\u2028" not in reason


@pytest.mark.rule("VAL-6", "INJ-7")
@given(key=hostile)
def test_unknown_field_names_are_shown_on_one_line(key: str) -> None:
    for note in rendered_lines(block("task-create", {"prompt": "p", key: 1})):
        assert "\n" not in note and "\r" not in note


@pytest.mark.rule("QUO-1", "INJ-7")
@given(key=hostile)
def test_ignored_quota_fields_are_shown_on_one_line(key: str) -> None:
    for note in rendered_lines(block("quota-status", {key: 1})):
        assert "\n" not in note and "\r" not in note


@pytest.mark.rule("WAI-2", "INJ-7")
@given(ids=st.lists(hostile, min_size=9, max_size=12, unique=True))
def test_dropped_wait_targets_are_shown_on_one_line(ids: list[str]) -> None:
    ids = [i for i in ids if i.strip()]
    for note in rendered_lines(block("wait-threads", {"task_ids": ids})):
        assert "\n" not in note and "\r" not in note


@pytest.mark.rule("VAL-1")
def test_a_control_character_reason_reads_naturally() -> None:
    (issue,) = parse_turn('```task-create\n{"prompt":"a\n```\n').issues
    assert "at at" not in str(issue.reason)
    assert "Invalid control character at line 1" in str(issue.reason)
