"""Manual retries record nothing in the attempts ledger (ATT-2) and get no resume preamble
on the next claim (ATT-4)."""

from __future__ import annotations

import pytest
from support.strategies.todo import NOW, CountingRandom, base_world, make_ports, memory_store

from markertools import deliver_turn
from markertools.domain.model import Attempt, Task
from markertools.parse.params import TaskRetryParams
from markertools.parse.plan import Command, TurnPlan
from markertools_adapters.first_turn import first_turn_prompt


@pytest.mark.rule("ATT-2", "ATT-4")
def test_task_retry_records_nothing_and_its_claim_gets_no_preamble() -> None:
    old = Attempt("t2", 1, "platform_fresh", "host restart", -1, "old output", None, NOW - 500)
    world = base_world(
        tasks=(
            Task("t1", "p1", created_by="u1", prompt="lead"),
            Task(
                "t2",
                "p1",
                status="failed",
                created_by="u1",
                prompt="do it",
                error_text="boom",
                auto_resume_count=1,
            ),
        ),
        attempts=(old,),
    )
    store = memory_store(world)
    report = deliver_turn(
        TurnPlan(commands=(Command("task-retry", 1, TaskRetryParams("t2")),)),
        sender="t1",
        outcome="completed",
        ports=make_ports(store),
    )
    (entry,) = report.entries
    assert entry.outcome == "done", entry.reason.render("en")
    task = store.get_task("t2")
    assert task.status == "queued" and task.auto_resume_count == 1
    assert store.list_attempts("t2") == (old,)  # nothing recorded
    out = first_turn_prompt(
        task, "retry", projects=store, todos=store, attempts=store, random=CountingRandom()
    )
    assert "resume" not in out.sections and "old output" not in out.prompt
    assert "project" in out.sections  # still a fresh start (INJ-1)
