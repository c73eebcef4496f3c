"""Same-turn tools (`markertools tools serve`, TOL) in one run:

1. call        a `task_list` call through `tools serve` over stdio (a server process, the
               SDK's stdio client) against a no-op tool on the same server (goal: <= 2x)
               and against the block path: `deliver_turn` of one task-list block in
               process on the same SQLite database;
2. wakeup      how long a waiting `task_poll` call (interval 60 s) takes to return after
               its target finished: PostgreSQL (LISTEN/NOTIFY; goal: <= 20 ms) and SQLite
               (a status read per 50 ms slice).

Prints medians and ratios; no thresholds.

    .venv/bin/python bench/bench_tools.py [--quick] [--only call,wakeup]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench_postgres import drop_schema, server
from mcp import Client, StdioServerParameters

from markertools import Task, deliver_turn, mint_task_token
from markertools.domain.model import PermissionGrant, Project
from markertools_adapters import connect
from markertools_adapters.world import World

HERE = Path(__file__).resolve()


def world(tasks: int = 200) -> World:
    now = time.time()
    rows = [Task("s", "p", status="running", created_by="u", turn=1, created_at=now)]
    rows += [
        Task(f"c{i}", "p", status="completed", created_by="u", parent_task_id="s", created_at=now)
        for i in range(tasks)
    ]
    return World(
        now=now,
        projects=(Project("p", "shop"),),
        permissions=(PermissionGrant("u", "p", ("read", "create_task")),),
        tasks=tuple(rows),
    )


def mint(store: Any, task_id: str) -> str:
    ports = store.ports
    made = mint_task_token(store, task_id, now=ports.clock.now(), token_hex=ports.random.token_hex)
    return made.token


def next_turn(db: Path) -> None:
    """A new turn of the sender (what a worker's claim does), so caps never bind."""
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE tasks SET turn = turn + 1 WHERE id = 's'")


# ---- the server process (`--serve DB`): tools serve plus one no-op tool ----------------------


def serve(db: str) -> None:
    from markertools_adapters.cli.cmd_tools import _serve_stdio
    from markertools_adapters.tools import ToolsMcp, env_token

    store = connect(db, executor="noop", must_exist=True)
    tools = ToolsMcp(store, store.ports, token_of=env_token)

    def noop() -> str:
        return "ok"

    tools.server.add_tool(noop, name="noop", description="does nothing")
    try:
        asyncio.run(_serve_stdio(tools))
    finally:
        store.close()


# ---- 1: a call over stdio ---------------------------------------------------------------------


async def _calls(db: Path, token: str, rounds: int) -> dict[str, list[float]]:
    env = {**os.environ, "MARKERTOOLS_TASK_TOKEN": token}
    params = StdioServerParameters(
        command=sys.executable, args=[str(HERE), "--serve", str(db)], env=env
    )
    times: dict[str, list[float]] = {"task_list": [], "noop": []}
    async with Client(params, read_timeout_seconds=60) as c:
        for _ in range(5):  # warm-up
            await c.call_tool("noop", {})
            await asyncio.to_thread(next_turn, db)
            await c.call_tool("task_list", {})
        for _ in range(rounds):
            start = time.perf_counter()
            await c.call_tool("noop", {})
            times["noop"].append(time.perf_counter() - start)
            await asyncio.to_thread(next_turn, db)
            start = time.perf_counter()
            result = await c.call_tool("task_list", {})
            times["task_list"].append(time.perf_counter() - start)
            if result.is_error or "task-list: done" not in result.content[0].text:  # type: ignore[union-attr]
                raise SystemExit(f"task_list failed: {result.content}")
    return times


def _blocks(db: Path, rounds: int) -> list[float]:
    times = []
    with connect(db, executor="noop") as store:
        for _ in range(rounds + 5):
            next_turn(db)
            start = time.perf_counter()
            report = deliver_turn(
                "```task-list\n{}\n```", sender="s", outcome="completed", ports=store.ports
            )
            times.append(time.perf_counter() - start)
            if report.entries[0].outcome != "done":
                raise SystemExit("task-list block not done")
    return times[5:]


def bench_call(tmp: Path, quick: bool) -> None:
    rounds = 30 if quick else 200
    db = tmp / "call.db"
    with connect(db, executor="noop") as store:
        store.load_world(world())
        token = mint(store, "s")
    calls = asyncio.run(_calls(db, token, rounds))
    blocks = _blocks(db, rounds)
    med = {k: statistics.median(v) for k, v in calls.items()}
    block = statistics.median(blocks)
    print(f"  task_list over stdio : median {med['task_list'] * 1000:7.2f} ms ({rounds} calls)")
    print(f"  no-op tool over stdio: median {med['noop'] * 1000:7.2f} ms")
    print(f"  task-list block (deliver_turn, in process): median {block * 1000:7.2f} ms")
    print(f"  task_list / no-op tool = {med['task_list'] / med['noop']:.2f}x (goal <= 2x)")
    print(f"  task_list call / block = {med['task_list'] / block:.2f}x")


# ---- 2: wake-up ---------------------------------------------------------------------------


async def _one_wake(tools: Any, store: Any, target: str, rng: random.Random) -> float:
    finished_at: list[float] = []

    def finish() -> None:
        if not tools.wait_busy(30):
            raise SystemExit("the poll never started")
        time.sleep(rng.uniform(0.2, 0.6))  # a random moment of the wait
        finished_at.append(time.perf_counter())
        store.transition_task(target, "running", {"status": "completed", "result_text": "ok"})

    async with Client(tools.server, read_timeout_seconds=120) as c:
        worker = threading.Thread(target=finish)
        worker.start()
        result = await c.call_tool(
            "task_poll", {"task_id": target, "interval_seconds": 60, "timeout_seconds": 120}
        )
        ended = time.perf_counter()
        await asyncio.to_thread(worker.join)
    snap = (result.structured_content or {}).get("task") or {}
    if snap.get("status") != "completed":
        raise SystemExit(f"poll did not see the change: {result.content}")
    return ended - finished_at[0]


def _wakeups(store: Any, ports: Any, rounds: int) -> list[float]:
    """One sender per poll (a fresh turn each, so the per-turn cap never binds)."""
    from markertools_adapters.tools import ToolsMcp

    rng = random.Random(7)
    out = []
    for n in range(rounds):
        sender, target = f"s{n}", f"w{n}"
        store.insert_task(Task(sender, "p", status="running", created_by="u", turn=1))
        store.insert_task(
            Task(target, "p", status="running", created_by="u", parent_task_id=sender)
        )
        token = mint_task_token(
            store, sender, now=time.time(), token_hex=ports.random.token_hex
        ).token
        tools = ToolsMcp(store, ports, token_of=lambda ctx, t=token: t, max_wait_ms=100_000)
        out.append(asyncio.run(_one_wake(tools, store, target, rng)))
    return out


def _report(label: str, values: list[float], goal: str) -> None:
    med = statistics.median(values)
    print(
        f"  {label:>10}: median {med * 1000:7.1f} ms, max {max(values) * 1000:7.1f} ms "
        f"({len(values)} polls, interval 60 s){goal}"
    )


def bench_wakeup(tmp: Path, quick: bool) -> None:
    from markertools_adapters.clock import SystemClock, SystemRandom
    from markertools_adapters.executors import NoopExecutor
    from markertools_adapters.postgres import open_store
    from markertools_adapters.wiring import store_ports

    rounds = 4 if quick else 15
    with connect(tmp / "wake.db", executor="noop") as store:
        store.load_world(world(0))
        _report("SQLite", _wakeups(store, store.ports, rounds), "")
    with server() as dsn:
        schema = "mt_bench_" + os.urandom(4).hex()
        store = open_store(dsn, 4, schema=schema)
        try:
            store.load_world(world(0))
            waiter = store.change_waiter()
            ports = store_ports(
                store,
                clock=SystemClock(),
                random=SystemRandom(),
                executor=NoopExecutor(),
                waiter=waiter,
            )
            _report("PostgreSQL", _wakeups(store, ports, rounds), " (goal <= 20 ms)")
        finally:
            store.close()
            drop_schema(dsn, schema)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve"]:
        serve(argv[1])
        return 0
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    parser.add_argument("--only", default="call,wakeup")
    args = parser.parse_args(argv)
    wanted = set(args.only.split(","))
    with tempfile.TemporaryDirectory(prefix="mt-bench-tools-") as tmp_dir:
        tmp = Path(tmp_dir)
        if "call" in wanted:
            print("a tool call through `tools serve` over stdio:")
            bench_call(tmp, args.quick)
        if "wakeup" in wanted:
            print("task_poll wake-up latency after the target finishes:")
            bench_wakeup(tmp, args.quick)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
