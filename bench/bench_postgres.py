"""PostgreSQL adapter benchmarks (not a test: it prints ratios measured in one run).

1. processes  turns delivered per second by 1, 2, 4 and 8 concurrent processes (each its
              own store: a connection pool on PostgreSQL, a connection on SQLite), the
              same typical turn as bench_sqlite.py (5 task-create, 5 task-cancel, 5
              task-poll, 2 wait-threads of 8 targets) on PostgreSQL and on SQLite, with
              the PostgreSQL / SQLite ratio per process count.
2. wakeup     how long a wait-threads block takes to notice that its target finished,
              with the LISTEN/NOTIFY change waiter and without it (clock-driven rounds of
              `interval_seconds`); the target finishes at a random moment of a round.

The server: MARKERTOOLS_PG_DSN, or (when unset) a throwaway cluster started with
scripts/pg_test_server.py for the run. Every run uses fresh schemas and drops them.

Usage: .venv/bin/python bench/bench_postgres.py [--quick] [--only processes,wakeup]
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import NOW, PROJECT, USER, bench_world, typical_plan  # the same typical turn

from markertools import deliver_turn
from markertools.domain.model import Task
from markertools.parse.params import WaitThreadsParams
from markertools.parse.plan import Command, TurnPlan
from markertools_adapters.clock import SeededRandom, SystemClock, SystemRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

ROOT = Path(__file__).resolve().parent.parent


# ---- the server ---------------------------------------------------------------------------


@contextlib.contextmanager
def server() -> Iterator[str]:
    dsn = os.environ.get("MARKERTOOLS_PG_DSN")
    if dsn:
        yield dsn
        return
    script = ROOT / "scripts" / "pg_test_server.py"
    out = subprocess.run(
        [sys.executable, str(script), "start"], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"cannot start a PostgreSQL server: {out.stderr.strip()}")
    env = dict(line.split("=", 1) for line in out.stdout.split())
    try:
        yield env["MARKERTOOLS_PG_DSN"].strip("'")
    finally:
        subprocess.run(
            [sys.executable, str(script), "stop", env["MARKERTOOLS_PG_DIR"].strip("'")], check=False
        )


def drop_schema(dsn: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


# ---- stores ---------------------------------------------------------------------------------


def create(backend: str, where: str, world: World) -> None:
    if backend == "postgres":
        from markertools_adapters.postgres import create_store_from_world

        dsn, schema = where.split("|", 1)
        create_store_from_world(world, dsn, schema=schema).close()
    else:
        from markertools_adapters.sqlite import create_store_from_world as create_sqlite

        create_sqlite(world, Path(where)).close()


def open_backend(backend: str, where: str) -> Any:
    if backend == "postgres":
        from markertools_adapters.postgres import open_store

        dsn, schema = where.split("|", 1)
        return open_store(dsn, 2, schema=schema)
    from markertools_adapters.sqlite import open_store as open_sqlite

    return open_sqlite(Path(where))


# ---- 1: processes ---------------------------------------------------------------------------


def _process_worker(
    backend: str, where: str, senders: list[str], start_at: float
) -> tuple[int, float]:
    store = open_backend(backend, where)
    ports = store_ports(
        store,
        clock=VirtualClock(NOW + 100),
        random=SeededRandom(senders[0]),
        executor=NoopExecutor(),
    )
    while time.time() < start_at:
        time.sleep(0.001)
    t0 = time.perf_counter()
    for sender in senders:
        report = deliver_turn(typical_plan(sender), sender=sender, outcome="completed", ports=ports)
        bad = [e for e in report.entries if e.outcome != "done"]
        if bad:
            raise SystemExit(f"turn not fully done: {bad[0].kind}: {bad[0].reason.render('en')}")
    elapsed = time.perf_counter() - t0
    store.close()
    return len(senders), elapsed


def bench_processes(dsn: str, tmp: Path, quick: bool) -> None:
    per_process = 10 if quick else 40
    counts = (1, 2, 4, 8)
    ctx = multiprocessing.get_context("spawn")
    rates: dict[tuple[str, int], float] = {}
    for procs in counts:
        for backend in ("sqlite", "postgres"):
            groups = [
                [f"{backend[0]}{procs}-{w}-{k:03d}" for k in range(per_process)]
                for w in range(procs)
            ]
            if backend == "postgres":
                schema = "mt_bench_" + secrets.token_hex(4)
                where = f"{dsn}|{schema}"
            else:
                where = str(tmp / f"procs-{procs}.db")
            create(backend, where, bench_world(1_000, [s for g in groups for s in g]))
            try:
                start_at = time.time() + 2.0  # every process imported and waiting
                with ctx.Pool(procs) as pool:
                    results = pool.starmap(
                        _process_worker, [(backend, where, g, start_at) for g in groups]
                    )
                turns = sum(n for n, _ in results)
                wall = max(t for _, t in results)
                rates[(backend, procs)] = turns / wall
            finally:
                if backend == "postgres":
                    drop_schema(dsn, where.split("|", 1)[1])
        sq, pg = rates[("sqlite", procs)], rates[("postgres", procs)]
        print(
            f"  {procs} process(es): SQLite {sq:6.1f} turns/s   PostgreSQL {pg:6.1f} turns/s"
            f"   PostgreSQL/SQLite = {pg / sq:.2f}"
        )
    for backend in ("sqlite", "postgres"):
        base = rates[(backend, 1)]
        scaling = ", ".join(f"{p}/1 = {rates[(backend, p)] / base:.2f}" for p in counts[1:])
        print(f"  {backend:>8} scaling: {scaling}")
    print(f"  ({os.cpu_count()} CPU cores; the server shares them with the workers)")


# ---- 2: wake-up latency -------------------------------------------------------------------


def _one_wait(store: Any, waiter: Any, interval: int, rng: random.Random, n: int) -> float:
    """Seconds from the target finishing to the wait-threads block returning."""
    sender, target = f"s{n}", f"w{n}"
    store.insert_task(Task(id=sender, project_id=PROJECT, status="running", created_by=USER))
    store.insert_task(Task(id=target, project_id=PROJECT, status="running", created_by=USER))
    ports = store_ports(
        store, clock=SystemClock(), random=SystemRandom(), executor=NoopExecutor(), waiter=waiter
    )
    params = WaitThreadsParams(task_ids=(target,), interval_seconds=interval, timeout_seconds=120)
    plan = TurnPlan(commands=(Command("wait-threads", 1, params),))
    finished_at: list[float] = []

    def finish() -> None:
        time.sleep(rng.uniform(0.2, 0.2 + interval))  # a random moment of a round
        finished_at.append(time.perf_counter())
        store.transition_task(target, "running", {"status": "completed", "result_text": "ok"})

    thread = threading.Thread(target=finish)
    thread.start()
    report = deliver_turn(plan, sender=sender, outcome="completed", ports=ports)
    ended = time.perf_counter()
    thread.join()
    if report.entries[0].outcome != "done":
        raise SystemExit(f"wait not done: {report.entries[0].reason.render('en')}")
    return ended - finished_at[0]


def bench_wakeup(dsn: str, quick: bool) -> None:
    from markertools_adapters.postgres import open_store

    interval, rounds = 2, (4 if quick else 10)
    schema = "mt_bench_" + secrets.token_hex(4)
    store = open_store(dsn, 2, schema=schema)
    try:
        store.grant_permissions(USER, PROJECT, ["read"])
        rng = random.Random(7)
        results: dict[str, list[float]] = {"notify": [], "clock": []}
        waiter = store.change_waiter()
        for n in range(rounds):
            results["notify"].append(_one_wait(store, waiter, interval, rng, 2 * n))
            results["clock"].append(_one_wait(store, None, interval, rng, 2 * n + 1))
        med = {k: statistics.median(v) for k, v in results.items()}
        for key, label in (("notify", "LISTEN/NOTIFY waiter"), ("clock", "clock rounds only")):
            values = results[key]
            print(
                f"  {label:>21}: median {med[key] * 1000:8.1f} ms, max {max(values) * 1000:8.1f} ms"
                f"  ({len(values)} waits, interval {interval} s)"
            )
        print(
            f"  clock / notify = {med['clock'] / med['notify']:.0f}x faster wake-up with notifications"
            f" (early wake-ups counted: {waiter.early_wakeups})"
        )
    finally:
        store.close()
        drop_schema(dsn, schema)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    parser.add_argument("--only", default="processes,wakeup")
    args = parser.parse_args(argv)
    wanted = set(args.only.split(","))
    with server() as dsn, tempfile.TemporaryDirectory(prefix="mt-bench-pg-") as tmp_dir:
        if "processes" in wanted:
            print("processes (typical turn: 5 create, 5 cancel, 5 poll, 2 wait x 8):")
            bench_processes(dsn, Path(tmp_dir), args.quick)
        if "wakeup" in wanted:
            print("wait-threads wake-up latency after the target finishes:")
            bench_wakeup(dsn, args.quick)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
