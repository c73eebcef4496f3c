"""Same-turn tools (`markertools tools serve`, TOL) in one run:

1. call        a `task_list` call through `tools serve` over stdio (a server process, the
               SDK's stdio client) against a no-op tool on the same server (goal: <= 2x)
               and against the block path: `deliver_turn` of one task-list block in
               process on the same SQLite database;
2. wakeup      how long a waiting `task_poll` call (interval 60 s) takes to return after
               its target finished: PostgreSQL (LISTEN/NOTIFY; goal: <= 20 ms) and SQLite
               (a status read per 25 ms slice);
3. fair        one shared `tools serve --http` (SQLite, TOL-11): another task's
               `task_list` call (a warm session, the SDK's client) with 1,000 waiting
               `task_poll` calls of 125 tokens pending (held by a second process) against
               the same calls with none, in the same run: p50 / p99 and their difference
               (goal: <= 100 ms at p99), and the server's threads and resident memory.

Prints medians, percentiles and ratios; no thresholds.

    .venv/bin/python bench/bench_tools.py [--quick] [--only call,wakeup,fair]
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


# ---- 3: fairness of a shared --http server -------------------------------------------------------

WAITING_TOKENS = 125
WAITING_PER_TOKEN = 8


def fair_world(n: int) -> World:
    now = time.time()
    rows = [Task("free", "p", status="running", created_by="u", turn=1, created_at=now)]
    for i in range(n):
        rows.append(Task(f"w{i}", "p", status="running", created_by="u", turn=1, created_at=now))
        rows.append(Task(f"c{i}", "p", status="running", created_by="u", parent_task_id=f"w{i}"))
    return World(
        now=now,
        projects=(Project("p", "shop"),),
        permissions=(PermissionGrant("u", "p", ("read", "create_task")),),
        tasks=tuple(rows),
    )


def _http_client(url: str, token: str) -> Any:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    hc = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return hc, Client(streamable_http_client(url, http_client=hc), mode="legacy")


async def _hold_waiters(url: str, tokens: list[str]) -> None:
    """The `--waiters` process: 8 waiting task_poll calls per token, "ready" on stdout once
    every one reported progress (it waits on the server), held until stdin closes."""
    progressed: set[tuple[int, int]] = set()
    ready = asyncio.Event()
    total = len(tokens) * WAITING_PER_TOKEN

    async def holder(i: int) -> None:
        hc, client = _http_client(url, tokens[i])
        async with hc, client as c:

            async def one(n: int) -> None:
                async def progress(value: float, total_: float | None, message: str | None) -> None:
                    progressed.add((i, n))
                    if len(progressed) == total:
                        ready.set()

                args = {"task_id": f"c{i}", "interval_seconds": 60, "timeout_seconds": 3600}
                await c.call_tool("task_poll", args, progress_callback=progress)

            calls = [asyncio.ensure_future(one(n)) for n in range(WAITING_PER_TOKEN)]
            try:
                await asyncio.sleep(7200)
            finally:
                for call in calls:
                    call.cancel()
                await asyncio.gather(*calls, return_exceptions=True)

    holders = [asyncio.ensure_future(holder(i)) for i in range(len(tokens))]
    await asyncio.wait_for(ready.wait(), 600)
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.read)
    for h in holders:
        h.cancel()
    await asyncio.gather(*holders, return_exceptions=True)


def _proc(pid: int) -> tuple[int, float]:
    threads = len(os.listdir(f"/proc/{pid}/task"))
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return threads, int(line.split()[1]) / 1024.0
    return threads, 0.0


async def _latencies(url: str, token: str, db: Path, rounds: int) -> list[float]:
    out = []
    hc, client = _http_client(url, token)
    async with hc, client as c:
        for n in range(rounds + 5):
            await asyncio.to_thread(_next_free_turn, db)
            start = time.perf_counter()
            result = await c.call_tool("task_list", {"limit": 5})
            took = time.perf_counter() - start
            if result.is_error or (result.structured_content or {}).get("outcome") != "done":
                raise SystemExit(f"task_list failed: {result.content}")
            if n >= 5:
                out.append(took)
    return out


def _next_free_turn(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE tasks SET turn = turn + 1 WHERE id = 'free'")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def bench_fair(tmp: Path, quick: bool) -> None:
    import socket
    import subprocess

    rounds = 50 if quick else 300
    n = 25 if quick else WAITING_TOKENS
    db = tmp / "fair.db"
    with connect(db, executor="noop") as store:
        store.load_world(fair_world(n))
        free = mint(store, "free")
        tokens = [mint(store, f"w{i}") for i in range(n)]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = Path(sys.executable).with_name("markertools")
    server = subprocess.Popen(
        [str(exe), "tools", "serve", "--db", str(db), "--http", f"127.0.0.1:{port}",
         "--max-wait-ms", "3600000"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        idle = asyncio.run(_latencies(url, free, db, rounds))
        idle_proc = _proc(server.pid)
        tokens_file = tmp / "tokens.txt"
        tokens_file.write_text("\n".join(tokens))
        holder = subprocess.Popen(
            [sys.executable, str(HERE), "--waiters", url, str(tokens_file)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            assert holder.stdout is not None and holder.stdin is not None
            started = time.perf_counter()
            if holder.stdout.readline().strip() != b"ready":
                raise SystemExit("the waiting calls did not all start")
            ready_after = time.perf_counter() - started
            busy = asyncio.run(_latencies(url, free, db, rounds))
            busy_proc = _proc(server.pid)
        finally:
            if holder.stdin is not None:
                holder.stdin.close()
            holder.wait(120)
    finally:
        server.terminate()
        server.wait(30)
    waiting = n * WAITING_PER_TOKEN
    for label, values, (threads, rss) in (
        ("no waiting calls", idle, idle_proc),
        (f"{waiting} waiting calls", busy, busy_proc),
    ):
        print(
            f"  {label:>18}: task_list p50 {_percentile(values, 0.5) * 1000:6.1f} ms, "
            f"p99 {_percentile(values, 0.99) * 1000:6.1f} ms ({len(values)} calls); "
            f"server {threads} threads, {rss:.0f} MB resident"
        )
    d50 = (_percentile(busy, 0.5) - _percentile(idle, 0.5)) * 1000
    d99 = (_percentile(busy, 0.99) - _percentile(idle, 0.99)) * 1000
    print(f"  the {waiting} calls were all waiting {ready_after:.1f} s after they were sent")
    print(
        f"  delay by the waiting calls: p50 {d50:+.1f} ms, p99 {d99:+.1f} ms "
        f"(goal <= 100 ms at p99); p99 ratio {_percentile(busy, 0.99) / _percentile(idle, 0.99):.2f}x"
    )


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve"]:
        serve(argv[1])
        return 0
    if argv[:1] == ["--waiters"]:
        asyncio.run(_hold_waiters(argv[1], Path(argv[2]).read_text().split()))
        return 0
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    parser.add_argument("--only", default="call,wakeup,fair")
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
        if "fair" in wanted:
            print("another task's call on a shared `tools serve --http` (SQLite):")
            bench_fair(tmp, args.quick)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
