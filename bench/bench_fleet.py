"""Fleet safety (issue 34, FLT-1..5), each figure against a baseline of the same run:

1. Fencing cost: a typical turn's `deliver_turn` (task-create + todo-create) and its
   `finish_turn`, fenced (`claim=`) against unfenced, alternating batches on one store
   (SQLite; PostgreSQL when MARKERTOOLS_PG_DSN is set). Goal <= 1.05x.
2. Recovery after a store outage: a worker host on a PostgreSQL server of its own that is
   stopped for 3 s; once it is back, a task is inserted and the time until the host claims
   it is measured, against the same insert -> claim with no outage. Goal <= 2 s plus the
   backoff cap (5 s).
3. Fairness: N roots each create one child and wait for it, on N run slots; the child's
   creation -> claim latency, against N children queued directly with no waiting root
   (real Codex, offline). Goal: no worse than the baseline plus one poll interval.

    .venv/bin/python bench/bench_fleet.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import logging
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_worker import Bench, codex_bin  # noqa: E402

from markertools import Project, Quota, Task, TurnCost, deliver_turn  # noqa: E402
from markertools_adapters.codex.fakemodel import FakeResponses, Text, request_texts  # noqa: E402
from markertools_adapters.opener import connect  # noqa: E402
from markertools_adapters.worker import HostEvent, WorkerHost  # noqa: E402

logging.getLogger("psycopg").setLevel(logging.CRITICAL)  # the outage is on purpose

PROJECT, USER = "p1", "alice"
TURN = (
    "Two things.\n\n```task-create\n{\"prompt\": \"child\", \"name\": \"kid\"}\n```\n\n"
    "```todo-create\n{\"title\": \"notes\"}\n```\n"
)


def seed(store: Any) -> None:
    store.put_project(Project(PROJECT, "bench"))
    store.set_permissions(USER, PROJECT, ["read", "create_task"])
    store.put_quota(Quota(USER, total_usd=1e9))


# ---- 1. fencing cost -------------------------------------------------------------------


def fencing(db: str, rounds: int, **kw: Any) -> tuple[float, float]:
    """Median seconds of deliver_turn + finish_turn, (unfenced, fenced)."""
    times: dict[bool, list[float]] = {False: [], True: []}
    with connect(db, executor="noop", **kw) as store:
        seed(store)
        for n in range(rounds):
            for fenced in (n % 2 == 0, n % 2 == 1):  # alternate which goes first
                tid = f"t-{n}-{int(fenced)}"
                store.insert_task(
                    Task(tid, PROJECT, status="queued", created_by=USER, created_at=1.0 + n)
                )
                claim = store.claim_task(PROJECT, "h1", now=time.time(), lease_seconds=60)
                assert claim is not None and claim.task.id == tid
                extra = {"claim": claim} if fenced else {}
                t0 = time.perf_counter()
                deliver_turn(
                    TURN,
                    sender=tid,
                    outcome="completed",
                    ports=store.ports,
                    turn_id="turn-1",
                    **extra,
                )
                store.finish_turn(
                    tid, "turn-1", outcome="completed", cost=TurnCost("0.01", 10), **extra
                )
                times[fenced].append(time.perf_counter() - t0)
    return statistics.median(times[False]), statistics.median(times[True])


# ---- 2. recovery after an outage ----------------------------------------------------------


def _pg_script() -> Any:
    spec = importlib.util.spec_from_file_location("pg_test_server", ROOT / "scripts" / "pg_test_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def outage_recovery(b: Bench, rounds: int) -> tuple[list[float], list[float]]:
    """(insert -> claim with no outage, insert right after a 3 s outage -> claim)."""
    script = _pg_script()
    dsn, base = script.start()
    plain: list[float] = []
    after: list[float] = []
    try:
        with connect(dsn, executor="noop") as store:
            seed(store)
        claimed: dict[str, float] = {}
        got = threading.Condition()

        def sink(e: HostEvent) -> None:
            if e.kind == "claimed":
                with got:
                    claimed[e.task_id] = time.perf_counter()
                    got.notify_all()

        def insert(tid: str) -> float:
            with connect(dsn, executor="noop") as other:  # the time the insert committed,
                other.insert_task(Task(tid, PROJECT, status="queued", prompt="done", created_by=USER))
                return time.perf_counter()  # not after the close (the claim may come first)

        def wait_claim(tid: str) -> float:
            with got:
                got.wait_for(lambda: tid in claimed, 60)
            return claimed.get(tid, float("nan"))

        with connect(dsn, executor="noop") as store:
            host = WorkerHost(
                b.settings("h1", until_idle=False, poll_seconds=0.5, store_outage_seconds=120),
                store,
                sinks=[sink],
            )

            def driver() -> None:
                for n in range(rounds):
                    t0 = insert(f"plain-{n}")
                    plain.append(wait_claim(f"plain-{n}") - t0)
                    script.halt(base)
                    time.sleep(3)
                    script.resume(base)
                    t0 = insert(f"after-{n}")
                    after.append(wait_claim(f"after-{n}") - t0)
                host.stop()

            thread = threading.Thread(target=driver)
            thread.start()
            asyncio.run(host.run())
            thread.join(120)
    finally:
        script.stop(base)
    return plain, after


# ---- 3. fairness -----------------------------------------------------------------------------


def fairness(b: Bench, n: int) -> tuple[list[float], list[float]]:
    """(child created -> claimed with N waiting roots on N slots, with no roots)."""
    out: list[list[float]] = []
    for with_roots in (True, False):
        b.fresh("sqlite")
        claimed: dict[str, float] = {}

        def sink(e: HostEvent, claimed: dict[str, float] = claimed) -> None:
            if e.kind == "claimed":
                claimed[e.task_id] = time.time()

        with b.store("sqlite") as store:
            now = time.time()
            for k in range(n):
                if with_roots:
                    store.insert_task(Task(f"root-{k}", PROJECT, status="queued",
                                           prompt="[root] split", created_by=USER, created_at=now))
                else:
                    store.insert_task(Task(f"kid-{k}", PROJECT, status="queued",
                                           prompt="[kid] part", created_by=USER, created_at=now))
            host = WorkerHost(b.settings("h1", max_concurrent=n, poll_seconds=0.05,
                                         park_seconds=None), store, sinks=[sink])
            asyncio.run(host.run())
            kids = [t for t in store.list_tasks(PROJECT, status=None, q=None, limit=100).rows
                    if t.prompt.startswith("[kid]")]
            out.append([claimed[t.id] - t.created_at for t in kids if t.id in claimed])
    return out[0], out[1]


def route(body: Any) -> Any:
    texts = request_texts(body)
    last = texts[-1] if texts else ""
    if any("[root]" in t for t in texts) and "[root]" in last:
        return Text(
            "```task-create\n{\"prompt\": \"[kid] part\", \"name\": \"k\"}\n```\n"
            "```wait-threads\n" + json.dumps({"task_ids": ["@k"], "timeout_seconds": 120})
            + "\n```\n"
        )
    if any("[kid]" in t for t in texts):
        return Text("kid done", delay=0.3)
    return Text("done")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    rounds = 30 if args.quick else 200
    with tempfile.TemporaryDirectory() as tmp:
        unfenced, fenced = fencing(f"sqlite:///{tmp}/fence.db", rounds)
        print(f"fencing (deliver_turn + finish_turn of one turn, {rounds} each, medians):")
        print(f"  sqlite    unfenced {unfenced * 1000:6.2f} ms  fenced {fenced * 1000:6.2f} ms  "
              f"ratio {fenced / unfenced:.3f}x (goal <= 1.05x: "
              f"{'met' if fenced / unfenced <= 1.05 else 'MISSED'})")
        if os.environ.get("MARKERTOOLS_PG_DSN"):
            schema = f"mt_fence_{os.getpid()}"
            unfenced, fenced = fencing(os.environ["MARKERTOOLS_PG_DSN"], rounds, schema=schema)
            import psycopg

            with psycopg.connect(os.environ["MARKERTOOLS_PG_DSN"], autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            print(f"  postgres  unfenced {unfenced * 1000:6.2f} ms  fenced {fenced * 1000:6.2f} ms  "
                  f"ratio {fenced / unfenced:.3f}x (goal <= 1.05x: "
                  f"{'met' if fenced / unfenced <= 1.05 else 'MISSED'})")
        else:
            print("  postgres: not measured (MARKERTOOLS_PG_DSN unset)")
        with FakeResponses(default_reply=None) as fake:
            fake.reply_for = route
            b = Bench(Path(tmp), codex_bin(), fake)
            plain, after = outage_recovery(b, 2 if args.quick else 5)
            print(f"recovery after a 3 s PostgreSQL outage, {len(after)} rounds (insert -> claim):")
            print(f"  no outage   median {statistics.median(plain):.2f} s, max {max(plain):.2f} s")
            print(f"  after one   median {statistics.median(after):.2f} s, max {max(after):.2f} s "
                  f"(goal <= 2 s + the 5 s backoff cap = 7 s: "
                  f"{'met' if max(after) <= 7.0 else 'MISSED'})")
            for n in (2, 4):
                roots, none = fairness(b, n)
                met = statistics.median(roots) <= statistics.median(none) + 0.05
                print(f"fairness, {n} roots waiting on {n} slots: child created -> claimed median "
                      f"{statistics.median(roots) * 1000:.0f} ms, max {max(roots) * 1000:.0f} ms;"
                      f" no waiting roots: median {statistics.median(none) * 1000:.0f} ms, max "
                      f"{max(none) * 1000:.0f} ms (goal: median within one poll interval, 50 ms,"
                      f" of the baseline's: {'met' if met else 'MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
