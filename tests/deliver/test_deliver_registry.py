"""Handlers are keyed by the params class their kind's row names, and what the delivery
loop needs of a kind beyond its handler is a column of that row (issue 25): every row has
exactly one handler, the registry refuses a class registered twice, a command without a
handler is rejected with the reason, the loop names no kind, and a row's `replay` decides
whether a block is journalled (TRN-9)."""

from __future__ import annotations

import ast
from pathlib import Path

import attrs
import pytest
from support.strategies.core import make_world, rig, task

from markertools import Command, TurnPlan, deliver_turn, parse_turn
from markertools.deliver.context import Handler, handler_table
from markertools.deliver.handlers import (
    approvals,
    automations,
    files,
    goal,
    read,
    registry,
    tasks,
    todos,
)
from markertools.deliver.handlers.registry import HANDLERS, handler_for, merge
from markertools.parse.kinds import ALL_NAMES, KINDS, kind_of
from markertools.parse.params import TaskCreateParams, TaskListParams, TaskPollParams

DELIVER = Path(registry.__file__).resolve().parents[1]
FAMILIES = (tasks, read, goal, todos, automations, files, approvals)


@attrs.frozen
class NoKindsParams:
    """Params no kind of the table has."""

    task_id: str = "t2"


@pytest.mark.rule("TRN-8")
def test_every_kind_row_has_exactly_one_handler_keyed_by_its_params_class() -> None:
    assert set(HANDLERS) == {kind.params for kind in KINDS}
    assert len(HANDLERS) == len(KINDS) == 15
    for kind in KINDS:
        handler = HANDLERS[kind.params]
        assert handler.params is kind.params
        owners = [m.__name__ for m in FAMILIES if kind.params in m.HANDLERS]
        assert len(owners) == 1, (kind.name, owners)
        command = Command(kind.name, 1, _params_of(kind.name))
        assert handler_for(command) is handler


@pytest.mark.rule("TRN-8")
def test_the_registry_refuses_a_params_class_registered_twice() -> None:
    with pytest.raises(RuntimeError, match=r"^TaskCreateParams has two handlers$"):
        merge([tasks.HANDLERS, read.HANDLERS, tasks.HANDLERS])
    again = Handler(TaskCreateParams, tasks.handle_create)
    with pytest.raises(RuntimeError, match=r"^TaskCreateParams has two handlers$"):
        handler_table(again, Handler(TaskListParams, read.handle_list), again)


@pytest.mark.rule("TRN-8")
def test_a_command_without_a_handler_is_rejected_with_the_reason_and_changes_nothing() -> None:
    r = rig(make_world(task("t1"), task("t2", status="running", parent_task_id="t1")))
    report = r.deliver(
        Command("task-cancel", 3, NoKindsParams()),  # params no handler takes
        Command("task-files", 5, TaskPollParams("t2")),  # another kind's params
        Command("task-zap", 7, TaskPollParams("t2")),  # a kind outside the table
    )
    assert [(e.kind, e.line, e.outcome, e.target) for e in report.entries] == [
        ("task-cancel", 3, "rejected", None),
        ("task-files", 5, "rejected", None),
        ("task-zap", 7, "rejected", None),
    ]
    reasons = [e.reason.render("en") for e in report.entries]
    assert reasons == [
        "rejected: this build cannot execute 'task-cancel' blocks",
        "rejected: this build cannot execute 'task-files' blocks",
        "rejected: this build cannot execute 'task-zap' blocks",
    ]
    assert r.task("t2").status == "running"  # the cancel's class was never dispatched
    assert [a.outcome for a in r.world().audit] == ["rejected"] * 3


def _code_strings(path: Path) -> set[str]:
    """Every string constant of a module that is not a docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and id(node) not in docstrings
    }


@pytest.mark.rule("TRN-9")
@pytest.mark.parametrize("module", ["loop.py", "once.py", "context.py", "handlers/registry.py"])
def test_the_loop_and_its_bookkeeping_name_no_kind(module: str) -> None:
    source = DELIVER / module
    named = sorted(_code_strings(source) & set(ALL_NAMES))
    assert named == [], f"{module} names kinds {named}: put what it needs on the kind's row"
    text = source.read_text(encoding="utf-8")
    assert "RERUN_KINDS" not in text


@pytest.mark.rule("TRN-8")
def test_handlers_narrow_no_params_and_nothing_fishes_fields_out_of_them() -> None:
    for path in sorted(DELIVER.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "assert isinstance" not in text, path
        assert "getattr(cmd.params" not in text, path


def _params_of(kind: str):
    """The params a kind's example body parses to (the guide's example of its row)."""
    spec = kind_of(kind)
    assert spec is not None
    (command,) = parse_turn(f"```{kind}\n{spec.example}\n```\n").commands
    return command.params


@pytest.mark.rule("TRN-9")
@pytest.mark.parametrize("kind", [k.name for k in KINDS])
def test_a_rows_replay_column_decides_whether_its_block_is_journalled(kind: str) -> None:
    spec = kind_of(kind)
    assert spec is not None
    r = rig(make_world(task("t1"), task("t-1234", status="failed", parent_task_id="t1")))
    plan = TurnPlan(commands=(Command(kind, 1, _params_of(kind)),))
    report = deliver_turn(
        plan, sender="t1", outcome="completed", ports=r.ports, turn_id="turn-1", deadline=0
    )
    assert report.report_queued, report.report_error
    journalled = dict(r.store.block_entries("t1", "turn-1"))
    assert (0 in journalled) is (spec.replay == "journal"), (kind, spec.replay)
    # a redelivery replays the finished report, whatever the column says
    again = deliver_turn(plan, sender="t1", outcome="completed", ports=r.ports, turn_id="turn-1")
    assert again.replayed and again.entries == report.entries


@pytest.mark.rule("TRN-9")
def test_reading_kinds_rerun_and_kinds_with_effects_are_journalled() -> None:
    rerun = {k.name for k in KINDS if k.replay == "rerun"}
    assert rerun == {
        "task-poll",
        "wait-threads",
        "task-list",
        "todo-list",
        "task-cost",
        "quota-status",
        "task-files",
        "goal-convert",
    }
    assert [k.name for k in KINDS if k.creates_task] == ["task-create"]
