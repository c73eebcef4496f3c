"""Issue 27 item 4: the start kind is decided from the data (INJ-1, `start_kind`), and a
start is a `StartKind` - a typo is refused with the allowed values, never a silently
dropped injection (in `InjectionInputs` / `assemble_first_turn`, in the worker-side
`first_turn_prompt`, and in `markertools prompt --start`)."""

from __future__ import annotations

from typing import Any

import pytest
from support.cli import cli, one_line_failure
from support.strategies.todo import NOW, CountingRandom

from markertools import (
    START_KINDS,
    Attempt,
    Claim,
    InjectionInputs,
    StartKind,
    Task,
    assemble_first_turn,
    claim_of,
    start_kind,
    start_kind_of,
)
from markertools.domain.model import Project
from markertools_adapters.first_turn import first_turn_prompt
from markertools_adapters.memory import MemoryStore
from markertools_adapters.world import World, dumps_world

ALLOWED = "fresh, retry, resume, continuation, checkpoint, manual"
TASK = Task("t1", "p1", status="running", prompt="Build the checkout page.")
GOAL = Task("g1", "p1", status="running", goal="ship it", goal_mode=True)


def restart(task: Task, attempt_no: int = 1, kind: str = "platform_fresh") -> Attempt:
    return Attempt(task.id, attempt_no, kind, "host restart", -1, "did half", None, NOW)


# ---- the rule (INJ-1) --------------------------------------------------------------------


@pytest.mark.rule("INJ-1")
def test_a_first_claim_is_fresh() -> None:
    assert start_kind(TASK, None, ()) is StartKind.FRESH


@pytest.mark.rule("INJ-1", "ATT-2")
def test_queued_followups_make_a_continuation_whatever_else_the_data_says() -> None:
    retried_and_restarted = Task("t1", "p1", auto_resume_count=1, retried_after_attempt=0)
    report = ("markertools report: 1 block(s) from your last turn",)
    assert start_kind(retried_and_restarted, restart(TASK), report) is StartKind.CONTINUATION
    claim = claim_of(TASK, None, report)
    assert claim == Claim(TASK, StartKind.CONTINUATION, report)


@pytest.mark.rule("INJ-1", "ATT-2", "ATT-4")
def test_a_platform_requeue_is_a_resume_and_a_goal_tasks_is_a_checkpoint() -> None:
    restarted = Task("t1", "p1", auto_resume_count=1)
    assert start_kind(restarted, restart(restarted), ()) is StartKind.RESUME
    goal = Task("g1", "p1", goal_mode=True, auto_resume_count=1)
    assert start_kind(goal, restart(goal, kind="goal_breakpoint"), ()) is StartKind.CHECKPOINT


@pytest.mark.rule("INJ-1", "ATT-4")
def test_a_task_retry_is_a_retry_and_older_ledger_rows_do_not_make_it_a_resume() -> None:
    # restarted once by the platform (attempt 1), then retried by hand at count 1
    retried = Task("t1", "p1", auto_resume_count=1, retried_after_attempt=1)
    assert start_kind(retried, restart(retried, 1), ()) is StartKind.RETRY
    assert start_kind(Task("t1", "p1", retried_after_attempt=0), None, ()) is StartKind.RETRY
    # a platform restart after that retry (attempt 2) is a resume again
    again = Task("t1", "p1", auto_resume_count=2, retried_after_attempt=1)
    assert start_kind(again, restart(again, 2), ()) is StartKind.RESUME


@pytest.mark.rule("INJ-1", "ATT-3")
def test_a_malformed_ledger_row_counts_as_none() -> None:
    broken = Attempt("t1", 1, "no-such-kind")
    assert start_kind(TASK, broken, ()) is StartKind.FRESH


# ---- what each start injects -------------------------------------------------------------


@pytest.mark.rule("INJ-1", "ATT-4")
def test_resume_injects_with_the_preamble_and_continuation_injects_nothing() -> None:
    restarted = Task("t1", "p1", prompt="Build it.", auto_resume_count=1)
    project = Project("p1", "shop")

    def assemble(start: str, attempt: Attempt | None) -> Any:
        inputs = InjectionInputs(restarted, start, project=project, attempt=attempt)
        return assemble_first_turn(inputs, CountingRandom())

    resumed = assemble("resume", restart(restarted))
    assert resumed.sections == ("project", "resume")
    assert "Resume notice" in resumed.prompt
    continued = assemble("continuation", restart(restarted))
    assert (continued.prompt, continued.sections) == ("Build it.", ())
    (note,) = continued.notes
    assert note.render("en") == (
        "no injection: start 'continuation' is not a fresh start"
        " (only 'fresh', 'retry' and 'resume' are)"
    )
    no_row = assemble("resume", None)
    assert no_row.sections == ("project",)
    assert [n.render("en") for n in no_row.notes] == [
        "no resume preamble: the ledger records no platform restart after the task's"
        " last manual retry"
    ]


# ---- a typo'd start ----------------------------------------------------------------------


@pytest.mark.rule("INJ-1")
@pytest.mark.parametrize("typo", ["frsh", "Fresh", "", "continue"])
def test_a_typod_start_is_refused_naming_the_allowed_values(typo: str) -> None:
    with pytest.raises(ValueError) as raised:
        InjectionInputs(TASK, typo)
    assert str(raised.value) == f"start must be one of {ALLOWED}; got {typo!r}"
    with pytest.raises(ValueError, match="start must be one of"):
        start_kind_of(typo)
    assert tuple(ALLOWED.split(", ")) == START_KINDS
    assert start_kind_of("resume") is StartKind.RESUME
    assert InjectionInputs(TASK, "retry").start is StartKind.RETRY


class _Counting(MemoryStore):
    """A store that counts the lookups first_turn_prompt makes."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def get_project(self, project_id: str) -> Project | None:
        self.calls += 1
        return super().get_project(project_id)


@pytest.mark.rule("INJ-1")
def test_the_worker_side_prompt_refuses_a_typo_before_any_lookup() -> None:
    store = _Counting()
    store.put_project(Project("p1", "shop"))
    with pytest.raises(ValueError, match=f"start must be one of {ALLOWED}; got 'frsh'"):
        first_turn_prompt(
            TASK, "frsh", projects=store, todos=store, attempts=store, random=CountingRandom()
        )
    assert store.calls == 0
    fine = first_turn_prompt(
        TASK, StartKind.FRESH, projects=store, todos=store, attempts=store, random=CountingRandom()
    )
    assert fine.sections == ("project",) and store.calls == 1


@pytest.mark.rule("INJ-1")
def test_the_prompt_command_refuses_a_typod_start_in_one_line(tmp_path: Any) -> None:
    world = tmp_path / "world.json"
    world.write_text(dumps_world(World(now=NOW, projects=(Project("p1", "shop"),), tasks=(TASK,))))
    done = cli("prompt", "--world", str(world), "--task", "t1", "--start", "frsh")
    line = one_line_failure(done, "--start 'frsh'")
    assert line == f"markertools: --start 'frsh': expected one of {ALLOWED}"
    resumed = cli("prompt", "--world", str(world), "--task", "t1", "--start", "resume")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith("[Project context]")
