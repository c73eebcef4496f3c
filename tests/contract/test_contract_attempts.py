"""AttemptLedger contract (docs/rules.md ATT): every storage adapter must pass these. Only port
methods and World loading are used."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markertools.domain.model import Attempt, Project, Task
from markertools_adapters.world import World

MakeStore = Callable[[World], Any]
NOW = 1_798_333_200.0


def interrupted(task_id: str = "t1", **kw: Any) -> Task:
    fields: dict[str, Any] = {
        "project_id": "p1",
        "status": "interrupted",
        "created_by": "u1",
        "prompt": "build it",
        "result_text": "partial output",
        "error_text": "killed by host restart",
        "interrupted_reason": "host restart",
        "actual_model": "m-1",
        "auto_resume_count": 0,
    }
    fields.update(kw)
    return Task(task_id, **fields)


def world(*tasks: Task, attempts: tuple[Attempt, ...] = ()) -> World:
    return World(now=NOW, projects=(Project("p1", "shop"),), tasks=tasks, attempts=attempts)


@pytest.mark.rule("ATT-1", "ATT-2")
def test_platform_requeue_records_the_attempt_and_requeues(make_store: MakeStore) -> None:
    long_out = "o" * 2500
    long_err = "é" * 2001
    store = make_store(world(interrupted(result_text=long_out, error_text=long_err)))
    result = store.requeue_platform("t1", "interrupted", "platform_fresh", -1, NOW + 1)
    assert result.ok and result.error is None
    expected = Attempt(
        task_id="t1",
        attempt_no=1,
        kind="platform_fresh",
        interrupted_reason="host restart",
        checkpoint_round=-1,
        result_text="o" * 2000,
        error_text="é" * 2000,
        created_at=NOW + 1,
    )
    assert result.attempt == expected
    assert store.list_attempts("t1") == (expected,)
    task = store.get_task("t1")
    assert task.status == "queued"
    assert (task.result_text, task.error_text, task.interrupted_reason) == (None, None, None)
    assert task.auto_resume_count == 1
    assert (task.prompt, task.actual_model, task.created_by) == ("build it", "m-1", "u1")


@pytest.mark.rule("ATT-2")
def test_attempt_numbers_follow_the_auto_resume_count(make_store: MakeStore) -> None:
    store = make_store(world(interrupted(auto_resume_count=2, status="running")))
    first = store.requeue_platform("t1", "running", "goal_breakpoint", 7, NOW)
    assert first.ok and first.attempt is not None
    assert (first.attempt.attempt_no, first.attempt.kind, first.attempt.checkpoint_round) == (
        3,
        "goal_breakpoint",
        7,
    )
    assert store.get_task("t1").auto_resume_count == 3
    # the task runs again and is interrupted again: the next attempt is 4
    again = store.transition_task(
        "t1",
        "queued",
        {"status": "interrupted", "result_text": "second", "interrupted_reason": "oom"},
    )
    assert again is not None
    second = store.requeue_platform("t1", "interrupted", "goal_breakpoint", 9, NOW + 5)
    assert second.ok and second.attempt is not None and second.attempt.attempt_no == 4
    assert [a.attempt_no for a in store.list_attempts("t1")] == [3, 4]
    latest = store.latest_attempt("t1")
    assert latest is not None
    assert (latest.attempt_no, latest.result_text, latest.interrupted_reason) == (
        4,
        "second",
        "oom",
    )


@pytest.mark.rule("ATT-2")
@pytest.mark.parametrize(
    ("task_id", "expected", "kind", "rnd"),
    [
        ("t1", "running", "platform_fresh", -1),  # status changed meanwhile
        ("zz", "interrupted", "platform_fresh", -1),  # no such task
        ("t1", "interrupted", "manual_retry", -1),  # recording fails: unknown kind
        ("t1", "interrupted", "platform_fresh", "x"),  # recording fails: bad round
    ],
)
def test_a_failed_requeue_changes_nothing_and_is_returned(
    make_store: MakeStore, task_id: str, expected: str, kind: str, rnd: Any
) -> None:
    original = interrupted()
    store = make_store(world(original))
    result = store.requeue_platform(task_id, expected, kind, rnd, NOW)
    assert not result.ok
    assert result.error
    assert store.get_task("t1") == original
    assert store.list_attempts("t1") == ()
    assert store.latest_attempt("t1") is None


@pytest.mark.rule("ATT-1", "ATT-2")
def test_recording_an_existing_key_keeps_the_first_row(make_store: MakeStore) -> None:
    first = Attempt("t1", 1, "platform_fresh", "first reason", -1, "first out", None, NOW - 100)
    store = make_store(world(interrupted(), attempts=(first,)))
    result = store.requeue_platform("t1", "interrupted", "platform_fresh", -1, NOW)
    assert result.ok
    assert store.list_attempts("t1") == (first,)
    assert store.latest_attempt("t1") == first
    assert store.get_task("t1").status == "queued"  # the requeue itself still happened


@pytest.mark.rule("ATT-3", "ATT-5")
def test_latest_and_list_read_back(make_store: MakeStore) -> None:
    rows = (
        Attempt("t1", 2, "platform_fresh", None, -1, None, "e2", NOW - 2),
        Attempt("t1", 10, "platform_fresh", "r10", -1, "o10", None, NOW - 1),
        Attempt("t1", 1, "goal_breakpoint", None, 3, None, None, NOW - 3),
        Attempt("t2", 5, "platform_fresh", None, -1, None, None, NOW),
    )
    store = make_store(world(interrupted("t1"), interrupted("t2"), attempts=rows))
    assert [a.attempt_no for a in store.list_attempts("t1")] == [1, 2, 10]
    assert store.list_attempts("t1")[0] == rows[2]
    assert store.latest_attempt("t1") == rows[1]
    assert store.latest_attempt("t2") == rows[3]
    assert store.latest_attempt("nobody") is None
    assert store.list_attempts("nobody") == ()


@pytest.mark.rule("ATT-2")
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=25)
@given(
    count=st.integers(0, 50),
    result_text=st.none() | st.text(max_size=2100),
    error_text=st.none() | st.text(max_size=30),
    reason=st.none() | st.text(max_size=30),
)
def test_requeue_round_trips_any_text(
    make_store: MakeStore,
    count: int,
    result_text: str | None,
    error_text: str | None,
    reason: str | None,
) -> None:
    task = interrupted(
        auto_resume_count=count,
        result_text=result_text,
        error_text=error_text,
        interrupted_reason=reason,
    )
    store = make_store(world(task))
    result = store.requeue_platform("t1", "interrupted", "platform_fresh", -1, NOW)
    assert result.ok
    want = Attempt(
        "t1",
        count + 1,
        "platform_fresh",
        reason,
        -1,
        None if result_text is None else result_text[:2000],
        error_text,
        NOW,
    )
    assert store.latest_attempt("t1") == want
    assert store.get_task("t1") == attrs.evolve(
        task,
        status="queued",
        result_text=None,
        error_text=None,
        interrupted_reason=None,
        auto_resume_count=count + 1,
    )
