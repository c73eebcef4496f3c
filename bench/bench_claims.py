"""claim_next_task throughput: N worker processes (each its own store) claim queued tasks
from one queue until it is empty; prints claims per second per process count, on
PostgreSQL (FOR UPDATE SKIP LOCKED) and on SQLite (BEGIN IMMEDIATE), and checks that no
task was claimed twice.

The server: MARKERTOOLS_PG_DSN, or (when unset) a throwaway cluster started with
scripts/pg_test_server.py for the run. Every run uses fresh schemas and drops them.

Usage: .venv/bin/python bench/bench_claims.py [--quick] [--tasks N] [--backends postgres,sqlite]
"""

from __future__ import annotations

import argparse
import multiprocessing
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_postgres import drop_schema, server  # the same throwaway server handling

from markertools.domain.model import Task
from markertools_adapters.world import World


def _world(n: int) -> World:
    return World(
        now=1.0,
        tasks=tuple(
            Task(f"t{i:06}", "p1", status="queued", created_by="u1", created_at=float(i))
            for i in range(n)
        ),
    )


def _open(backend: str, where: str) -> Any:
    if backend == "postgres":
        from markertools_adapters.postgres import open_store

        dsn, schema = where.split("#", 1)
        return open_store(dsn, 1, schema=schema)
    from markertools_adapters.sqlite import open_store as open_sqlite

    return open_sqlite(where)


def _worker(backend: str, where: str, host: int, barrier: Any, results: Any) -> None:
    store = _open(backend, where)
    got: list[str] = []
    try:
        barrier.wait()
        while (task := store.claim_next_task("p1", f"h{host}")) is not None:
            got.append(task.id)
    finally:
        store.close()
        results.put(got)


def run(backend: str, where: str, procs: int, n: int) -> float:
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(procs + 1), ctx.Queue()
    workers = [
        ctx.Process(target=_worker, args=(backend, where, h, barrier, results))
        for h in range(procs)
    ]
    for w in workers:
        w.start()
    barrier.wait()
    started = time.perf_counter()
    claimed = [tid for _ in workers for tid in results.get(timeout=600)]
    elapsed = time.perf_counter() - started
    for w in workers:
        w.join()
    if len(claimed) != n or len(set(claimed)) != n:
        raise SystemExit(
            f"{backend}: {len(claimed)} claims of {n} tasks ({len(set(claimed))} distinct)"
        )
    return n / elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tasks", type=int, default=None)
    parser.add_argument("--backends", default="postgres,sqlite")
    args = parser.parse_args(argv)
    n = args.tasks or (500 if args.quick else 2000)
    counts = (1, 4) if args.quick else (1, 2, 4, 8)
    backends = args.backends.split(",")
    print(f"claim_next_task: {n} queued tasks, claimed until empty (claims/s, 0 double claims)")
    with tempfile.TemporaryDirectory() as tmp, server() as dsn:
        for backend in backends:
            for procs in counts:
                if backend == "postgres":
                    from markertools_adapters.postgres import create_store_from_world

                    schema = "bench_claims_" + secrets.token_hex(4)
                    create_store_from_world(_world(n), dsn, schema=schema).close()
                    where = f"{dsn}#{schema}"
                else:
                    from markertools_adapters.sqlite import create_store_from_world as make

                    where = str(Path(tmp) / f"claims-{procs}.db")
                    make(_world(n), where).close()
                try:
                    rate = run(backend, where, procs, n)
                finally:
                    if backend == "postgres":
                        drop_schema(dsn, schema)
                print(f"  {backend:8} {procs} process(es): {rate:8.0f} claims/s")


if __name__ == "__main__":
    main()
