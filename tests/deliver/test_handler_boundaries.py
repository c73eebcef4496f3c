"""Boundaries of limits that live in the handlers (issue 20, item 3): the todo-list row
limit (TDL-3) at 19, 20 and 21 matching todos, and the attempts ledger's stored text
(ATT-1) and preamble text (ATT-4) limits at limit-1, limit and limit+1, on the same
constants the code reads."""

from __future__ import annotations

import attrs
import pytest
from support.strategies.core import make_world, rig, task

from markertools import Command
from markertools.deliver.handlers.todos import LIST_LIMIT
from markertools.domain.model import Todo
from markertools.inject.attempts import ATTEMPT_TEXT_CHARS, PREAMBLE_TEXT_CHARS, cut, one_line
from markertools.parse.params import TodoListParams


@pytest.mark.rule("TDL-3")
@pytest.mark.parametrize("count", [LIST_LIMIT - 1, LIST_LIMIT, LIST_LIMIT + 1])
def test_todo_list_shows_at_most_the_limit_and_says_how_many_more(count: int) -> None:
    assert LIST_LIMIT == 20  # the rule's number
    world = make_world(task("t1"))
    todos = tuple(Todo(id=f"d{i:02d}", project_id="p1", title=f"todo {i}") for i in range(count))
    r = rig(attrs.evolve(world, todos=todos))
    report = r.deliver(Command("todo-list", 1, TodoListParams()))
    text = report.entries[0].reason.render("en")
    listed = [line for line in text.splitlines() if line.startswith("- d")]
    assert len(listed) == min(count, LIST_LIMIT)
    if count > LIST_LIMIT:
        assert text.startswith(
            f"{count} todos of this project match (status pending, in_progress, blocked); "
            f"the first {LIST_LIMIT} are listed, {count - LIST_LIMIT} more not shown"
        )
    else:
        assert text.startswith(f"{count} todo(s) of this project (status pending, in_progress, blocked):")


@pytest.mark.rule("ATT-1")
@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_stored_attempt_text_is_cut_exactly_at_its_limit(extra: int) -> None:
    assert ATTEMPT_TEXT_CHARS == 2000
    text = "x" * (ATTEMPT_TEXT_CHARS + extra)
    stored = cut(text, ATTEMPT_TEXT_CHARS)
    assert stored is not None and len(stored) <= ATTEMPT_TEXT_CHARS
    assert (stored == text) is (extra <= 0)


@pytest.mark.rule("ATT-4")
@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_preamble_text_is_cut_exactly_at_its_limit(extra: int) -> None:
    assert PREAMBLE_TEXT_CHARS == 1000
    text = "y" * (PREAMBLE_TEXT_CHARS + extra)
    shown = cut(text, PREAMBLE_TEXT_CHARS)
    assert shown is not None and len(shown) <= PREAMBLE_TEXT_CHARS
    assert (shown == text) is (extra <= 0)
    line = one_line(text, PREAMBLE_TEXT_CHARS)
    assert len(line) <= PREAMBLE_TEXT_CHARS
