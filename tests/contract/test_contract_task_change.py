"""Storage contract: `TaskStore.transition_task` takes a typed `TaskChange`, and a field ->
value mapping only through `TaskChange.of`: a typo'd field is refused by every store with
the same ValueError, naming the field, before anything changes. Runs once per storage
adapter (see conftest.STORE_FACTORIES)."""

from __future__ import annotations

import pytest

from markertools import TaskChange
from markertools.domain.model import Task
from markertools_adapters.world import World

NOW = 1_800_000_000.0
FIELDS = (
    "project_id, status, created_by, parent_task_id, executor, environment_id, model, "
    "effort, goal_mode, verify_command, is_coordinator, coordinator_part, prompt, "
    "result_text, error_text, actual_model, worktree, host, created_at, goal, "
    "interrupted_reason, auto_resume_count, repo_url, retried_after_attempt, turn, thread_id"
)


def failed(task_id: str = "a") -> Task:
    return Task(
        task_id,
        "p1",
        status="failed",
        created_by="u1",
        result_text="partial output",
        error_text="boom",
        actual_model="m-1",
    )


@pytest.mark.rule("CTL-4", "CTL-3")
def test_a_typoed_field_is_refused_identically_by_every_store_and_changes_nothing(make_store):
    store = make_store(World(now=NOW, tasks=(failed(),)))
    # a retry whose caller misspelt result_text: the status must not change without it
    with pytest.raises(ValueError) as raised:
        store.transition_task("a", "failed", {"status": "queued", "reslt_text": None})
    assert str(raised.value) == (
        "a task change names unknown field(s) 'reslt_text' (did you mean 'result_text'?); "
        f"a transition may change only {FIELDS}"
    )
    assert store.get_task("a") == failed()


@pytest.mark.rule("CTL-4")
def test_the_id_and_several_unknown_fields_are_all_named(make_store):
    store = make_store(World(now=NOW, tasks=(failed(),)))
    with pytest.raises(ValueError) as raised:
        store.transition_task("a", "failed", {"id": "b", "colour": "red", "stauts": "queued"})
    assert str(raised.value) == (
        "a task change names unknown field(s) 'id' (a task's id never changes), 'colour', "
        f"'stauts' (did you mean 'status'?); a transition may change only {FIELDS}"
    )
    assert store.get_task("a") == failed()
    assert store.get_task("b") is None


@pytest.mark.rule("CTL-4")
def test_something_that_is_not_a_change_is_a_type_error(make_store):
    store = make_store(World(now=NOW, tasks=(failed(),)))
    with pytest.raises(TypeError) as raised:
        store.transition_task("a", "failed", [("status", "queued")])
    assert str(raised.value) == (
        "task changes must be a TaskChange or a mapping of task field names to values; "
        "got list"
    )
    assert store.get_task("a") == failed()


@pytest.mark.rule("CTL-3", "CTL-4")
def test_a_task_change_and_the_same_mapping_change_a_task_alike(make_store):
    typed = make_store(World(now=NOW, tasks=(failed("a"),)))
    mapped = make_store(World(now=NOW, tasks=(failed("a"),)))
    change = TaskChange(status="queued", result_text=None, error_text=None, actual_model=None)
    after_typed = typed.transition_task("a", "failed", change)
    after_mapped = mapped.transition_task("a", "failed", dict(change))
    expected = Task("a", "p1", status="queued", created_by="u1")
    assert after_typed == after_mapped == expected
    assert typed.get_task("a") == mapped.get_task("a") == expected
    # compare-and-set still holds for a typed change: the status moved on
    assert typed.transition_task("a", "failed", change) is None
