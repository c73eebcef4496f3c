"""TRN-9 across real processes: a worker is SIGKILLed in the middle of `finish_turn` (before
each SQL statement of the call in turn, and right after it returned), then the worker's
next life makes the same call again. The store then holds exactly one finished turn - the
task requeued once, one cost row, the quota charged once - and the call says whether it
did the work (killed before the commit) or replays the first result (killed after it),
on SQLite and on PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from support.paths import TESTS
from support.postgres import drop_schema, new_schema_name, require_dsn

import markertools_adapters
from markertools import CostRow, Quota, Task, TurnCost
from markertools_adapters.world import World

HELPER = TESTS / "support" / "crash_finish.py"
WORLD = World(
    now=1_798_333_200.0,
    tasks=(Task("t1", "p1", status="running", created_by="u1", host="h1", prompt="work"),),
    quotas=(Quota("u1", 10, "1.5"),),
)
FINISH: dict[str, Any] = {
    "outcome": "completed",
    "result_text": "split into two parts",
    "cost": TurnCost("0.10", 1200),
    "requeue": True,
}
ONE_FINISHED_TURN = (
    "queued",
    "split into two parts",
    (CostRow("t1", 1, Decimal("0.1"), 1200),),
    Quota("u1", 10, "1.6"),
)

Target = tuple[str, str]  # (url, schema or "-")


@pytest.fixture(params=["sqlite", "postgres"])
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Target]]:
    """`fresh()` -> a new database holding WORLD, as (url, schema)."""
    made: list[str] = []

    def sqlite() -> Target:
        url = str(tmp_path / f"w{len(made)}.db")
        made.append(url)
        with markertools_adapters.connect(url, executor="noop") as store:
            store.load_world(WORLD)
        return url, "-"

    def postgres() -> Target:
        dsn = require_dsn()
        schema = new_schema_name()
        made.append(schema)
        with markertools_adapters.connect(dsn, executor="noop", schema=schema) as store:
            store.load_world(WORLD)
        return dsn, schema

    yield sqlite if request.param == "sqlite" else postgres
    if request.param == "postgres":
        for schema in made:
            drop_schema(require_dsn(), schema)


def worker(target: Target, at: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HELPER), target[0], target[1], str(at)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def finish_again(target: Target) -> tuple[bool, tuple[Any, ...]]:
    """The worker's next life: the same call; (replayed, what the store holds)."""
    schema = None if target[1] == "-" else target[1]
    with markertools_adapters.connect(target[0], executor="noop", schema=schema) as store:
        done = store.finish_turn("t1", "turn-1", **FINISH)
        task = store.get_task("t1")
        held = (task.status, task.result_text, store.task_costs("t1"), store.get_quota("u1"))
        assert store.finish_turn("t1", "turn-1", **FINISH).replayed is True
    return done.replayed, held


@pytest.mark.rule("TRN-9")
def test_a_worker_killed_during_finish_turn_finishes_the_turn_exactly_once_next_time(
    fresh: Callable[[], Target],
) -> None:
    clean = worker(fresh(), 0)
    assert clean.returncode == 0, clean.stderr[-2000:]
    statements = int(clean.stdout.split()[-1])
    assert statements >= 6  # the claim, the task, its update, the cost, the charge, the record
    for at in [*range(1, statements + 1, 2), statements, -1]:
        target = fresh()
        killed = worker(target, at)
        assert killed.returncode == -9, (at, killed.stdout, killed.stderr[-2000:])
        replayed, held = finish_again(target)
        assert held == ONE_FINISHED_TURN, at
        assert replayed is (at == -1), at  # killed after the commit: the first result
