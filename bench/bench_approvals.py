"""Approval broker latency (issue 38, APR-3): how long after an answer is committed - by
another connection, as a person's `markertools approvals approve` or an ancestor agent
writes it - the broker's waiting `decide()` returns, against the broker's poll interval.

- SQLite (and memory): the broker re-reads the store every `poll_interval` (0.25 s by
  default), so the latency is at most about one interval.
- PostgreSQL (MARKERTOOLS_PG_DSN set, e.g. through scripts/with_postgres.sh): the
  approvals trigger NOTIFYs the task's channel and the broker's listener wakes the wait,
  so the latency is a notification's round trip, however long the poll interval (5 s by
  default there).

Each round starts one request, answers it from another store object at a random moment
and measures answer-committed -> decision-returned. Prints the median and the max.

    .venv/bin/python bench/bench_approvals.py [--rounds N]
    scripts/with_postgres.sh .venv/bin/python bench/bench_approvals.py
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from markertools import Project, Task  # noqa: E402
from markertools_adapters.approvals import ApprovalAsk, ApprovalEvent, Broker  # noqa: E402
from markertools_adapters.world import World  # noqa: E402

WORLD = World(
    now=time.time(),
    projects=(Project("p1", "bench"),),
    tasks=(Task("t1", "p1", status="running", created_by="u1", worktree="/w/t1"),),
)


async def one_round(broker: Broker, answerer: Any, events: list[ApprovalEvent]) -> float:
    events.clear()
    pending = asyncio.create_task(
        broker.decide(ApprovalAsk("t1", "command", ("uv", "run", "pytest")), timeout=120)
    )
    while not events:
        await asyncio.sleep(0.001)
    await asyncio.sleep(random.uniform(0.0, 0.3))  # answer at a random point of the wait
    rid = events[0].request.id
    await asyncio.to_thread(
        answerer.answer_approval,
        rid,
        "approved",
        answered_by="person:bench",
        reason=None,
        now=time.time(),
    )
    committed = time.perf_counter()
    decision = await pending
    assert decision.approved, decision.text()
    return time.perf_counter() - committed


def measure(name: str, store: Any, answerer: Any, rounds: int) -> None:
    events: list[ApprovalEvent] = []
    broker = Broker(store, on_event=events.append)
    try:
        latencies = asyncio.run(_rounds(broker, answerer, events, rounds))
    finally:
        broker.close()
    ms = sorted(x * 1000 for x in latencies)
    print(
        f"{name:<11} poll interval {broker.poll_interval:>5.2f} s"
        f"{' + NOTIFY' if broker.listening else '         '}:"
        f" answer -> decision median {statistics.median(ms):7.1f} ms, max {ms[-1]:7.1f} ms"
        f" ({rounds} rounds; woken by a notice {broker.notified_wakeups} times)"
    )


async def _rounds(
    broker: Broker, answerer: Any, events: list[ApprovalEvent], n: int
) -> list[float]:
    return [await one_round(broker, answerer, events) for _ in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    from markertools_adapters.memory import MemoryStore
    from markertools_adapters.sqlite import SqliteStore, create_store_from_world

    memory = MemoryStore.from_world(WORLD)
    measure("memory", memory, memory, args.rounds)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        with create_store_from_world(WORLD, path) as store, SqliteStore(path) as other:
            measure("SQLite", store, other, args.rounds)
    dsn = os.environ.get("MARKERTOOLS_PG_DSN")
    if not dsn:
        print("PostgreSQL  skipped: MARKERTOOLS_PG_DSN is not set (scripts/with_postgres.sh)")
        return
    sys.path.insert(0, str(ROOT / "tests"))
    from support.postgres import throwaway_store

    from markertools_adapters.postgres import PostgresStore

    store = throwaway_store(WORLD)
    other = PostgresStore(dsn, schema=store.schema)
    try:
        measure("PostgreSQL", store, other, args.rounds)
    finally:
        other.close()
        store.close()


if __name__ == "__main__":
    main()
