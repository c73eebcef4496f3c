"""One table, three outputs: the parser, the agent guide and the JSON Schemas agree."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.strategies.parse import block, from_body_schema

from markertools import parse_turn
from markertools.parse.guide import UnknownKindError, example_block, render_guide
from markertools.parse.jsonstrict import MAX_INT_DIGITS, too_deep
from markertools.parse.kinds import KINDS
from markertools.parse.kindspec import default_of
from markertools.parse.schema import body_schema, body_schemas


@pytest.mark.rule("TRN-2")
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_every_guide_example_parses_into_one_command_of_its_kind(kind: Any) -> None:
    plan = parse_turn(example_block(kind))
    assert not plan.issues
    (command,) = plan.commands
    assert command.kind == kind.name and command.notes == ()


@pytest.mark.parametrize("locale", ["en", "zh"])
def test_guide_covers_every_kind_field_cap_and_alias(locale: str) -> None:
    text = render_guide(locale)
    for kind in KINDS:
        assert f"## {kind.name} " in text
        assert example_block(kind) in text
        for alias in kind.aliases:
            assert alias in text
        for field in kind.fields:
            if field.kind != "forbidden":
                assert f"`{field.name}`" in text
                for alias in field.aliases:
                    assert alias in text
    if locale == "zh":
        assert "必填" in text and "每轮最多" in text


def test_guide_shows_defaults_and_clamps_from_the_table() -> None:
    text = render_guide("en", ["task-read"])
    assert "## task-poll " in text and "## task-create" not in text
    kind = next(k for k in KINDS if k.name == "task-poll")
    for field in kind.fields:
        default = default_of(kind, field)
        if default is not None:
            assert f"`{field.name}` (optional, default {json.dumps(default)})" in text
    assert "1–60" in text and "200–8000" in text


def test_guide_examples_are_the_only_runnable_blocks_in_the_guide() -> None:
    plan = parse_turn(render_guide("en"))
    assert sorted(c.kind for c in plan.commands) == sorted(k.name for k in KINDS)


def test_unknown_kind_names_a_suggestion() -> None:
    with pytest.raises(UnknownKindError, match="did you mean 'task-poll'"):
        render_guide("en", ["task_pol"])


def test_every_schema_is_a_valid_draft_2020_12_schema() -> None:
    schemas = body_schemas()
    assert list(schemas) == [k.name for k in KINDS]
    for schema in schemas.values():
        jsonschema.Draft202012Validator.check_schema(schema)
    assert body_schema("read_thread") == body_schema("task-poll")


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_every_example_is_valid_against_its_schema(kind: Any) -> None:
    jsonschema.validate(json.loads(kind.example), body_schema(kind.name))


_INT_LITERAL = re.compile(rf"-?\d{{{MAX_INT_DIGITS + 1},}}")


def _within_strict_json_rules(text: str) -> bool:
    """The documented strict-JSON rules every body obeys (not expressible in a schema)."""
    return not _INT_LITERAL.search(text) and not too_deep(text)


@pytest.mark.rule("VAL-1", "VAL-2", "VAL-3", "VAL-5", "VAL-6", "VAL-7")
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
@settings(max_examples=25, suppress_health_check=list(HealthCheck), deadline=None)
@given(data=st.data())
def test_schema_valid_bodies_parse(kind: Any, data: st.DataObject) -> None:
    schema = body_schema(kind.name)
    body = data.draw(from_body_schema(schema))
    text = json.dumps(body, ensure_ascii=False)
    assume(_within_strict_json_rules(text))
    jsonschema.validate(body, schema)
    plan = parse_turn(block(kind.name, text))
    assert not plan.issues, (text, [i.reason.render("en") for i in plan.issues])
    assert [c.kind for c in plan.commands] == [kind.name]


@pytest.mark.parametrize(
    ("kind", "body"),
    [
        ("task-create", {"prompt": ""}),
        ("task-cancel", {"task_id": "a", "to": "b"}),
        ("todo-update", {"id": "d"}),
        ("goal-convert", {"goal": "g", "verify_command": "x"}),
        ("automation-create", {"prompt": "p", "interval_seconds": 30}),
        ("automation-create", {"prompt": "p", "first_run_at": "2026-W44-5"}),
        ("wait-threads", {"task_ids": []}),
        ("task-list", {"limit": True}),
    ],
)
def test_bodies_the_parser_skips_are_schema_invalid(kind: str, body: dict[str, Any]) -> None:
    assert parse_turn(block(kind, json.dumps(body))).issues
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(body, body_schema(kind))
