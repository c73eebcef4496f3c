"""Boundaries of the first-turn open-todos section (INJ-4, issue 20): at most 20
unfinished todos (19, 20 and 21 given), each title cut to 100 code points (titles of 99,
100 and 101 code points, in one-, three- and four-byte characters), on the pure
assembly and through the worker-side gathering over a MemoryStore (whose query asks for
the same 20). The whole section an agent reads is asserted."""

from __future__ import annotations

import json

import pytest
from support.framing import first_nonce, framed_en
from support.strategies.todo import NOW, CountingRandom, base_world, memory_store

from markertools.domain.model import Task, Todo
from markertools.domain.ports import TodoListing
from markertools.inject.first_turn import (
    INJECTED_TODOS,
    TODO_TITLE_CHARS,
    InjectionInputs,
    assemble_first_turn,
)
from markertools_adapters.first_turn import first_turn_prompt

NORMAL = Task("t1", "p1", prompt="Build the checkout page.")
UNFINISHED = ("pending", "in_progress", "blocked")
LABEL = "the project's open todos: id [status, priority] title"


def _check_constants() -> None:
    assert INJECTED_TODOS == 20  # INJ-4's numbers
    assert TODO_TITLE_CHARS == 100


def _line(todo: Todo, title: str) -> str:
    return f"- {todo.id} [{todo.status}, {todo.priority}] {title}"


def _section(lines: list[str], first_id: str, total: int, nonce: str) -> str:
    shown = len(lines)
    if total > shown:
        header = f"[Open todos of this project: {shown} of {total} shown, {total - shown} more not shown]"
    else:
        header = f"[Open todos of this project: {shown}]"
    examples = [
        {"id": first_id, "status": "in_progress"},
        {"id": first_id, "status": "completed"},
        {"id": first_id, "status": "blocked", "priority": "high"},
    ]
    return "\n".join(
        [
            header,
            framed_en(LABEL, "\n".join(lines), nonce),
            "To change a todo, write a todo-update block with a body such as:",
            *(json.dumps(e) for e in examples),
        ]
    )


def _todos(count: int) -> list[Todo]:
    return [
        Todo(
            f"d{i:02d}",
            "p1",
            f"todo number {i}",
            status=UNFINISHED[i % 3],
            priority=("low", "medium", "high")[i % 3],
            created_at=NOW + i,
        )
        for i in range(count)
    ]


@pytest.mark.rule("INJ-4")
@pytest.mark.parametrize("count", [INJECTED_TODOS - 1, INJECTED_TODOS, INJECTED_TODOS + 1])
def test_at_most_20_unfinished_todos_are_shown_and_the_rest_counted(count: int) -> None:
    _check_constants()
    rows = _todos(count)
    inputs = InjectionInputs(task=NORMAL, todos=TodoListing(rows=tuple(rows), total=count))
    out = assemble_first_turn(inputs, CountingRandom())
    shown = rows[:INJECTED_TODOS]
    lines = [_line(t, t.title) for t in shown]
    assert out.sections == ("todos",)
    assert out.prompt == (
        _section(lines, "d00", count, first_nonce(out.prompt)) + "\n\nBuild the checkout page."
    )
    zh = assemble_first_turn(inputs, CountingRandom(), "zh").prompt
    if count > INJECTED_TODOS:
        assert zh.startswith(f"[本项目未完成待办：共 {count} 条，显示 20 条，还有 1 条未显示]")
    else:
        assert zh.startswith(f"[本项目未完成待办：{count} 条]")


@pytest.mark.rule("INJ-4")
@pytest.mark.parametrize("finished", [0, 1, 5])
def test_finished_todos_do_not_count_towards_the_20(finished: int) -> None:
    _check_constants()
    rows = _todos(INJECTED_TODOS)
    done = [
        Todo(f"c{i}", "p1", f"done {i}", status=("completed", "cancelled")[i % 2])
        for i in range(finished)
    ]
    mixed = tuple(done + rows)  # the finished ones first: they must not use up slots
    inputs = InjectionInputs(task=NORMAL, todos=TodoListing(rows=mixed, total=INJECTED_TODOS))
    out = assemble_first_turn(inputs, CountingRandom())
    lines = [_line(t, t.title) for t in rows]
    assert out.prompt == (
        _section(lines, "d00", INJECTED_TODOS, first_nonce(out.prompt))
        + "\n\nBuild the checkout page."
    )


@pytest.mark.rule("INJ-4", "DOM-4")
@pytest.mark.parametrize("delta", [-1, 0, 1])
@pytest.mark.parametrize("char", ["t", "界", "😀"])
def test_todo_titles_are_cut_to_100_code_points(delta: int, char: str) -> None:
    _check_constants()
    length = TODO_TITLE_CHARS + delta
    title = "[" + char * (length - 1)
    todo = Todo("d1", "p1", title, created_at=NOW)
    inputs = InjectionInputs(task=NORMAL, todos=TodoListing(rows=(todo,), total=1))
    out = assemble_first_turn(inputs, CountingRandom())
    # cut: the first 100 code points, then an ellipsis saying the title goes on
    expected = title if delta <= 0 else title[:TODO_TITLE_CHARS] + "…"
    assert out.prompt == (
        _section([_line(todo, expected)], "d1", 1, first_nonce(out.prompt))
        + "\n\nBuild the checkout page."
    )


@pytest.mark.rule("INJ-4")
@pytest.mark.parametrize("count", [INJECTED_TODOS - 1, INJECTED_TODOS, INJECTED_TODOS + 1])
def test_the_gathered_listing_asks_for_20_and_counts_the_rest(count: int) -> None:
    _check_constants()
    rows = _todos(count)
    finished = (Todo("zz", "p1", "finished", status="completed", created_at=NOW - 1),)
    store = memory_store(base_world(todos=(*finished, *rows)))
    task = store.get_task("t1")
    out = first_turn_prompt(
        task, "fresh", projects=store, todos=store, attempts=store, random=CountingRandom()
    )
    assert out.sections == ("project", "todos")
    todos_part = out.prompt[out.prompt.index("[Open todos") :]
    lines = [_line(t, t.title) for t in rows[:INJECTED_TODOS]]
    assert (
        todos_part == _section(lines, "d00", count, first_nonce(todos_part)) + "\n\nbuild the shop"
    )
