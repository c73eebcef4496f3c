"""AUT-3 across real processes on one SQLite file: several workers all see an automation
name free (each reads the active names, then a barrier holds everyone until all have read
them) and then all register it. Exactly one wins; every other gets the specific
rejection - AutomationNameTaken from the store, "already named" from automation-create -
and the database holds exactly one active automation of that name."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from support.automation_race import NAME, PROJECT, deliver_worker, insert_worker, make_db

WORKERS = 4


def _race(path: Path, worker: Any) -> list[tuple[Any, ...]]:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    queue: Any = ctx.Queue()
    procs = [
        ctx.Process(target=worker, args=(str(path), i, barrier, queue)) for i in range(WORKERS)
    ]
    for proc in procs:
        proc.start()
    results = [queue.get(timeout=180) for _ in procs]
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    return sorted(results)


def _active_named(path: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT id, project_id FROM automations WHERE name = ? AND status = 'active'",
            (NAME,),
        ).fetchall()
    finally:
        conn.close()
    return [(str(a), str(p)) for a, p in rows]


@pytest.mark.slow
@pytest.mark.rule("AUT-3")
def test_processes_that_all_saw_the_name_free_insert_it_exactly_once(tmp_path: Path) -> None:
    path = tmp_path / "names.db"
    make_db(path, WORKERS)
    results = _race(path, insert_worker)
    assert all(saw_free for _, saw_free, _ in results), results  # the race really happened
    outcomes = sorted(outcome for _, _, outcome in results)
    assert outcomes == [f"taken {PROJECT}/{NAME}"] * (WORKERS - 1) + ["won"], results
    (winner,) = [index for index, _, outcome in results if outcome == "won"]
    assert _active_named(path) == [(f"a{winner}", PROJECT)]


@pytest.mark.slow
@pytest.mark.rule("AUT-3")
def test_deliveries_racing_for_one_name_register_it_once_and_reject_the_rest(
    tmp_path: Path,
) -> None:
    path = tmp_path / "deliveries.db"
    make_db(path, WORKERS)
    results = _race(path, deliver_worker)
    outcomes = sorted(outcome for _, outcome, _ in results)
    assert outcomes == ["done"] + ["rejected"] * (WORKERS - 1), results
    for _, outcome, reason in results:
        if outcome == "rejected":
            assert f"an active automation of this project is already named '{NAME}'" in reason
            assert "nothing was registered" in reason
    assert len(_active_named(path)) == 1
