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

End to end (`--e2e`, issue 38's measure): a worker host on the real pinned Codex CLI
(offline, the fake model) runs tasks whose agent asks to run `date +%s.%N > FILE` outside
its sandbox; another store connection approves each request at a random moment of its
wait, and the figure is answer committed -> the command running in the agent's turn (the
time the command itself wrote). Goal: <= 1 s on PostgreSQL, <= the poll interval + 0.2 s
on SQLite.

    .venv/bin/python bench/bench_approvals.py [--rounds N] [--e2e N] [--quick]
    scripts/with_postgres.sh .venv/bin/python bench/bench_approvals.py --e2e 10
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

from markertools import ApprovalRule, Project, Task  # noqa: E402
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


def end_to_end(kind: str, rounds: int, *, by_rule: bool = False) -> list[float]:
    """Answer committed -> the approved command running (the file's mtime), through a
    real worker host; `by_rule`: an allow rule answers at once, and the figure is the
    request stored -> the command running (Codex's own part, the baseline)."""
    import re
    import threading

    sys.path.insert(0, str(ROOT / "bench"))
    from bench_worker import Bench, codex_bin

    from markertools_adapters.codex.fakemodel import FakeResponses, ShellCall, Text, request_texts
    from markertools_adapters.worker import WorkerHost

    tag = re.compile(r"\[stamp:(\d+)\]")
    with tempfile.TemporaryDirectory() as tmp, FakeResponses(default_reply=None) as fake:
        stamps = Path(tmp) / "stamps"
        stamps.mkdir()

        def reply_for(body: Any) -> Any:
            texts = request_texts(body)
            found = next((m.group(1) for t in texts for m in [tag.search(t)] if m), None)
            answered = any(
                isinstance(i, dict) and i.get("type") == "function_call_output"
                for i in (body.get("input") or [] if isinstance(body, dict) else [])
            )
            if found is None or answered:
                return Text("done")
            return ShellCall(f"touch {stamps / found}", escalate=True, justification="a stamp")

        fake.reply_for = reply_for
        b = Bench(Path(tmp), codex_bin(), fake)
        _, schema = b.fresh(kind)
        committed: dict[str, float] = {}
        with b.store(kind, schema=schema) as store, b.store(kind, schema=schema) as answerer:
            for n in range(rounds):
                store.insert_task(Task(f"e-{n:03d}", "p1", status="queued", prompt=f"[stamp:{n}]",
                                       created_by="alice", created_at=float(n)))
            if by_rule:
                store.add_approval_rule(ApprovalRule("r-touch", "p1", "allow", "command",
                                                     prefix=("touch",)))
            host = WorkerHost(b.settings("h1", max_concurrent=1), store)
            done = threading.Event()

            def person() -> None:
                while not done.is_set() and not by_rule:
                    for request in answerer.list_approvals("p1", statuses=("pending",)):
                        time.sleep(random.uniform(0.0, 0.3))  # a random moment of the wait
                        answerer.answer_approval(request.id, "approved", answered_by="person:bench",
                                                 reason=None, now=time.time())
                        committed[request.task_id] = time.time()
                    time.sleep(0.01)

            helper = threading.Thread(target=person)
            helper.start()
            try:
                asyncio.run(host.run())
            finally:
                done.set()
                helper.join(30)
            if by_rule:
                committed = {r.task_id: r.asked_at for r in store.list_approvals("p1")}
        b.drop(schema)
        return [(stamps / str(int(t.removeprefix("e-")))).stat().st_mtime_ns / 1e9 - at
                for t, at in committed.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--e2e", type=int, default=10, metavar="N",
                        help="N end-to-end rounds per store through a worker host on Codex "
                        "(default 10; 0: none)")
    parser.add_argument("--quick", action="store_true", help="5 rounds, 3 end to end")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.e2e = 5, 3
    if args.e2e:
        kinds = ["sqlite"] + (["postgres"] if os.environ.get("MARKERTOOLS_PG_DSN") else [])
        for kind in kinds:
            base = sorted(x * 1000 for x in end_to_end(kind, args.e2e, by_rule=True))
            ms = sorted(x * 1000 for x in end_to_end(kind, args.e2e))
            print(f"end to end, {kind:<8}: answer -> command running median "
                  f"{statistics.median(ms):7.1f} ms, max {ms[-1]:7.1f} ms ({len(ms)} rounds); "
                  f"baseline (an allow rule: request stored -> command running) median "
                  f"{statistics.median(base):7.1f} ms, max {base[-1]:7.1f} ms; the broker's "
                  f"share {statistics.median(ms) - statistics.median(base):6.1f} ms (medians)")
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
