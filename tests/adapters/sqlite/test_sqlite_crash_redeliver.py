"""Exactly once across real processes (TRN-9): a delivery process is SIGKILLed at a store
write (before or right after it), then the same turn is delivered again; the database
equals one clean delivery - no duplicate, nothing lost, the report queued once.
MARKERTOOLS_CRASH_POINTS=all runs every kill point (the bench profile); by default a
spread of them, bounded in time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.exactly_once import TURN, deliver, snapshot, world
from support.paths import TESTS

from markertools_adapters.executors import NoopExecutor
from markertools_adapters.sqlite import create_store_from_world, open_store

HELPER = TESTS / "support" / "crash_delivery.py"


def kill_points(total: int) -> list[int]:
    everything = [*range(1, total + 1), *(-k for k in range(2, total + 2))]
    if os.environ.get("MARKERTOOLS_CRASH_POINTS") == "all":
        return everything
    return everything[::3]


def writes_of_one_delivery(tmp: Path) -> int:
    from markertools import deliver_turn
    from markertools_adapters.clock import SeededRandom, VirtualClock
    from markertools_adapters.wiring import store_ports

    class Count:
        def __init__(self, store: object) -> None:
            self.store, self.n = store, 0

        def __getattr__(self, name: str) -> object:
            value = getattr(self.store, name)
            if name in ("insert_task", "insert_todo", "transition_task", "record_audit", "enqueue_followup", "record_block"):
                def counted(*a: object, **k: object) -> object:
                    self.n += 1
                    return value(*a, **k)  # type: ignore[operator]
                return counted
            return value

    store = create_store_from_world(world(), tmp / "count.db")
    counter = Count(store)
    ports = store_ports(
        counter,  # type: ignore[arg-type]
        clock=VirtualClock(1.8e9),
        random=SeededRandom(7),
        executor=NoopExecutor(),
    )
    deliver_turn(TURN, sender="t-s", outcome="completed", ports=ports, turn_id="turn-1")
    store.close()
    return counter.n


@pytest.mark.rule("TRN-9")
def test_sigkill_at_any_write_then_redelivery_equals_one_clean_delivery(tmp_path: Path) -> None:
    clean = create_store_from_world(world(), tmp_path / "clean.db")
    deliver(clean)
    expected = snapshot(clean)
    clean.close()
    turn_file = tmp_path / "turn.md"
    turn_file.write_text(TURN, encoding="utf-8")
    total = writes_of_one_delivery(tmp_path)
    assert total >= 12
    killed = 0
    for at in kill_points(total):
        db = tmp_path / f"crash{at}.db"
        create_store_from_world(world(), db).close()
        run = subprocess.run(
            [sys.executable, str(HELPER), str(db), str(at), str(turn_file)],
            capture_output=True, text=True, timeout=60,
        )
        if run.returncode == -9:
            killed += 1
        else:
            assert run.returncode == 0, run.stderr[-2000:]
        with open_store(db) as store:
            report = deliver(store)  # the worker delivers the turn again
            got = snapshot(store)
            again = deliver(store)
        assert report.report_queued, (at, report.report_error)
        assert {k: v for k, v in got.items() if k != "audit"} == {
            k: v for k, v in expected.items() if k != "audit"
        }, at
        assert again.replayed is True
    assert killed >= len(kill_points(total)) // 2  # most runs really were killed
