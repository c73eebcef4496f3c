"""The resume preamble of a first turn: it follows only a platform requeue, never a manual
retry (ATT-4); a ledger row with missing fields keeps its notice and shows the
placeholders (ATT-3)."""

from __future__ import annotations

from typing import Any

import pytest

from markertools import deliver_turn
from markertools.domain.model import Attempt, PermissionGrant, Task
from markertools.inject.attempts import resume_preamble
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.first_turn import first_turn_prompt, platform_requeue
from markertools_adapters.memory import MemoryStore
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

NOW = 1_798_333_200.0
FENCE = "```"


def block(kind: str, body: str) -> str:
    return f"{FENCE}{kind}\n{body}\n{FENCE}\n"


def prompt_sections(store: Any, task_id: str) -> tuple[str, ...]:
    task = store.get_task(task_id)
    out = first_turn_prompt(
        task, "fresh", projects=store, todos=store, attempts=store, random=SeededRandom(3)
    )
    return out.sections


@pytest.mark.rule("ATT-4", "CTL-3")
def test_a_manual_retry_claimed_fresh_gets_no_stale_restart_preamble() -> None:
    world = World(
        now=NOW,
        permissions=(PermissionGrant("u1", "p1", ("read", "create_task", "approve_merge")),),
        tasks=(
            Task("lead", "p1", status="running", created_by="u1"),
            Task("t1", "p1", status="running", created_by="u1", parent_task_id="lead"),
        ),
    )
    store = MemoryStore.from_world(world)
    ports = store_ports(
        store, clock=VirtualClock(NOW), random=SeededRandom(1), executor=NoopExecutor()
    )
    assert platform_requeue(store, store.get_task("t1"), NOW).ok
    assert "resume" in prompt_sections(store, "t1")  # the claim after the platform requeue

    store.transition_task("t1", "queued", {"status": "running"})
    store.transition_task("t1", "running", {"status": "failed", "error_text": "boom"})
    report = deliver_turn(
        block("task-retry", '{"task_id": "t1"}'), sender="lead", outcome="completed", ports=ports
    )
    assert report.entries[0].outcome == "done"
    assert store.get_task("t1").retried_after_attempt == 1
    assert "resume" not in prompt_sections(store, "t1")  # claimed "fresh" by the worker

    store.transition_task("t1", "queued", {"status": "running"})  # a later platform restart
    assert platform_requeue(store, store.get_task("t1"), NOW + 1).ok
    assert "resume" in prompt_sections(store, "t1")


@pytest.mark.rule("ATT-3", "ATT-4")
def test_a_row_with_missing_fields_shows_the_placeholders() -> None:
    row = Attempt("t1", None, "platform_fresh", checkpoint_round=None, created_at=None)  # type: ignore[arg-type]
    store = MemoryStore.from_world(World(now=NOW, tasks=(Task("t1", "p1", status="queued"),)))
    store._state.attempts[("t1", 1)] = row
    assert store.latest_attempt("t1") == row
    en = resume_preamble(row, SeededRandom(1), "en") or ""
    zh = resume_preamble(row, SeededRandom(1), "zh") or ""
    assert "This is a restart of attempt ?, not a new task" in en
    assert "(this run is attempt ?)" in en and "checkpoint round: ?" in en
    assert "第 未知 次尝试" in zh and "断点轮次：未知" in zh
    # a value of the wrong type is still malformed (no notice)
    assert (
        resume_preamble(Attempt("t1", 1, "platform_fresh", checkpoint_round="x"), SeededRandom(1))
        is None
    )  # type: ignore[arg-type]
