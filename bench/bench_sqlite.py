"""SQLite adapter benchmarks (not a test: it prints ratios measured in one run).

1. scale      delivery of a typical turn (5 task-create, 5 task-cancel, 5 task-poll,
              2 wait-threads of 8 targets) on a database of 1k tasks vs 100k tasks;
              the time ratio (goal <= 1.5: every lookup is indexed).
2. statements SQL statements per typical turn, counted with set_trace_callback, per
              block; the same number at both sizes (bounded by a constant per block).
3. processes  turns delivered per second by 1, 2 and 4 processes on one file.
4. txmodes    why BEGIN IMMEDIATE: P processes toggle the same rows with a read-then-
              write in (a) autocommit statements, (b) a deferred transaction (the
              sqlite-utils / Python default), (c) BEGIN IMMEDIATE + UPDATE ... WHERE
              status = ? + rowcount; counts duplicated transitions and "database is
              locked" errors.

Usage: .venv/bin/python bench/bench_sqlite.py [--quick] [--only scale,statements,processes,txmodes]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _common import bench_world, fixture_tasks, typical_plan

from markertools import deliver_turn
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.sqlite import create_store_from_world, open_store
from markertools_adapters.wiring import store_ports

# ---- fixtures (bench/_common.py: the same turn and world as bench_postgres.py) ---------------


def build_db(path: Path, filler: int, senders: Sequence[str]) -> None:
    create_store_from_world(bench_world(filler, senders), path).close()


def deliver_turns(
    path: Path, senders: Sequence[str], count_statements: bool = False
) -> tuple[list[float], list[int]]:
    store = open_store(path)
    clock = VirtualClock(1_800_000_100.0)
    ports = store_ports(
        store,
        clock=clock,
        random=SeededRandom(f"{path}|{senders[0] if senders else 0}"),
        executor=NoopExecutor(),
    )
    times: list[float] = []
    counts: list[int] = []
    for sender in senders:
        plan = typical_plan(sender)
        statements: list[str] = []
        start = time.perf_counter()
        if count_statements:
            with store.traced(statements.append):
                report = deliver_turn(plan, sender=sender, outcome="completed", ports=ports)
        else:
            report = deliver_turn(plan, sender=sender, outcome="completed", ports=ports)
        times.append(time.perf_counter() - start)
        counts.append(len(statements))
        bad = [e for e in report.entries if e.outcome != "done"]
        if bad:
            raise SystemExit(
                f"benchmark turn not fully done: {bad[0].kind}: {bad[0].reason.render('en')}"
            )
    store.close()
    return times, counts


# ---- 1 + 2: scale and statements -------------------------------------------------------------


def bench_scale(tmp: Path, quick: bool) -> None:
    turns = 20 if quick else 60
    small, large = 1_000, (20_000 if quick else 100_000)
    results: dict[int, float] = {}
    statements: dict[int, list[int]] = {}
    for size in (small, large):
        senders = [f"s{size}-{k:03d}" for k in range(turns)]
        path = tmp / f"scale-{size}.db"
        t0 = time.perf_counter()
        build_db(path, size, senders)
        built = time.perf_counter() - t0
        deliver_turns(path, senders[:3])  # warm the page cache
        times, _ = deliver_turns(path, senders[3:])
        results[size] = statistics.median(times)
        # statements: a separate pass with tracing on (tracing itself costs time)
        extra = [f"t{size}-{k}" for k in range(3)]
        store = open_store(path)
        now = 1_800_000_000.0
        for sender in extra:
            for task in fixture_tasks(sender, now):
                store.insert_task(task)
        store.close()
        _, counts = deliver_turns(path, extra, count_statements=True)
        statements[size] = counts
        print(
            f"  {size:>7} tasks: median turn {results[size] * 1000:7.2f} ms "
            f"(built in {built:.1f} s, {len(times)} turns)"
        )
    ratio = results[large] / results[small]
    print(f"  ratio {large // 1000}k / {small // 1000}k = {ratio:.2f}  (goal <= 1.5)")
    blocks = 5 + 5 + 5 + 2
    for size, counts in statements.items():
        print(
            f"  statements per typical turn at {size:>7} tasks: {counts} "
            f"= {counts[0] / blocks:.1f} per block ({blocks} blocks)"
        )


def bench_statements_per_kind(tmp: Path) -> None:
    """Marginal SQL statements of one more block, per kind (marker texts, parse included)."""
    from markertools_adapters.sqlite import SqliteStore

    def count(store: SqliteStore, text: str, sender: str) -> int:
        ports = store_ports(
            store,
            clock=VirtualClock(1_800_000_100.0),
            random=SeededRandom(text),
            executor=NoopExecutor(),
        )
        statements: list[str] = []
        with store.traced(statements.append):
            deliver_turn(text, sender=sender, outcome="completed", ports=ports)
        return len(statements)

    def blocks(kind: str, bodies: list[str]) -> str:
        return "".join(f"```{kind}\n{body}\n```\n\n" for body in bodies)

    senders = [f"k{i}" for i in range(12)]
    path = tmp / "kinds.db"
    build_db(path, 1_000, senders)
    store = open_store(path)
    rows = []
    for n, (kind, body) in enumerate(
        [
            ("task-create", '{{"prompt": "p{i}"}}'),
            ("task-cancel", '{{"task_id": "{s}-c{i}"}}'),
            ("task-poll", '{{"task_id": "{s}-f{i}"}}'),
            ("task-list", '{{"limit": {i}}}'),
            ("todo-create", '{{"title": "t{i}"}}'),
        ]
    ):
        one_s, five_s = senders[2 * n], senders[2 * n + 1]
        one = count(store, blocks(kind, [body.format(i=0, s=one_s)]), one_s)
        five = count(store, blocks(kind, [body.format(i=i, s=five_s) for i in range(5)]), five_s)
        rows.append((kind, one, five, (five - one) / 4))
    s1, s8 = senders[10], senders[11]
    wait1 = count(store, blocks("wait-threads", [f'{{"task_ids": ["{s1}-f0"]}}']), s1)
    ids = ", ".join(f'"{s8}-f{i}"' for i in range(8))
    wait8 = count(store, blocks("wait-threads", [f'{{"task_ids": [{ids}]}}']), s8)
    store.close()
    print("  statements per turn: 1 block / 5 blocks -> per extra block")
    for kind, one, five, extra in rows:
        print(f"    {kind:<12} {one:>3} / {five:>3} -> {extra:.1f}")
    print(f"    wait-threads with 1 target: {wait1}, with 8 targets: {wait8} (one read per round)")


# ---- 3: processes ---------------------------------------------------------------------------


def _process_worker(path: str, senders: list[str], start_at: float) -> tuple[int, float]:
    while time.time() < start_at:
        time.sleep(0.001)
    t0 = time.perf_counter()
    deliver_turns(Path(path), senders)
    return len(senders), time.perf_counter() - t0


def bench_processes(tmp: Path, quick: bool) -> None:
    per_process = 30 if quick else 80
    ctx = multiprocessing.get_context("spawn")
    rates: dict[int, float] = {}
    for procs in (1, 2, 4):
        senders = [[f"p{procs}-{w}-{k:03d}" for k in range(per_process)] for w in range(procs)]
        path = tmp / f"procs-{procs}.db"
        build_db(path, 1_000, [s for group in senders for s in group])
        start_at = time.time() + 1.5  # every process imported and waiting
        with ctx.Pool(procs) as pool:
            t0 = time.time()
            results = pool.starmap(
                _process_worker, [(str(path), group, start_at) for group in senders]
            )
            wall = time.time() - max(t0, start_at)
        turns = sum(n for n, _ in results)
        rates[procs] = turns / wall
        print(f"  {procs} process(es): {turns} turns in {wall:.2f} s = {rates[procs]:.0f} turns/s")
    print(
        f"  throughput ratio 2/1 = {rates[2] / rates[1]:.2f}, 4/1 = {rates[4] / rates[1]:.2f} "
        f"(one writer at a time; {os.cpu_count()} CPU cores)"
    )


# ---- 4: transaction modes -------------------------------------------------------------------

ROWS = 4


_BEGIN = {"autocommit": None, "deferred": "BEGIN", "immediate": "BEGIN IMMEDIATE"}


def _toggle(conn: sqlite3.Connection, row: int, mode: str) -> tuple[int, int] | None:
    """One read-then-write toggle of `row` in `mode`: the (row, version) it acted on, or
    None when its compare-and-set (immediate mode only) found the row changed."""
    begin = _BEGIN[mode]
    if begin is not None:
        conn.execute(begin)
    try:
        status, version = conn.execute(
            "SELECT status, version FROM t WHERE id = ?", (row,)
        ).fetchone()
        new = "interrupted" if status == "running" else "running"
        if mode == "immediate":
            cur = conn.execute(
                "UPDATE t SET status = ?, version = version + 1 WHERE id = ? AND status = ?",
                (new, row, status),
            )
            won = cur.rowcount == 1
        else:
            conn.execute("UPDATE t SET status = ?, version = version + 1 WHERE id = ?", (new, row))
            won = True
        if begin is not None:
            conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return (row, version) if won else None


def _tx_worker(path: str, mode: str, ops: int, seed: int, start_at: float) -> dict[str, int]:
    import random

    rng = random.Random(seed)
    conn = sqlite3.connect(path, timeout=5.0, isolation_level=None)
    out = {"transitions": 0, "locked": 0, "duplicates": 0}
    claimed: list[tuple[int, int]] = []
    while time.time() < start_at:
        time.sleep(0.001)
    for _ in range(ops):
        try:
            acted = _toggle(conn, rng.randrange(ROWS), mode)
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                out["locked"] += 1
                continue
            raise
        if acted is not None:
            claimed.append(acted)
    out["transitions"] = len(claimed)
    conn.close()
    out["claimed"] = claimed  # type: ignore[assignment]
    return out


def bench_txmodes(tmp: Path, quick: bool) -> None:
    procs, ops = 4, (300 if quick else 1500)
    ctx = multiprocessing.get_context("spawn")
    for mode in ("autocommit", "deferred", "immediate"):
        path = tmp / f"tx-{mode}.db"
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, status TEXT, version INTEGER)")
        conn.executemany("INSERT INTO t VALUES (?, 'running', 0)", [(i,) for i in range(ROWS)])
        conn.close()
        start_at = time.time() + 1.5
        with ctx.Pool(procs) as pool:
            results = pool.starmap(
                _tx_worker, [(str(path), mode, ops, s, start_at) for s in range(procs)]
            )
        claimed = [c for r in results for c in r["claimed"]]  # type: ignore[union-attr]
        duplicates = len(claimed) - len(set(claimed))  # two writers acted on the same read
        locked = sum(r["locked"] for r in results)
        conn = sqlite3.connect(path)
        final_versions = sum(v for (v,) in conn.execute("SELECT version FROM t"))
        conn.close()
        print(
            f"  {mode:>10}: {procs}x{ops} read-then-write ops -> {len(claimed)} transitions, "
            f"{duplicates} duplicated (acted on a stale read), {locked} 'database is locked', "
            f"version sum {final_versions}"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    parser.add_argument("--only", default="scale,processes,txmodes")
    args = parser.parse_args(argv)
    wanted = set(args.only.split(","))
    with tempfile.TemporaryDirectory(prefix="mt-bench-") as tmp_dir:
        tmp = Path(tmp_dir)
        if wanted & {"scale", "statements"}:
            print("scale + statements (typical turn: 5 create, 5 cancel, 5 poll, 2 wait x 8):")
            bench_scale(tmp, args.quick)
            bench_statements_per_kind(tmp)
        if "processes" in wanted:
            print("processes on one file:")
            bench_processes(tmp, args.quick)
        if "txmodes" in wanted:
            print("transaction modes under contention:")
            bench_txmodes(tmp, args.quick)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
