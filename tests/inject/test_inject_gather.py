"""The worker-side glue (markertools_adapters.first_turn): gathering injection inputs
through the ports with per-lookup failure handling (INJ-3/4), no lookups for non-fresh
starts or coordinators (INJ-1/5), nothing written back, the never-raising platform
requeue (ATT-2) and the permission-checked attempts timeline (ATT-5)."""

from __future__ import annotations

from typing import Any

import pytest
from support.strategies.todo import NOW, CountingRandom, base_world, memory_store

from markertools.domain.decision import Denied
from markertools.domain.model import Attempt, PermissionGrant, Task, Todo
from markertools_adapters.first_turn import (
    attempt_timeline,
    first_turn_prompt,
    gather_injection_inputs,
    platform_requeue,
)


class Recorder:
    """Wraps a store, records which port methods were called, can make some raise."""

    def __init__(self, store: Any, failing: tuple[str, ...] = ()) -> None:
        self.store = store
        self.failing = failing
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.store, name)

        def call(*a: Any, **k: Any) -> Any:
            self.calls.append(name)
            if name in self.failing:
                raise ConnectionError(f"{name} unavailable")
            return target(*a, **k)

        return call


def world_with_everything() -> Any:
    w = base_world(
        todos=(Todo("d1", "p1", "Write docs", created_at=NOW), Todo("d2", "p2", "theirs")),
        attempts=(Attempt("t1", 1, "platform_fresh", "host restart", -1, "half done", None, NOW),),
    )
    return memory_store(w)


def prompt_for(store: Any, task: Task, start: str = "fresh", **kw: Any) -> Any:
    ports = kw.pop("ports", store)
    return first_turn_prompt(
        task,
        start,
        projects=ports,
        todos=ports,
        attempts=ports,
        random=CountingRandom(),
        **kw,
    )


@pytest.mark.rule("INJ-1", "INJ-2", "INJ-3", "INJ-4", "ATT-4")
def test_gathers_every_section_and_writes_nothing_back() -> None:
    store = world_with_everything()
    before = store.export_world(NOW)
    task = store.get_task("t1")
    out = prompt_for(store, task, memory=("prefer small commits",))
    assert out.sections == ("project", "todos", "memory", "resume")
    assert "Write docs" in out.prompt and "theirs" not in out.prompt
    assert "half done" in out.prompt
    assert out.prompt.endswith("build the shop")
    assert store.export_world(NOW) == before  # nothing written back
    assert store.get_task("t1").prompt == "build the shop"


@pytest.mark.rule("INJ-1", "INJ-5")
@pytest.mark.parametrize("start", ["continuation", "checkpoint", "manual"])
def test_non_fresh_and_coordinator_do_no_lookups(start: str) -> None:
    store = world_with_everything()
    rec = Recorder(store)
    out = prompt_for(store, store.get_task("t1"), start, ports=rec)
    assert out.prompt == "build the shop" and rec.calls == []
    coordinator = Task("c1", "p1", prompt="lead", is_coordinator=True)
    out = prompt_for(store, coordinator, "fresh", ports=rec)
    assert out.prompt == "lead" and rec.calls == []


@pytest.mark.rule("INJ-3", "INJ-4")
@pytest.mark.parametrize(
    ("failing", "sections"),
    [
        (("get_project",), ("todos", "resume")),
        (("list_todos",), ("project", "resume")),
        (("get_project", "list_todos"), ("resume",)),
        (("latest_attempt",), ("project", "todos")),
        (("get_project", "list_todos", "latest_attempt"), ()),
    ],
)
def test_each_failing_lookup_drops_only_its_section(
    failing: tuple[str, ...], sections: tuple[str, ...]
) -> None:
    store = world_with_everything()
    out = prompt_for(store, store.get_task("t1"), ports=Recorder(store, failing))
    assert out.sections == sections
    if not sections:
        assert out.prompt == "build the shop"
    notes = " ".join(n.render("en") for n in out.notes)
    if "get_project" in failing:
        assert "project lookup failed" in notes
    if "list_todos" in failing:
        assert "todo lookup failed" in notes


class BrokenRandom:
    def token_hex(self, nbytes: int) -> str:
        raise OSError("no entropy available")


