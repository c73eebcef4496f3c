"""`TaskChange`, the typed change record of a task transition: KEEP leaves a field as it
is, None clears it; it covers every Task field but the id; `of` converts a mapping once
and names an unknown field; it reads as a mapping of the fields it sets."""

from __future__ import annotations

import attrs
import pytest

from markertools import Task, TaskChange
from markertools.domain.change import KEEP


@pytest.mark.rule("CTL-3")
def test_keep_leaves_a_field_and_none_clears_it() -> None:
    change = TaskChange(status="queued", result_text=None)
    assert change.status == "queued" and change.result_text is None
    assert change.error_text is KEEP
    assert change.to_mapping() == {"status": "queued", "result_text": None}
    task = Task("a", "p", status="failed", result_text="r", error_text="e")
    assert attrs.evolve(task, **change) == Task("a", "p", status="queued", error_text="e")


def test_it_covers_every_task_field_but_the_id_the_epoch_and_the_engine() -> None:
    """The epoch is raised by claims only (FLT-1): no transition can set it; the engine
    (ENG-1's storage half) is chosen when the task is made."""
    task_fields = [f.name for f in attrs.fields(Task)]
    assert [f.name for f in attrs.fields(TaskChange)] == task_fields[1:-2]
    assert (task_fields[0], *task_fields[-2:]) == ("id", "epoch", "engine")
    with pytest.raises(ValueError, match=r"'epoch' \(only a claim raises it, FLT-1\)"):
        TaskChange.of({"epoch": 7})
    with pytest.raises(ValueError, match=r"'engine' \(chosen when the task is made, ENG-1\)"):
        TaskChange.of({"engine": "codex"})
    assert TaskChange().to_mapping() == {}


def test_it_reads_as_a_mapping_of_the_fields_it_sets() -> None:
    change = TaskChange(status="interrupted", interrupted_reason="cancelled by t1")
    assert dict(change) == {"status": "interrupted", "interrupted_reason": "cancelled by t1"}
    assert len(change) == 2 and list(change) == ["status", "interrupted_reason"]
    assert "status" in change and "prompt" not in change and "colour" not in change
    assert change.get("prompt", "kept") == "kept"
    with pytest.raises(KeyError):
        change["prompt"]
    assert repr(change) == "TaskChange(status='interrupted', interrupted_reason='cancelled by t1')"


def test_of_returns_a_change_as_is_and_converts_a_mapping() -> None:
    change = TaskChange(status="queued")
    assert TaskChange.of(change) is change
    assert TaskChange.of({"status": "queued", "actual_model": None}) == TaskChange(
        status="queued", actual_model=None
    )
    assert TaskChange.of({}) == TaskChange()


def test_of_names_an_unknown_field_and_its_nearest_real_one() -> None:
    with pytest.raises(ValueError, match=r"^a task change names unknown field\(s\) 'eror_text'"):
        TaskChange.of({"eror_text": None})
    with pytest.raises(ValueError) as raised:
        TaskChange.of({"eror_text": None})
    assert "(did you mean 'error_text'?)" in str(raised.value)
    with pytest.raises(ValueError, match=r"'id' \(a task's id never changes\)"):
        TaskChange.of({"id": "b"})
    with pytest.raises(ValueError, match=r"unknown field\(s\) 7; a transition may change only"):
        TaskChange.of({7: "x"})  # type: ignore[dict-item]


def test_changes_are_values() -> None:
    assert TaskChange(status="queued") == TaskChange(status="queued")
    assert TaskChange(status="queued") != TaskChange(status="queued", result_text=None)
    assert len({TaskChange(status="queued"), TaskChange(status="queued")}) == 1
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        TaskChange().status = "queued"  # type: ignore[misc]
