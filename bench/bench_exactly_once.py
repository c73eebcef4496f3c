"""Exactly-once delivery cost on SQLite (TRN-9), in one run:

1. a 5-create turn delivered with a turn id against the same turn without one (goal:
   <= 1.3x) - the journal rows and one transaction per effect block;
2. its replay (the same turn id again: the stored report) against a fresh delivery
   (goal: <= 0.2x).

    .venv/bin/python bench/bench_exactly_once.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from markertools import deliver_turn
from markertools.domain.model import PermissionGrant, Project, Task
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.sqlite import create_store_from_world
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

NOW = 1_800_000_000.0
TURN = "".join(
    f'```task-create\n{{"prompt": "child {i}: run the tests and report"}}\n```\n\n' for i in range(5)
)


def world(senders: int) -> World:
    return World(
        now=NOW,
        projects=(Project(id="p", name="shop"),),
        permissions=(PermissionGrant("u", "p", ("read", "create_task")),),
        tasks=tuple(
            Task(id=f"s{i}", project_id="p", status="running", created_by="u", created_at=NOW)
            for i in range(senders)
        ),
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args(argv)
    n = args.rounds
    with tempfile.TemporaryDirectory() as tmp:
        store = create_store_from_world(world(3 * n), Path(tmp) / "bench.db")
        ports = store_ports(
            store, clock=VirtualClock(NOW), random=SeededRandom(1), executor=NoopExecutor()
        )
        plain, journalled, replay = [], [], []
        for i in range(n):  # interleaved, so drift hits all three alike
            t0 = time.perf_counter()
            deliver_turn(TURN, sender=f"s{i}", outcome="completed", ports=ports)
            plain.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            deliver_turn(TURN, sender=f"s{n + i}", outcome="completed", ports=ports, turn_id="t")
            journalled.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            again = deliver_turn(TURN, sender=f"s{n + i}", outcome="completed", ports=ports, turn_id="t")
            replay.append(time.perf_counter() - t0)
            assert again.replayed
        store.close()
    p, j, r = (statistics.median(x) * 1000 for x in (plain, journalled, replay))
    print(f"5-create turn on SQLite, medians of {n}:")
    print(f"  without a turn id        {p:7.3f} ms")
    print(f"  with a turn id           {j:7.3f} ms   {j / p:.2f}x   (goal <= 1.3x: {'met' if j / p <= 1.3 else 'MISSED'})")
    print(f"  replay of that turn id   {r:7.3f} ms   {r / j:.2f}x a fresh delivery (goal <= 0.2x: {'met' if r / j <= 0.2 else 'MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