@pytest.mark.rule("INJ-1", "INJ-4", "ATT-4")
@pytest.mark.parametrize("goal_task", [False, True])
def test_a_failing_random_source_leaves_prompt_and_goal_unchanged(goal_task: bool) -> None:
    # framing todos and previous output needs a nonce; when the random port fails the
    # claim still gets its original prompt (and goal) and a note, never an exception
    store = world_with_everything()
    before = store.export_world(NOW)
    task = store.get_task("t1")
    if goal_task:
        task = Task("g1", "p1", prompt="gp", goal="ship it", goal_mode=True)
    out = first_turn_prompt(
        task,
        "fresh",
        projects=store,
        todos=store,
        attempts=store,
        random=BrokenRandom(),
        memory=("prefer small commits",),
        memory_trusted=True,  # trusted snippets need no nonce either (untrusted ones do)
    )
    if goal_task:  # the project context needs no nonce: goal tasks are still injected
        assert out.sections[0] == "project" and out.goal is not None
        assert out.goal.endswith("ship it")
    else:
        assert (out.prompt, out.goal, out.sections) == (task.prompt, task.goal, ())
        (note,) = out.notes
        assert "no entropy available" in note.render("en")
        assert "组装首轮提示失败" in note.render("zh")
    assert store.export_world(NOW) == before


@pytest.mark.rule("INJ-3", "INJ-4", "ATT-4")
def test_goal_task_asks_only_for_the_project() -> None:
    store = world_with_everything()
    goal = Task("g1", "p1", prompt="gp", goal="ship it", goal_mode=True)
    rec = Recorder(store)
    out = prompt_for(store, goal, ports=rec)
    assert rec.calls == ["get_project"]
    assert out.goal is not None and out.goal.startswith("[Project context]")
    assert out.goal.endswith("ship it")


@pytest.mark.rule("ATT-4")
def test_retry_start_does_not_read_the_ledger() -> None:
    store = world_with_everything()
    rec = Recorder(store)
    inputs = gather_injection_inputs(
        store.get_task("t1"), "retry", projects=rec, todos=rec, attempts=rec
    )
    assert "latest_attempt" not in rec.calls
    assert inputs.attempt is None


@pytest.mark.rule("ATT-2")
def test_platform_requeue_picks_the_kind_and_never_raises() -> None:
    store = memory_store(
        base_world(
            tasks=(
                Task("t1", "p1", status="interrupted", result_text="r", interrupted_reason="oom"),
                Task("g1", "p1", status="running", goal_mode=True),
            )
        )
    )
    normal = platform_requeue(store, store.get_task("t1"), NOW, checkpoint_round=5)
    assert normal.ok and normal.attempt is not None
    assert (normal.attempt.kind, normal.attempt.checkpoint_round) == ("platform_fresh", -1)
    goal = platform_requeue(store, store.get_task("g1"), NOW, checkpoint_round=5)
    assert goal.ok and goal.attempt is not None
    assert (goal.attempt.kind, goal.attempt.checkpoint_round) == ("goal_breakpoint", 5)
    # a stale task (already requeued) is refused, not raised
    stale = platform_requeue(store, Task("t1", "p1", status="interrupted"), NOW)
    assert not stale.ok and stale.error

    class Broken:
        def requeue_platform(self, *a: Any) -> Any:
            raise RuntimeError("ledger table missing")

    broken = platform_requeue(Broken(), store.get_task("t1"), NOW)  # type: ignore[arg-type]
    assert not broken.ok and "ledger table missing" in (broken.error or "")


@pytest.mark.rule("ATT-5")
def test_attempt_timeline_requires_read() -> None:
    store = world_with_everything()
    store.requeue_platform("t1", "running", "platform_fresh", -1, NOW + 1)
    got = attempt_timeline("u1", "t1", tasks=store, attempts=store, permissions=store)
    assert not isinstance(got, Denied)
    assert [a.attempt_no for a in got] == [1]
    denied = attempt_timeline("u9", "t1", tasks=store, attempts=store, permissions=store)
    assert isinstance(denied, Denied) and "'read'" in denied.reason.render("en")
    missing = attempt_timeline("u1", "nope", tasks=store, attempts=store, permissions=store)
    assert isinstance(missing, Denied)
    failing = attempt_timeline(
        "u1", "t1", tasks=store, attempts=store, permissions=Recorder(store, ("has_permission",))
    )
    assert isinstance(failing, Denied) and "failed" in failing.reason.render("en")


@pytest.mark.rule("ATT-5")
def test_timeline_lists_attempts_in_order_after_several_requeues() -> None:
    store = memory_store(
        base_world(
            permissions=(PermissionGrant("u1", "p1", ("read",)),),
            tasks=(Task("t1", "p1", status="running", created_by="u1"),),
        )
    )
    for i in range(3):
        assert store.requeue_platform("t1", "running", "platform_fresh", -1, NOW + i).ok
        assert store.transition_task("t1", "queued", {"status": "running"}) is not None
    got = attempt_timeline("u1", "t1", tasks=store, attempts=store, permissions=store)
    assert not isinstance(got, Denied)
    assert [(a.attempt_no, a.created_at) for a in got] == [(1, NOW), (2, NOW + 1), (3, NOW + 2)]
