"""Real processes against one SQLite file.

* The race: N worker processes x T turns (default 8 x 200; MARKERTOOLS_RACE_WORKERS /
  MARKERTOOLS_RACE_TURNS scale it) deliver turns that cancel and retry the same four
  tasks and race to claim the same automation slots. Zero duplicated transitions, zero
  lost writes, zero "database is locked", and the final state is what the audit log says.
* The kill: a worker is SIGKILLed at random points mid-delivery; after each kill the
  database is intact and every transition is whole or absent.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import sqlite3
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from support.sqlite_workers import (
    AUTOMATIONS,
    TARGETS,
    churn_worker,
    claim_worker,
    make_race_db,
    race_worker,
)

from markertools_adapters.sqlite import open_store

WORKERS = int(os.environ.get("MARKERTOOLS_RACE_WORKERS", "8"))
TURNS = int(os.environ.get("MARKERTOOLS_RACE_TURNS", "200"))
KILLS = int(os.environ.get("MARKERTOOLS_KILL_ROUNDS", "6"))


def _chain_is_valid(moves: list[tuple[str, str]]) -> bool:
    """Can these (from, to) transitions of one task be ordered into one chain that starts
    at "running"? Each state is left as often as it is entered (+1 for the start)."""
    left: Counter[str] = Counter(frm for frm, _ in moves)
    entered: Counter[str] = Counter(to for _, to in moves)
    entered["running"] += 1
    ends = [s for s in set(left) | set(entered) if entered[s] - left[s] == 1]
    return all(0 <= entered[s] - left[s] <= 1 for s in set(left) | set(entered)) and len(ends) == 1


@pytest.mark.slow
@pytest.mark.rule("CTL-4", "SCH-4", "TRN-7")
def test_processes_racing_on_the_same_tasks(tmp_path: Path) -> None:
    path = tmp_path / "race.db"
    make_race_db(path, WORKERS)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=WORKERS, mp_context=ctx) as pool:
        futures = [pool.submit(race_worker, str(path), i, TURNS) for i in range(WORKERS)]
        results: list[dict[str, Any]] = [f.result(timeout=600) for f in futures]

    errors = [e for r in results for e in r["errors"]]
    assert errors == []  # no "database is locked", no port failure, no crash

    # ---- transitions: every successful compare-and-set, from every process -------------
    moves: dict[str, list[tuple[str, str]]] = {t: [] for t in TARGETS}
    for r in results:
        for task_id, frm, to in r["transitions"]:
            moves[task_id].append((frm, to))
    with open_store(path) as store:
        world = store.export_world(0.0)
        final = {t.id: t.status for t in world.tasks}
        audit_done = Counter(f"{a.kind}|{a.target}" for a in world.audit if a.outcome == "done")
        audit_total = len(world.audit)
        automations = {a.id: a for a in world.automations}

    reported_done: Counter[str] = Counter()
    reported_rejected: Counter[str] = Counter()
    for r in results:
        reported_done.update(r["done"])
        reported_rejected.update(r["rejected"])
    # no lost writes: every block a worker saw done is in the audit log, and vice versa
    assert audit_done == reported_done
    assert audit_total == sum(reported_done.values()) + sum(reported_rejected.values())
    contested = 0
    for target in TARGETS:
        chain = moves[target]
        # zero duplicated transitions: the successful moves form one valid chain ...
        assert _chain_is_valid(chain), (target, Counter(chain))
        cancels = audit_done[f"task-cancel|{target}"]
        retries = audit_done[f"task-retry|{target}"]
        # ... exactly as many as the audit log says happened ...
        assert len(chain) == cancels + retries
        assert (
            Counter(to for _, to in chain)
            == Counter({"interrupted": cancels, "queued": retries}) - Counter()
        )
        # ... and the final status is where that history ends
        expected = "running" if cancels == 0 else ("interrupted" if cancels > retries else "queued")
        assert cancels - retries in (0, 1)
        assert final[target] == expected
        contested += (
            reported_rejected[f"task-cancel|{target}"] + reported_rejected[f"task-retry|{target}"]
        )
    assert contested > 0  # the workers really raced

    # ---- SCH-4: exactly one winner per automation slot ---------------------------------
    wins = [tuple(c) for r in results for c in r["claims"]]
    assert len(wins) == len(set(wins)), "a slot was claimed twice"
    for automation_id in AUTOMATIONS:
        slots = sorted(slot for a, slot in wins if a == automation_id)
        assert automations[automation_id].run_count == len(slots)
        # every slot between the first and the last was claimed exactly once, in order
        assert slots == [float(60 * k) for k in range(len(slots))]


@pytest.mark.slow
@pytest.mark.rule("SCH-4")
def test_claim_race_has_exactly_one_winner_per_slot(tmp_path: Path) -> None:
    """All workers wait at a barrier, then claim the same slot at once, round after round."""
    path = tmp_path / "claims.db"
    make_race_db(path, 1)
    rounds = max(5, TURNS // 4)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=claim_worker, args=(str(path), rounds, barrier, queue))
        for _ in range(WORKERS)
    ]
    for proc in procs:
        proc.start()
    results = [queue.get(timeout=300) for _ in procs]
    for proc in procs:
        proc.join(30)
        assert proc.exitcode == 0
    assert [e for r in results for e in r["errors"]] == []
    per_slot: Counter[tuple[str, float]] = Counter()
    for r in results:
        per_slot.update(tuple(c) for c in r["wins"])
    slots = [(AUTOMATIONS[0], float(60 * k)) for k in range(rounds)]
    assert per_slot == Counter(slots)  # each slot: exactly one winner, none twice
    assert sum(r["losses"] for r in results) == rounds * (WORKERS - 1)
    with open_store(path) as store:
        automation = store.get_automation(AUTOMATIONS[0])
        assert automation is not None and automation.run_count == rounds


def _check_whole(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        stats = {"tasks": conn.execute("SELECT count(*) FROM tasks").fetchone()[0]}
        # ATT-2: a requeue is the ledger row AND the task change, or neither
        for task_id, count in conn.execute("SELECT id, auto_resume_count FROM tasks"):
            numbers = [
                n
                for (n,) in conn.execute(
                    "SELECT attempt_no FROM task_attempts WHERE task_id = ? ORDER BY attempt_no",
                    (task_id,),
                )
            ]
            assert numbers == list(range(1, count + 1)), (task_id, count, numbers)
        # a cancel sets the status and the reason together
        assert conn.execute(
            "SELECT count(*) FROM tasks WHERE status = 'interrupted' AND interrupted_reason IS NULL"
        ).fetchone() == (0,)
        # a retry / requeue sets queued and clears the outputs together
        assert conn.execute(
            "SELECT count(*) FROM tasks WHERE status = 'queued'"
            " AND (result_text IS NOT NULL OR error_text IS NOT NULL)"
        ).fetchone() == (0,)
        stats["attempts"] = conn.execute("SELECT count(*) FROM task_attempts").fetchone()[0]
        stats["audit"] = conn.execute("SELECT count(*) FROM audit").fetchone()[0]
        return stats
    finally:
        conn.close()


@pytest.mark.slow
@pytest.mark.rule("ATT-2", "CTL-4")
def test_a_worker_killed_mid_delivery_leaves_whole_transitions(tmp_path: Path) -> None:
    path = tmp_path / "kill.db"
    make_race_db(path, 2)
    ctx = multiprocessing.get_context("spawn")
    rng = random.Random(4)
    progress: list[dict[str, int]] = []
    for round_no in range(KILLS):
        proc = ctx.Process(target=churn_worker, args=(str(path), round_no))
        proc.start()
        time.sleep(1.0 + rng.random())  # the child needs ~0.5 s to import, then works
        assert proc.pid is not None and proc.is_alive()
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(10)
        assert proc.exitcode == -signal.SIGKILL
        progress.append(_check_whole(path))
        # the next round must be able to write again: no lock left behind
        with open_store(path, busy_timeout=5.0) as store:
            store.enqueue_followup("w0", f"after kill {round_no}")
    assert progress[-1]["audit"] > progress[0]["audit"] > 0  # the workers really worked
    assert progress[-1]["attempts"] > 0
