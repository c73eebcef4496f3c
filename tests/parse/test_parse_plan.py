"""The plan of a turn (TRN-1, TRN-2, per-kind caps of docs/rules.md): order, caps, purity, and the
properties every plan has (params round-trip, clamping idempotent, never raises)."""

from __future__ import annotations

import json
import random
from typing import Any

import cattrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.strategies.parse import any_text, block, markdownish

from markertools import BlockIssue, Command, TurnPlan, parse_turn
from markertools.parse.kinds import EXEC_ORDER, KINDS

MINIMAL = {k.name: json.loads(k.example) for k in KINDS}
TRN1 = [
    "task-create", "todo-create", "todo-update", "automation-create", "task-cancel", "task-retry",
    "approval-answer", "task-list", "todo-list", "task-cost", "quota-status", "task-files", "task-poll",
    "wait-threads", "goal-convert",
]  # fmt: skip


@pytest.mark.rule("TRN-1")
def test_execution_order_table_is_trn1() -> None:
    assert sorted(EXEC_ORDER, key=EXEC_ORDER.__getitem__) == TRN1


@pytest.mark.rule("TRN-1")
@given(st.permutations(TRN1 * 2))
def test_commands_run_in_trn1_order_then_order_of_appearance(kinds: list[str]) -> None:
    text = "".join(block(k, json.dumps(MINIMAL[k])) + "\n" for k in kinds)
    plan = parse_turn(text)
    expected_kinds = [
        k for k in TRN1 for _ in range(min(kinds.count(k), 1 if k == "goal-convert" else 2))
    ]
    assert [c.kind for c in plan.commands] == expected_kinds
    lines = [(EXEC_ORDER[c.kind], c.line) for c in plan.commands]
    assert lines == sorted(lines)


@pytest.mark.rule("TRN-2")
def test_parse_turn_is_pure_and_repeatable() -> None:
    text = block("task-create", '{"prompt": "p"}') + block("task-list", '{"limit": 99}')
    first, second = parse_turn(text), parse_turn(text)
    assert first == second and isinstance(first, TurnPlan)
    assert first.commands[1].notes[0].arg("used") == 50


@pytest.mark.rule("TRN-2")
def test_every_block_is_in_exactly_one_place_issues_in_order_of_appearance() -> None:
    text = "".join(
        [
            block("task-list", "{}"),
            block("Task-List", "{}"),
            block("task-cost", "{"),
            block("goal-convert", '{"goal": "a"}'),
            block("goal-convert", '{"goal": "b"}'),
            block("task-files", '{"task_id": "t"}'),
        ]
    )
    plan = parse_turn(text)
    assert [c.kind for c in plan.commands] == ["task-list", "task-files", "goal-convert"]
    assert [(i.line, i.outcome) for i in plan.issues] == [
        (4, "unknown"),
        (7, "skipped"),
        (13, "ignored"),
    ]


@pytest.mark.rule("CRE-1", "POL-1", "WAI-1", "CTL-1", "GOA-1")
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_per_turn_caps_count_aliases_together_valid_or_not(kind: Any) -> None:
    names = list(kind.names)
    bodies = [json.dumps(MINIMAL[kind.name]), "not json"]
    blocks = [block(names[i % len(names)], bodies[i % 2]) for i in range(kind.cap + 3)]
    plan = parse_turn("".join(blocks))
    outcomes = sorted(
        [("run", c.line) for c in plan.commands] + [(i.outcome, i.line) for i in plan.issues],
        key=lambda x: x[1],
    )
    assert [o for o, _ in outcomes[: kind.cap]] == [
        "run" if i % 2 == 0 else "skipped" for i in range(kind.cap)
    ]
    assert [o for o, _ in outcomes[kind.cap :]] == ["ignored"] * 3
    ignored = [i for i in plan.issues if i.outcome == "ignored"]
    assert all(i.kind == kind.name for i in ignored)
    assert str(kind.cap) in ignored[0].reason.render("en")


@pytest.mark.rule("EXT-3")
def test_unclosed_blocks_count_toward_the_cap() -> None:
    text = block("goal-convert", '{"goal": "a"}') + "```goal-convert\n{}\n"
    plan = parse_turn(text)
    assert len(plan.commands) == 1 and plan.issues[0].outcome == "ignored"
    plan = parse_turn("```goal-convert\n{}\n" + block("goal-convert", '{"goal": "a"}'))
    assert not plan.commands and plan.issues[0].outcome == "skipped"


@pytest.mark.rule("EXT-5")
def test_near_misses_do_not_count_toward_caps() -> None:
    text = block("Goal-Convert", '{"goal": "a"}') + block("goal-convert", '{"goal": "b"}')
    plan = parse_turn(text)
    assert [c.params.goal for c in plan.commands] == ["b"]  # type: ignore[union-attr]


# ---- properties -------------------------------------------------------------------

_converter = cattrs.Converter()


def random_bodies(seed: int) -> str:
    rnd = random.Random(seed)
    parts = []
    for kind in rnd.sample(list(KINDS), 6):
        body = dict(MINIMAL[kind.name])
        for field in kind.fields:
            if field.kind == "int" and rnd.random() < 0.6:
                body[field.name] = rnd.choice([-(10**6), -1, 0, 1, 59, 61, 3601, 10**9])
        parts.append(block(kind.name, json.dumps(body)))
    return "".join(parts)


@pytest.mark.rule("VAL-4", "TRN-2")
@given(st.integers(0, 10**6))
def test_clamping_is_idempotent(seed: int) -> None:
    plan = parse_turn(random_bodies(seed))
    for command in plan.commands:
        data = _converter.unstructure(command.params)
        if command.kind == "wait-threads":
            data.pop("dropped_task_ids")  # the examples name fewer than 8 targets
        if command.kind == "quota-status":
            continue
        again = parse_turn(block(command.kind, json.dumps(data)))
        assert [c.params for c in again.commands] == [command.params]
        assert not [n for c in again.commands for n in c.notes if n.key == "parse.note.clamped"]


@pytest.mark.rule("TRN-2")
@given(st.integers(0, 10**6))
def test_params_survive_cattrs_round_trip(seed: int) -> None:
    for command in parse_turn(random_bodies(seed)).commands:
        data = _converter.unstructure(command.params)
        assert _converter.structure(data, type(command.params)) == command.params
        json.dumps(data)  # plain JSON data


@pytest.mark.rule("TRN-2", "EXT-6")
@settings(max_examples=200)
@given(st.one_of(markdownish(), any_text()))
def test_parse_turn_never_raises_and_accounts_for_every_block(text: str) -> None:
    plan = parse_turn(text)
    assert all(isinstance(c, Command) for c in plan.commands)
    assert all(isinstance(i, BlockIssue) for i in plan.issues)
    assert not [i for i in plan.issues if i.reason.key == "parse.internal_error"]
    for issue in plan.issues:
        issue.reason.render("en")
        issue.reason.render("zh")
    lines = [i.line for i in plan.issues]
    assert lines == sorted(lines)
