"""Supervisor overhead and host memory (issue 16), against the real pinned Codex binary
offline (the fake Responses server in this process):

1. Per turn: one instruction driven through the supervisor (dispatch -> journal ->
   turn/start -> the model's reply -> turn/completed -> journal -> decision pending)
   against the same turn driven with the bare app-server client (turn/start ->
   turn/completed) on the same binary and fake, measured in the same run; and the
   bare JSON-RPC round trip (`thread/list`) as the floor of any app-server call.
2. Host memory with 3 concurrent workers, each with a live turn: the supervisor's own
   RSS and the three app-server children's.

    .venv/bin/python bench/bench_dots.py [--turns N]
    (MARKERTOOLS_CODEX_BIN: the codex binary; default scripts/install_codex.sh)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from markertools.plans import HostSettings  # noqa: E402
from markertools_adapters.codex.client import AppServerClient  # noqa: E402
from markertools_adapters.codex.fakemodel import FakeResponses, Hang, Text  # noqa: E402
from markertools_adapters.codex.offline import codex_env, make_codex_home  # noqa: E402
from markertools_adapters.dots import Supervisor  # noqa: E402

OWNER = "bench"
FSYNCS = [0]  # os.fsync calls in this process (the journal's durability points)
FSYNC_SECONDS = [0.0]  # and the time they took (the disk's share of the overhead)
_fsync = os.fsync


def _counted_fsync(fd: int) -> None:
    FSYNCS[0] += 1
    t0 = time.perf_counter()
    _fsync(fd)
    FSYNC_SECONDS[0] += time.perf_counter() - t0


os.fsync = _counted_fsync


def codex_bin() -> str:
    path = os.environ.get("MARKERTOOLS_CODEX_BIN")
    if path:
        return path
    return subprocess.run(
        [str(ROOT / "scripts" / "install_codex.sh")], capture_output=True, text=True, check=True
    ).stdout.strip()


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def body(cwds: list[Path]) -> dict[str, Any]:
    return {
        "goal": "bench",
        "plan": "bench",
        "workers": [
            {"name": f"w{i}", "backend": "codex", "cwd": str(c), "role": "bench",
             "instruction": "first", "sandbox": "read-only"}
            for i, c in enumerate(cwds)
        ],
        "quota": {"stopAtLeftPercent": None},
        "maxTurns": 200,
        "timeoutMs": 600_000,
        "allowedModels": [],
        "supervision": {"decisionTimeoutMs": 600_000, "maxDecisionRetries": 5, "maxTotalReminders": 30},
    }


class Yes:
    async def confirm(self, request: Any) -> Any:
        return "accept"


async def paired_turns(binary: str, env: dict[str, str], cwds: list[Path], fake: FakeResponses, state: Path, n: int) -> dict[str, Any]:
    """One bare turn, then one supervised turn, n times, in one event loop: the two are
    measured side by side, so a noisy neighbour slows both (the overhead is the median of
    the per-pair differences, not a difference of medians taken minutes apart)."""
    client = AppServerClient(binary, env=env, cwd=str(cwds[0]), queue_events=True)
    await client.start()
    await client.initialize({"name": "bench", "version": "0"})
    thread = (await client.thread_start(str(cwds[0]), sandbox="read-only", approval_policy="on-request"))["thread"]["id"]
    sup = Supervisor(state, codex_bin=binary, codex_env=env, confirmer=Yes(),
                     settings=HostSettings(max_concurrent=3, poll_ms=600_000))  # default tick: launches wake on change
    await sup.open()
    bare, rtts, supervised, fsync_ms = [], [], [], []
    try:
        fake.push(Text("ok"))
        run_id = (await sup.start(body([cwds[1]]), owner=OWNER)).run_id
        while not sup.pending_decisions(owner=OWNER):
            await asyncio.sleep(0.001)
        journal_before = sup.runs[run_id].journal._next_seq
        fsyncs_before = FSYNCS[0]
        for _ in range(n):
            fake.push(Text("ok"))
            t0 = time.perf_counter()
            await client.turn_start(thread, "next")
            await client.wait_for(lambda m: m.get("method") == "turn/completed", 30)
            bare.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await client.thread_list(limit=1)
            rtts.append(time.perf_counter() - t0)
            (p,) = sup.pending_decisions(owner=OWNER)
            fake.push(Text("ok"))
            spent = FSYNC_SECONDS[0]
            t0 = time.perf_counter()
            sup.dispatch(owner=OWNER, run_id=run_id, worker="w0", instruction="next", decision_id=p.decision_id)
            while True:
                pending = sup.pending_decisions(owner=OWNER)
                if pending and pending[0].decision_id != p.decision_id:
                    break
                await sup.changed(0.05)
            supervised.append(time.perf_counter() - t0)
            fsync_ms.append((FSYNC_SECONDS[0] - spent) * 1000)
        return {
            "bare": bare, "rtts": rtts, "supervised": supervised, "fsync_ms": fsync_ms,
            "events": (sup.runs[run_id].journal._next_seq - journal_before) / n,
            "fsyncs": (FSYNCS[0] - fsyncs_before) / n,
        }
    finally:
        await sup.close()
        await client.close()


async def memory(binary: str, env: dict[str, str], cwds: list[Path], fake: FakeResponses, state: Path) -> dict[str, int]:
    sup = Supervisor(state, codex_bin=binary, codex_env=env, confirmer=Yes(),
                     settings=HostSettings(max_concurrent=3, poll_ms=600_000), tick_seconds=0.01)
    base = rss_kib(os.getpid())
    await sup.open()
    try:
        fake.push(Hang(), Hang(), Hang())
        run_id = (await sup.start(body(cwds), owner=OWNER)).run_id
        while sum(1 for w in sup.status(owner=OWNER, run_id=run_id)[0].workers if w.state == "running") < 3:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.5)
        children = [w.client.pid for w in sup.runs[run_id].workers.values() if w.client and w.client.pid]
        out = {"supervisor_kib": rss_kib(os.getpid()), "before_open_kib": base,
               "children_kib": sum(rss_kib(p) for p in children), "children": len(children)}
        await sup.control(owner=OWNER, run_id=run_id, action="cancel")
        return out
    finally:
        fake.release_hangs()
        await sup.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=30)
    args = parser.parse_args(argv)
    binary = codex_bin()
    with tempfile.TemporaryDirectory() as tmp, FakeResponses() as fake:
        home = Path(tmp) / "home"
        make_codex_home(home, fake.base_url)
        env = codex_env(home)
        cwds = [Path(tmp) / f"w{i}" for i in range(3)]
        for c in cwds:
            c.mkdir()
        got = asyncio.run(paired_turns(binary, env, cwds, fake, Path(tmp) / "s1", args.turns))
        mem = asyncio.run(memory(binary, env, cwds, fake, Path(tmp) / "s2"))
    bare, sup, rtts = got["bare"], got["supervised"], got["rtts"]
    events, fsyncs = got["events"], got["fsyncs"]
    b, s, r = statistics.median(bare), statistics.median(sup), statistics.median(rtts)
    print(f"codex app-server turns, {args.turns} pairs (a bare turn, then a supervised one), medians (same binary, same fake model):")
    print(f"  bare JSON-RPC round trip (thread/list)      {r * 1000:7.2f} ms")
    print(f"  bare client turn (turn/start..completed)    {b * 1000:7.2f} ms")
    print(f"  supervised turn (dispatch..next decision)   {s * 1000:7.2f} ms   ratio {s / b:.2f}x bare turn")
    over = statistics.median([(x - y) * 1000 for x, y in zip(sup, bare, strict=True)])
    disk = statistics.median(got["fsync_ms"])
    print(f"  supervisor overhead per turn                {over:7.2f} ms   "
          f"(median of the pairs' differences) = {over / 1000 / r:.1f}x the bare round trip; goal <= 5 ms: {'met' if over <= 5 else 'MISSED'}")
    print(f"  of which waiting on the disk (fsync)        {disk:7.2f} ms   "
          f"(the rest, {over - disk:.2f} ms, is the supervisor's own work)")
    print(f"  journal: {events:.1f} events per turn, {fsyncs:.1f} fsyncs per turn (grouped: "
          "one per batch, before the effect)")
    print("host memory with 3 concurrent workers, each with a live turn:")
    print(f"  supervisor process RSS {mem['supervisor_kib'] / 1024:.1f} MiB "
          f"(+{(mem['supervisor_kib'] - mem['before_open_kib']) / 1024:.1f} MiB after open)")
    print(f"  {mem['children']} app-server children RSS {mem['children_kib'] / 1024:.1f} MiB in all "
          f"({mem['children_kib'] / 1024 / max(1, mem['children']):.1f} MiB each)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
