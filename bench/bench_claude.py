"""The worker host on Claude Code (issue 39, ENG-2) against the real pinned Claude Code CLI
offline (the fake Messages API in this process), beside Codex on the same machine:

1. One-turn tasks, one at a time: a bare `claude -p` run (spawn .. result .. exit, with
   the host's own sandbox and permission flags, and plain) against the same task run by a
   `WorkerHost` (claim -> task directory -> claude under its shim -> control protocol ->
   session -> turn -> delivery -> finish), same binary, same fake, same run; the ratio and
   the host's overhead per task. The same for Codex (bench_worker.py's bare client and
   host), so both engines' overheads are side by side.
2. The turn alone: the host's turn (turn_started..turn_ended) against a bare turn on a kept
   process (the user message .. the result message on `ClaudeProcess`; turn/start ..
   turn/completed for Codex).
3. Memory: the RSS of each Claude Code task's process group (claude, its helpers) with
   2 / 8 concurrent hanging turns.

    .venv/bin/python bench/bench_claude.py [--turns N] [--quick]
    (MARKERTOOLS_CLAUDE_BIN / MARKERTOOLS_CODEX_BIN: the binaries; default the pinned
     installs, scripts/install_claude.sh and scripts/install_codex.sh)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_worker  # noqa: E402

from markertools import Project, Quota, Task  # noqa: E402
from markertools_adapters.claude.client import ClaudeProcess  # noqa: E402
from markertools_adapters.claude.fakemessages import FakeMessages, Hang, Text, request_texts  # noqa: E402
from markertools_adapters.claude.offline import claude_env, make_claude_home  # noqa: E402
from markertools_adapters.codex.fakemodel import FakeResponses  # noqa: E402
from markertools_adapters.opener import connect  # noqa: E402
from markertools_adapters.worker import HostEvent, WorkerHost, WorkerSettings  # noqa: E402
from markertools_adapters.worker.claude_engine import PERMISSION_MODE, SANDBOX  # noqa: E402
from markertools_adapters.worker.dirs import LAYOUT  # noqa: E402
from markertools_adapters.worktrees import WorktreeFiles  # noqa: E402

PROJECT, USER = "p1", "alice"
HOST_FLAGS = ["--setting-sources=user", "--settings", json.dumps(SANDBOX), f"--permission-mode={PERMISSION_MODE}"]
TURN_FLAGS = ["--permission-prompt-tool=stdio", *HOST_FLAGS]  # the engine's, without tools


def claude_bin() -> str:
    path = os.environ.get("MARKERTOOLS_CLAUDE_BIN")
    if path:
        return path
    return subprocess.run(
        [str(ROOT / "scripts" / "install_claude.sh")], capture_output=True, text=True, check=True
    ).stdout.strip()


def route(body: Any) -> Any:
    texts = request_texts(body)
    if any("[hang]" in t for t in texts):
        return Hang()
    wanted = next((int(t.split("[turns:")[1].split("]")[0]) for t in texts if "[turns:" in t), 1)
    reports = sum(t.count("markertools report:") for t in texts)
    if reports + 1 < wanted:  # one more turn: a block whose report is the next input
        return Text("```todo-list\n{}\n```")
    return Text("done")


class ClaudeBench:
    def __init__(self, tmp: Path, binary: str, fake: FakeMessages) -> None:
        self.tmp, self.binary, self.fake = tmp, binary, fake
        self.env = claude_env(make_claude_home(tmp / "claude-home"), fake.base_url)
        self.n = 0

    def store(self) -> Any:
        root = self.tmp / "worktrees"
        root.mkdir(exist_ok=True)
        self.n += 1
        store = connect(self.tmp / f"w{self.n}.db", executor="noop",
                        files=WorktreeFiles(root, "h1", layout=LAYOUT))
        store.put_project(Project(PROJECT, "bench"))
        store.set_permissions(USER, PROJECT, ["read", "create_task"])
        store.put_quota(Quota(USER, total_usd=1e9))
        return store

    def settings(self, **kw: Any) -> WorkerSettings:
        kw.setdefault("until_idle", True)
        kw.setdefault("poll_seconds", 0.05)
        return WorkerSettings(project=PROJECT, host="h1", engine="claude-code",
                              claude_bin=self.binary, codex_env=self.env,
                              worktrees=self.tmp / "worktrees", request_timeout=60.0,
                              grace_seconds=1.0, **kw)


def bare_p(b: ClaudeBench, n: int, flags: list[str]) -> list[float]:
    """`claude -p work --output-format stream-json --verbose FLAGS`: spawn .. exit."""
    out = []
    for _ in range(n):
        cwd = Path(tempfile.mkdtemp(dir=b.tmp, prefix="bare-"))
        t0 = time.perf_counter()
        done = subprocess.run([b.binary, "-p", "work", "--output-format", "stream-json",
                               "--verbose", *flags], cwd=cwd, env=b.env, capture_output=True,
                              text=True, timeout=120, check=False)
        out.append(time.perf_counter() - t0)
        assert done.returncode == 0 and '"subtype":"success"' in done.stdout, done.stderr[-500:]
    return out


def host_tasks(b: ClaudeBench, n: int, **kw: Any) -> tuple[list[float], list[float], float]:
    """(per task: claimed..finished, per turn: turn_started..turn_ended, wall / task)"""
    marks: dict[tuple[str, str], float] = {}

    def sink(e: HostEvent) -> None:
        marks[(e.task_id, e.kind)] = time.perf_counter()

    store = b.store()
    try:
        for k in range(n):
            store.insert_task(Task(f"t-{b.n}-{k:04d}", PROJECT, status="queued", prompt="work",
                                   created_by=USER, created_at=float(k)))
        host = WorkerHost(b.settings(max_concurrent=1, **kw), store, sinks=[sink])
        t0 = time.perf_counter()
        asyncio.run(host.run())
        wall = time.perf_counter() - t0
        assert {t.status for t in store.list_tasks(PROJECT, status=None, q=None, limit=n + 1).rows} == {"completed"}
    finally:
        store.close()
    ids = sorted({t for t, _ in marks})
    return ([marks[(t, "finished")] - marks[(t, "claimed")] for t in ids],
            [marks[(t, "turn_ended")] - marks[(t, "turn_started")] for t in ids], wall / n)


async def bare_turns(b: ClaudeBench, n: int, per: int) -> tuple[list[float], list[float]]:
    """`n` fresh claude processes under the control protocol, `per` turns each: (first
    turns, later turns), each the user message .. its result message."""
    results: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    def on_message(message: dict[str, Any]) -> None:
        if message.get("type") == "result":
            results.put_nowait(message)

    async def no_control(request: dict[str, Any]) -> dict[str, Any]:
        raise ValueError("none")

    first, later = [], []
    for k in range(n):
        cwd = b.tmp / "kept" / str(k)
        cwd.mkdir(parents=True)
        process = ClaudeProcess(b.binary, TURN_FLAGS, env=b.env, cwd=str(cwd),
                                on_message=on_message, on_control=no_control,
                                on_exit=lambda code, tail: None)
        await process.start()
        await process.launch("--session-id", str(uuid.uuid4()), timeout=60)
        try:
            for turn in range(per):
                t0 = time.perf_counter()
                await process.send_user("work" if turn == 0 else "more", str(uuid.uuid4()))
                await asyncio.wait_for(results.get(), 60)
                (first if turn == 0 else later).append(time.perf_counter() - t0)
        finally:
            await process.close(3.0)
    return first, later


def host_turns(b: ClaudeBench, n: int, per: int) -> tuple[list[float], list[float], list[float]]:
    """`n` tasks of `per` turns each (every turn but the last writes a todo-list block,
    whose report is the next turn's input): (first turns, later turns, the gaps between
    a turn's end and the next turn's start: its delivery and the next input)."""
    marks: list[tuple[str, str, float]] = []

    def sink(e: HostEvent) -> None:
        marks.append((e.task_id, e.kind, time.perf_counter()))

    store = b.store()
    try:
        for k in range(n):
            store.insert_task(Task(f"x-{b.n}-{k:04d}", PROJECT, status="queued", prompt=f"[turns:{per}] work",
                                   created_by=USER, created_at=float(k)))
        asyncio.run(WorkerHost(b.settings(max_concurrent=1), store, sinks=[sink]).run())
    finally:
        store.close()
    first, later, gaps = [], [], []
    for task in sorted({t for t, _, _ in marks}):
        mine = [(kind, at) for t, kind, at in marks if t == task and kind in ("turn_started", "turn_ended")]
        starts = [at for kind, at in mine if kind == "turn_started"]
        ends = [at for kind, at in mine if kind == "turn_ended"]
        first.append(ends[0] - starts[0])
        later += [e - s for s, e in zip(starts[1:], ends[1:], strict=True)]
        gaps += [s - e for e, s in zip(ends, starts[1:], strict=False)]
    return first, later, gaps


def memory(b: ClaudeBench, n: int) -> dict[str, float]:
    pgids: dict[str, int] = {}
    store = b.store()
    for k in range(n):
        store.insert_task(Task(f"m-{b.n}-{k:04d}", PROJECT, status="queued", prompt="[hang] wait",
                               created_by=USER, created_at=float(k)))
    host = WorkerHost(b.settings(max_concurrent=n, until_idle=False), store)
    result: dict[str, float] = {}

    def sink(e: HostEvent) -> None:
        if e.kind == "turn_started":
            pgids[e.task_id] = int(e.details["pgid"])

    host.sinks.append(sink)

    async def go() -> None:
        task = asyncio.ensure_future(host.run())
        async with asyncio.timeout(180):
            while len(pgids) < n:
                await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)
        groups = [bench_worker.group_rss_kib(p) for p in pgids.values()]
        result.update(host=bench_worker.rss_kib(os.getpid()), each=statistics.median(groups),
                      most=max(groups))
        host.stop()
        b.fake.release_hangs()
        await task

    try:
        asyncio.run(go())
    finally:
        b.fake._release.clear()
        store.close()
    return result


def codex_rows(tmp: Path, turns: int) -> tuple[float, float, float, float, float]:
    """bench_worker's bare client and host on Codex: (bare task, host task, host wall,
    bare turn, host turn) medians in seconds."""
    with FakeResponses(default_reply=None) as fake:
        fake.reply_for = bench_worker.route
        b = bench_worker.Bench(tmp, bench_worker.codex_bin(), fake)
        bare_task, bare_turn = asyncio.run(bench_worker.bare_tasks(b, turns))
        host_task, host_turn, wall = bench_worker.host_tasks(b, turns)
    return (statistics.median(bare_task), statistics.median(host_task), wall,
            statistics.median(bare_turn), statistics.median(host_turn))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.turns = 5
    binary = claude_bin()
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp, FakeMessages(default_reply=None) as fake:
        fake.reply_for = route
        b = ClaudeBench(Path(tmp), binary, fake)
        print(f"Claude Code {version}, offline against the fake Messages API (no delay)")
        for n in (2, 8):
            m = memory(b, n)
            print(f"  memory, {n} concurrent hanging turns: each task's process group "
                  f"{m['each'] / 1024:.1f} MiB (median; largest {m['most'] / 1024:.1f} MiB), "
                  f"host process {m['host'] / 1024:.1f} MiB")
        bare_p(b, 2, HOST_FLAGS)  # warm-up (the binary into the page cache), not counted
        rounds = [(bare_p(b, 1, HOST_FLAGS), bare_p(b, 1, []), host_tasks(b, 1),
                   host_tasks(b, 1, tools=True)) for _ in range(args.turns)]
        bare_flags = statistics.median(r[0][0] for r in rounds)  # interleaved: same conditions
        bare_plain = statistics.median(r[1][0] for r in rounds)
        ht = statistics.median(r[2][0][0] for r in rounds)
        host_wall = statistics.median(r[2][2] for r in rounds)
        tools_wall = statistics.median(r[3][2] for r in rounds)
        print(f"one-turn tasks, {args.turns} rounds, one at a time, medians (same binary, same fake):")
        print(f"  bare claude -p (plain)                               {bare_plain * 1000:8.1f} ms")
        print(f"  bare claude -p (the host's sandbox/permission flags) {bare_flags * 1000:8.1f} ms   baseline")
        print(f"  host task (claimed..finished event)                  {ht * 1000:8.1f} ms   ratio {ht / bare_flags:.2f}x bare")
        print(f"  host wall per task (incl. claim, idle check)         {host_wall * 1000:8.1f} ms   ratio {host_wall / bare_flags:.2f}x bare")
        print(f"  host wall per task, the task's tools in-process      {tools_wall * 1000:8.1f} ms   ratio {tools_wall / bare_flags:.2f}x bare")
        over = (host_wall - bare_flags) * 1000
        print(f"  host overhead per one-turn task {over:.1f} ms; goal <= 1.2x: "
              f"{'met' if host_wall / bare_flags <= 1.2 else 'MISSED'}")
        per = 4
        n = max(2, args.turns // 4)
        bare_first, bare_later = asyncio.run(bare_turns(b, n, per))
        host_first, host_later, gaps = host_turns(b, n, per)
        bf, bl = statistics.median(bare_first), statistics.median(bare_later)
        hf, hl = statistics.median(host_first), statistics.median(host_later)
        print(f"turns: {n} sessions of {per} turns, medians (the control protocol on a fresh claude):")
        print(f"  first turn: bare {bf * 1000:.1f} ms, host {hf * 1000:.1f} ms (overhead {(hf - bf) * 1000:.1f} ms)")
        print(f"  later turns: bare {bl * 1000:.1f} ms, host {hl * 1000:.1f} ms (overhead {(hl - bl) * 1000:.1f} ms)")
        print(f"  between two turns of the host (delivery, follow-ups, next input): {statistics.median(gaps) * 1000:.1f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        bt, _, wall, bu, cu = codex_rows(Path(tmp), args.turns)
        print("Codex (bench_worker.py's rows, same run), medians:")
        print(f"  bare client task {bt * 1000:.1f} ms, host wall per task {wall * 1000:.1f} ms: "
              f"ratio {wall / bt:.2f}x, overhead {(wall - bt) * 1000:.1f} ms a task")
        print(f"  bare turn {bu * 1000:.1f} ms, host turn {cu * 1000:.1f} ms: overhead "
              f"{(cu - bu) * 1000:.1f} ms a turn")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
