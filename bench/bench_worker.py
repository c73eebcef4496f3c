"""The worker host (issue 29, WRK-1..10) against the real pinned Codex binary offline
(the fake Responses server in this process):

1. Overhead per task / turn: one-turn tasks run one after another by a `WorkerHost`
   (claim -> task directory -> codex app-server -> thread/start -> turn -> delivery ->
   finish) against the same work driven with the bare `AppServerClient` (spawn,
   initialize, thread/start, turn/start, wait turn/completed, close), same binary, same
   fake model, same run; and the turn alone (turn_started..turn_ended events against
   turn/start..turn/completed on a kept client). Bare and host batches alternate over
   `--rounds` rounds; the overhead is the median of the rounds' own differences.
2. Throughput: N one-turn tasks queued at once, run by 1, 2, 3 hosts (one process, own
   store connections) on PostgreSQL and 1 host on SQLite: tasks/s, p50/p99 of
   queue-to-start (task created -> claimed).
3. Cancel -> process group gone (SQLite, PostgreSQL): a store transition from another
   connection while the turn hangs, until the task's codex process group no longer
   exists. Recovery: kill -9 of a
   `worker run` process mid-turn -> the task claimed by another host (lease 1 s).
4. Memory (measured first, in a fresh process): this process's RSS with 2 / 8 / 16 concurrent hanging turns beside the codex
   children's own RSS.

    MARKERTOOLS_PG_DSN=... .venv/bin/python bench/bench_worker.py [--tasks N] [--rounds R] [--quick]
        [--only memory,overhead,throughput,cancel,recovery]
    (scripts/with_postgres.sh sets the DSN; without it the PostgreSQL rows are skipped.
     MARKERTOOLS_CODEX_BIN: the codex binary; default scripts/install_codex.sh)
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

from markertools import Project, Quota, Task, TaskChange  # noqa: E402
from markertools_adapters._procgroups import group_alive  # noqa: E402
from markertools_adapters.codex.client import AppServerClient  # noqa: E402
from markertools_adapters.codex.fakemodel import (  # noqa: E402
    FakeResponses,
    Hang,
    Text,
    request_texts,
)
from markertools_adapters.codex.offline import codex_env, make_codex_home  # noqa: E402
from markertools_adapters.opener import connect  # noqa: E402
from markertools_adapters.worker import HostEvent, WorkerHost, WorkerSettings  # noqa: E402
from markertools_adapters.worker.dirs import LAYOUT  # noqa: E402
from markertools_adapters.worktrees import WorktreeFiles  # noqa: E402

PROJECT = "p1"
USER = "alice"


def codex_bin() -> str:
    path = os.environ.get("MARKERTOOLS_CODEX_BIN")
    if path:
        return path
    return subprocess.run(
        [str(ROOT / "scripts" / "install_codex.sh")], capture_output=True, text=True, check=True
    ).stdout.strip()


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def group_rss_kib(pgid: int) -> int:
    total = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    total += rss_kib(int(entry.name))
            except OSError:
                continue
    return total


def route(body: Any) -> Any:
    texts = request_texts(body)
    if any("[recover]" in t for t in texts):  # hangs until the platform restart's preamble
        return Text("done") if any("Resume notice" in t for t in texts) else Hang()
    return Hang() if any("[hang]" in t for t in texts) else Text("done")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Bench:
    def __init__(self, tmp: Path, binary: str, fake: FakeResponses) -> None:
        self.tmp = tmp
        self.binary = binary
        self.fake = fake
        home = tmp / "codex-home"
        make_codex_home(home, fake.base_url, models=["fake-model"])
        self.env = codex_env(home)
        self.n = 0

    @contextmanager
    def store(self, kind: str, host: str = "h1", schema: str | None = None) -> Iterator[Any]:
        root = self.tmp / "worktrees"
        root.mkdir(exist_ok=True)
        files = WorktreeFiles(root, host, layout=LAYOUT)
        if kind == "sqlite":
            store = connect(self.tmp / "w.db", executor="noop", files=files)
        else:
            store = connect(os.environ["MARKERTOOLS_PG_DSN"], executor="noop", files=files,
                            schema=schema)
        try:
            yield store
        finally:
            store.close()

    def fresh(self, kind: str) -> tuple[str, str | None]:
        """A new empty database (SQLite file / PostgreSQL schema) with p1, alice."""
        self.n += 1
        schema = None
        if kind == "sqlite":
            db = self.tmp / "w.db"
            for suffix in ("", "-wal", "-shm"):
                Path(str(db) + suffix).unlink(missing_ok=True)
        else:
            schema = f"mt_bench_{os.getpid()}_{self.n}"
        with self.store(kind, schema=schema) as store:
            store.put_project(Project(PROJECT, "bench"))
            store.set_permissions(USER, PROJECT, ["read", "create_task"])
            store.put_quota(Quota(USER, total_usd=1e9))
        return kind, schema

    def drop(self, schema: str | None) -> None:
        if schema is None:
            return
        import psycopg

        with psycopg.connect(os.environ["MARKERTOOLS_PG_DSN"], autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

    def settings(self, host: str, **kw: Any) -> WorkerSettings:
        kw.setdefault("until_idle", True)
        kw.setdefault("poll_seconds", 0.05)
        return WorkerSettings(project=PROJECT, host=host, codex_bin=self.binary,
                              codex_env=self.env, worktrees=self.tmp / "worktrees",
                              request_timeout=60.0, grace_seconds=1.0, **kw)


def add_tasks(store: Any, n: int, prompt: str = "work", prefix: str = "t") -> None:
    now = time.time()
    for k in range(n):
        store.insert_task(Task(f"{prefix}-{k:04d}", PROJECT, status="queued", prompt=prompt,
                               created_by=USER, created_at=now))


# ---- 1. overhead ----------------------------------------------------------------------


async def bare_tasks(b: Bench, n: int, tag: str = "") -> tuple[list[float], list[float]]:
    """(per task: spawn..close, per turn: turn/start..turn/completed)"""
    tasks, turns = [], []
    for k in range(n):
        cwd = b.tmp / "bare" / tag / str(k)
        cwd.mkdir(parents=True)
        t0 = time.perf_counter()
        client = AppServerClient(b.binary, env=b.env, cwd=str(cwd), queue_events=True)
        await client.start()
        await client.initialize({"name": "bench", "version": "0"})
        thread = (await client.thread_start(str(cwd), sandbox="workspace-write",
                                            approval_policy="never"))["thread"]["id"]
        t1 = time.perf_counter()
        BARE_START.append(t1 - t0)
        await client.turn_start(thread, "work")
        await client.wait_for(lambda m: m.get("method") == "turn/completed", 30)
        turns.append(time.perf_counter() - t1)
        t2 = time.perf_counter()
        await client.close()
        BARE_CLOSE.append(time.perf_counter() - t2)
        tasks.append(time.perf_counter() - t0)
    return tasks, turns


def host_tasks(b: Bench, n: int) -> tuple[list[float], list[float], float]:
    """(per task: claimed..finished, per turn: turn_started..turn_ended, wall / task)"""
    b.fresh("sqlite")
    marks: dict[tuple[str, str], float] = {}

    def sink(e: HostEvent) -> None:
        marks[(e.task_id, e.kind)] = time.perf_counter()

    with b.store("sqlite") as store:
        for k in range(n):  # one after another: created_at orders the claims
            store.insert_task(Task(f"t-{k:04d}", PROJECT, status="queued", prompt="work",
                                   created_by=USER, created_at=float(k)))
        host = WorkerHost(b.settings("h1", max_concurrent=1, **HOST_KW), store, sinks=[sink])
        t0 = time.perf_counter()
        asyncio.run(host.run())
        wall = time.perf_counter() - t0
        end = t0 + wall
    ids = [t for t, kind in marks if kind == "claimed"]
    ids.sort(key=lambda t: marks[(t, "claimed")])  # the order the host claimed them
    HOST_STEPS["host start (run()..first claimed)"].append(marks[(ids[0], "claimed")] - t0)
    HOST_STEPS["host end (last finished..run() returns)"].append(end - marks[(ids[-1], "finished")])
    tasks = [marks[(t, "finished")] - marks[(t, "claimed")] for t in ids]
    turns = [marks[(t, "turn_ended")] - marks[(t, "turn_started")] for t in ids]
    for t in ids:
        HOST_STEPS["start (claimed..turn_started)"].append(
            marks[(t, "turn_started")] - marks[(t, "claimed")])
    for t, after in itertools.pairwise(ids):  # the host's own steps (a profile)
        HOST_STEPS["deliver (turn_ended..delivered)"].append(
            marks[(t, "delivered")] - marks[(t, "turn_ended")])
        HOST_STEPS["finish (delivered..finished)"].append(
            marks[(t, "finished")] - marks[(t, "delivered")])
        HOST_STEPS["next claim (finished..claimed)"].append(
            marks[(after, "claimed")] - marks[(t, "finished")])
    return tasks, turns, wall / n


HOST_KW: dict[str, Any] = {}  # settings of the overhead host (a profile run may vary them)
BARE_START: list[float] = []  # spawn..thread started (the host's "start" step's match)
BARE_CLOSE: list[float] = []  # the bare client's close (the host closes its app-server
# between "finished" and its next claim, so that step is compared with this one)
HOST_STEPS: dict[str, list[float]] = {
    "host start (run()..first claimed)": [],
    "host end (last finished..run() returns)": [],
    "start (claimed..turn_started)": [],
    "deliver (turn_ended..delivered)": [],
    "finish (delivered..finished)": [],
    "next claim (finished..claimed)": [],
}


# ---- 2. throughput ----------------------------------------------------------------------


def throughput(b: Bench, kind: str, hosts: int, n: int, per_host: int) -> dict[str, float]:
    _, schema = b.fresh(kind)
    claimed: dict[str, float] = {}
    try:
        with b.store(kind, schema=schema) as store:
            add_tasks(store, n)
            created = {t.id: t.created_at for t in
                       store.list_tasks(PROJECT, status="queued", q=None, limit=n + 1).rows}

        def sink(e: HostEvent) -> None:
            if e.kind == "claimed":
                claimed[e.task_id] = e.at

        async def run_all(stores: list[Any]) -> None:
            runners = [WorkerHost(b.settings(f"h{i}", max_concurrent=per_host), s, sinks=[sink])
                       for i, s in enumerate(stores)]
            async with asyncio.TaskGroup() as tg:
                for r in runners:
                    tg.create_task(r.run())

        stores = [b.store(kind, f"h{i}", schema=schema) for i in range(hosts)]
        opened = [cm.__enter__() for cm in stores]
        try:
            t0 = time.time()
            asyncio.run(run_all(opened))
            wall = time.time() - t0
            done = opened[0].list_tasks(PROJECT, status=None, q=None, limit=1).counts
        finally:
            for cm in stores:
                cm.__exit__(None, None, None)
    finally:
        b.drop(schema)
    lat = [claimed[t] - created[t] for t in claimed]
    return {"tps": n / wall, "p50": pct(lat, 0.5), "p99": pct(lat, 0.99), "wall": wall,
            "completed": float(dict(done).get("completed", 0)), "claims": float(len(claimed))}


# ---- 3. cancel ----------------------------------------------------------------------------


def cancel_latency(b: Bench, kind: str, rounds: int) -> list[float]:
    _, schema = b.fresh(kind)
    out: list[float] = []
    try:
        with b.store(kind, schema=schema) as store, b.store(kind, "other", schema=schema) as other:
            add_tasks(store, rounds, prompt="[hang] wait", prefix="c")
            host = WorkerHost(b.settings("h1", max_concurrent=1), store)
            started: dict[str, int] = {}
            ready = threading.Event()

            def sink(e: HostEvent) -> None:
                if e.kind == "turn_started":
                    started[e.task_id] = int(e.details["pgid"])
                    ready.set()

            host.sinks.append(sink)

            def canceller() -> None:
                for _ in range(rounds):
                    if not ready.wait(60) or not b.fake.hanging.wait(60):
                        return
                    ready.clear()
                    (task_id, pgid), = list(started.items())[-1:]
                    other.transition_task(task_id, "running", TaskChange(
                        status="interrupted", interrupted_reason="bench cancel"))
                    t0 = time.perf_counter()
                    deadline = t0 + 30
                    while group_alive(pgid) and time.perf_counter() < deadline:
                        time.sleep(0.001)
                    out.append(time.perf_counter() - t0)

            thread = threading.Thread(target=canceller)
            thread.start()
            asyncio.run(host.run())
            thread.join(60)
    finally:
        b.drop(schema)
    return out


def recovery(b: Bench, kind: str, rounds: int, lease: float) -> list[float]:
    """kill -9 of a host (a `markertools worker run` process) mid-turn -> the task claimed
    again by another host (in this process, affinity 0 so it may take it at once)."""
    out: list[float] = []
    for _ in range(rounds):
        _, schema = b.fresh(kind)
        try:
            with b.store(kind, schema=schema) as store:
                add_tasks(store, 1, prompt="[recover] work", prefix="r")
                db = str(b.tmp / "w.db")
                if kind == "postgres":
                    db = f"{os.environ['MARKERTOOLS_PG_DSN']}?options=-csearch_path%3D{schema}"
                proc = subprocess.Popen(
                    [sys.executable, "-m", "markertools", "worker", "run", "--db", db,
                     "--project", PROJECT, "--host", "dead", "--codex-bin", b.binary,
                     "--worktrees", str(b.tmp / "worktrees"), "--json-log", "--no-tools",
                     "--lease-seconds", str(lease)],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=b.env)
                assert proc.stdout is not None
                for line in proc.stdout:
                    if '"turn_started"' in line:
                        break
                proc.kill()
                t0 = time.perf_counter()
                proc.wait(30)
                claimed: list[float] = []

                def sink(e: HostEvent, claimed: list[float] = claimed, t0: float = t0) -> None:
                    if e.kind == "claimed" and not claimed:
                        claimed.append(time.perf_counter() - t0)

                host = WorkerHost(b.settings("alive", lease_seconds=lease,
                                             affinity_seconds=0.0), store, sinks=[sink])
                asyncio.run(host.run())
                out.extend(claimed)
        finally:
            b.drop(schema)
    return out


# ---- 4. memory ----------------------------------------------------------------------------


def memory(b: Bench, n: int) -> dict[str, float]:
    b.fresh("sqlite")
    pgids: dict[str, int] = {}
    with b.store("sqlite") as store:
        add_tasks(store, n, prompt="[hang] wait", prefix=f"m{n}")
        host = WorkerHost(b.settings("h1", max_concurrent=n, until_idle=False), store)
        result: dict[str, float] = {}

        def sink(e: HostEvent) -> None:
            if e.kind == "turn_started":
                pgids[e.task_id] = int(e.details["pgid"])

        host.sinks.append(sink)

        async def go() -> None:
            task = asyncio.ensure_future(host.run())
            async with asyncio.timeout(120):
                while len(pgids) < n:
                    await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)
            children = [group_rss_kib(p) for p in pgids.values()]
            result.update(host=rss_kib(os.getpid()), children=sum(children),
                          each=statistics.median(children))
            host.stop()
            b.fake.release_hangs()
            await task

        asyncio.run(go())
        b.fake._release.clear()  # the next Hang holds again
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved overhead rounds")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="memory,overhead,throughput,cancel,recovery",
                        help="comma-separated parts (issue 40 reruns: --only overhead,cancel)")
    args = parser.parse_args(argv)
    parts = set(args.only.split(","))
    if args.quick:
        args.tasks, args.turns, args.rounds = 20, 5, 2
    pg = bool(os.environ.get("MARKERTOOLS_PG_DSN"))
    binary = codex_bin()
    with tempfile.TemporaryDirectory() as tmp, FakeResponses(default_reply=None) as fake:
        fake.reply_for = route
        b = Bench(Path(tmp), binary, fake)
        base_rss = rss_kib(os.getpid())
        if "memory" in parts:
            print(f"memory, measured first (this process RSS before anything: {base_rss / 1024:.1f} MiB):")
        for n in (2, 8, 16) if "memory" in parts else ():
            m = memory(b, n)
            print(f"  {n:2} concurrent turns: host RSS {m['host'] / 1024:6.1f} MiB; codex "
                  f"children {m['children'] / 1024:7.1f} MiB in all, {m['each'] / 1024:.1f} MiB "
                  f"each (host = {m['host'] / max(m['children'], 1):.2f}x the children)")
        if "overhead" in parts:
            overhead(b, args.turns, args.rounds)
        if "throughput" in parts:
            throughputs(b, args.tasks, pg)
        if "cancel" in parts:
            cancels(b, pg, 3 if args.quick else 10)
        if "recovery" in parts:
            recoveries(b, pg, 2 if args.quick else 5)
    return 0


def overhead(b: Bench, turns: int, rounds: int) -> None:
    """Bare and host batches interleaved (the order alternating per round), so a slow
    stretch of a shared machine lands on both; the overhead is each round's own
    difference, and the median of those is the figure (issue 40)."""
    rows = []
    bare_all: list[float] = []
    for r in range(rounds):
        def bare(tag: str = f"r{r}") -> tuple[list[float], list[float]]:
            return asyncio.run(bare_tasks(b, turns, tag))

        if r % 2 == 0:
            bare_task, bare_turn = bare()
            host_task, host_turn, host_wall = host_tasks(b, turns)
        else:
            host_task, host_turn, host_wall = host_tasks(b, turns)
            bare_task, bare_turn = bare()
        bare_all += bare_task
        bt, ht = statistics.median(bare_task), statistics.median(host_task)
        bu, hu = statistics.median(bare_turn), statistics.median(host_turn)
        rows.append((bt, ht, host_wall, bu, hu, (host_wall - bt) * 1000))
    bt, ht, host_wall, bu, hu, over = (statistics.median(col) for col in zip(*rows, strict=True))
    print(f"one-turn tasks, {turns} each, one at a time, {rounds} interleaved rounds, medians "
          "(same binary, same fake):")
    print(f"  bare client task (spawn..turn/completed..close)  {bt * 1000:8.1f} ms")
    print(f"  host task (claimed..finished event)              {ht * 1000:8.1f} ms   "
          f"ratio {ht / bt:.2f}x bare")
    print(f"  host wall per task (incl. claim, idle check)     {host_wall * 1000:8.1f} ms   "
          f"ratio {host_wall / bt:.2f}x bare")
    print(f"  bare turn (turn/start..turn/completed)           {bu * 1000:8.1f} ms")
    print(f"  host turn (turn_started..turn_ended event)       {hu * 1000:8.1f} ms   "
          f"ratio {hu / bu:.2f}x bare")
    spread = [x * 1000 for x in (pct(bare_all, 0.1), pct(bare_all, 0.9))]
    print(f"  bare task p10..p90 over all rounds               {spread[0]:6.1f}..{spread[1]:.1f} ms "
          "(Codex's own spawn and start: the noise a round's difference carries)")
    for name, values in HOST_STEPS.items():
        print(f"  host step {name:42} median {statistics.median(values) * 1000:6.2f} ms")
    print(f"  bare start (spawn..thread started)               median "
          f"{statistics.median(BARE_START) * 1000:6.2f} ms")
    print(f"  bare close (client.close())                      median "
          f"{statistics.median(BARE_CLOSE) * 1000:6.2f} ms")
    each = ", ".join(f"{row[5]:.1f}" for row in rows)
    print(f"  host overhead per one-turn task by round: {each} ms")
    print(f"  host overhead per one-turn task (median of rounds) {over:.1f} ms; goal <= 1.2x "
          f"and <= 10 ms: {'met' if host_wall / bt <= 1.2 and over <= 10 else 'MISSED'}")


def throughputs(b: Bench, tasks: int, pg: bool) -> None:
    per_host = 4
    print(f"throughput: {tasks} one-turn tasks queued at once, max_concurrent "
          f"{per_host} per host (one process, own store connections):")
    rows = [("sqlite", 1)] + ([("postgres", h) for h in (1, 2, 3)] if pg else [])
    first = None
    for kind, hosts in rows:
        r = throughput(b, kind, hosts, tasks, per_host)
        first = first or r["tps"]
        print(f"  {kind:8} {hosts} host(s): {r['tps']:6.2f} tasks/s ({r['tps'] / first:.2f}x "
              f"sqlite/1), queue-to-start p50 {r['p50']:6.2f} s p99 {r['p99']:6.2f} s, "
              f"{int(r['completed'])}/{tasks} completed, {int(r['claims'])} claims")
    if not pg:
        print("  postgres: not measured (MARKERTOOLS_PG_DSN unset)")


def cancels(b: Bench, pg: bool, rounds: int) -> None:
    for kind in ["sqlite"] + (["postgres"] if pg else []):
        lat = cancel_latency(b, kind, rounds)
        if lat:
            print(f"cancel -> process group gone, {kind}, {len(lat)} rounds: median "
                  f"{statistics.median(lat) * 1000:.0f} ms, max {max(lat) * 1000:.0f} ms")
        else:
            print(f"cancel -> process group gone, {kind}: no round completed")


def recoveries(b: Bench, pg: bool, rounds: int) -> None:
    lease = 1.0
    for kind in ["sqlite"] + (["postgres"] if pg else []):
        rec = recovery(b, kind, rounds, lease)
        if rec:
            worst = max(rec)
            print(f"recovery after kill -9 -> claimed by another host, {kind}, lease "
                  f"{lease:.0f} s, {len(rec)} rounds: median {statistics.median(rec):.2f} s, "
                  f"max {worst:.2f} s; goal <= lease + 2 s: "
                  f"{'met' if worst <= lease + 2 else 'MISSED'}")
        else:
            print(f"recovery after kill -9, {kind}: no round completed")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
