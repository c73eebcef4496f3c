"""`markertools deliver --db` against the library call it wraps, on 1,000 and 50,000 tasks.

Each figure is the median wall time of fresh processes (the database copied anew for
every run, outside the timing) with the process's peak RSS (`wait4`):

- baseline: `python -c` that imports markertools and the SQLite adapter, opens the
  database, delivers the typical turn with `deliver_turn` and closes it - the library
  call plus interpreter start;
- `markertools deliver TURN --db DB --sender S` (the human output), then with `--json`
  and with `--json --touched-only`.

Goal (issue 19): the CLI <= 1.5x the baseline, and flat from 1k to 50k tasks. The JSON
document without `--touched-only` holds the whole database (docs/cli.md), so it grows
with it by design. `--quick`: 3 runs instead of 7.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import bench_world

from markertools_adapters.sqlite import create_store_from_world

SENDER = "s0"
SIZES = (1_000, 50_000)
CLI = [sys.executable, "-m", "markertools"]


def turn_text(sender: str) -> str:
    """The typical turn as text: 5 task-create, 5 task-cancel, 5 task-poll, 2 wait-threads."""
    blocks = [f'```task-create\n{{"prompt": "subtask {k}"}}\n```' for k in range(5)]
    blocks += [f'```task-cancel\n{{"task_id": "{sender}-c{k}"}}\n```' for k in range(5)]
    blocks += [f'```task-poll\n{{"task_id": "{sender}-f{k}"}}\n```' for k in range(5)]
    for w in range(2):
        ids = ", ".join(f'"{sender}-f{k}"' for k in range(8 * w, 8 * w + 8))
        blocks.append(f'```wait-threads\n{{"task_ids": [{ids}]}}\n```')
    return "Done with this part.\n\n" + "\n\n".join(blocks) + "\n"


LIBRARY = """
import sys, time
from markertools import deliver_turn
from markertools_adapters.clock import SystemRandom, VirtualClock
from markertools_adapters.sqlite import open_store
from markertools_adapters.wiring import store_ports
from markertools_adapters.executors import NoopExecutor
text = open(sys.argv[2], encoding="utf-8").read()
store = open_store(sys.argv[1])
now = store.world_now() or time.time()
ports = store_ports(store, clock=VirtualClock(now), random=SystemRandom(), executor=NoopExecutor())
report = deliver_turn(text, sender=sys.argv[3], outcome="completed", ports=ports)
store.close()
assert report.delivered
"""


def timed(argv: list[str]) -> tuple[float, int]:
    """(wall seconds, peak RSS in KiB) of one child process; it must exit 0."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"{argv[:4]}... exited {proc.returncode}: {err}")
    if proc.stderr:
        proc.stderr.close()
    return wall, int(usage.ru_maxrss)


def measure(db: Path, tmp: Path, argv_of: object, runs: int) -> tuple[float, int]:
    walls, peaks = [], []
    for _ in range(runs):
        copy = tmp / "run.db"
        shutil.copyfile(db, copy)
        wall, peak = timed(argv_of(copy))  # type: ignore[operator]
        walls.append(wall)
        peaks.append(peak)
    return statistics.median(walls), max(peaks)


def main(argv: list[str]) -> int:
    runs = 3 if "--quick" in argv else 7
    with tempfile.TemporaryDirectory(prefix="bench-cli-deliver-") as name:
        tmp = Path(name)
        turn = tmp / "turn.md"
        turn.write_text(turn_text(SENDER), encoding="utf-8")
        bare = statistics.median(
            timed([sys.executable, "-c", "pass"])[0] for _ in range(runs)
        )
        print(f"bare interpreter start: {bare * 1000:.0f} ms")
        print(
            "| tasks | baseline (library + start) | deliver --db | ratio | --json | "
            "--json --touched-only | peak RSS baseline / CLI / --json / --touched-only |"
        )
        print("|---:|---:|---:|---:|---:|---:|---|")
        rows = {}
        for size in SIZES:
            db = tmp / f"w{size}.db"
            create_store_from_world(bench_world(size - 22, [SENDER]), db).close()

            def cli(*extra: str) -> object:
                return lambda copy: [
                    *CLI, "deliver", str(turn), "--db", str(copy), "--sender", SENDER, *extra
                ]

            base = measure(db, tmp, lambda copy: [
                sys.executable, "-c", LIBRARY, str(copy), str(turn), SENDER
            ], runs)
            human = measure(db, tmp, cli(), runs)
            full = measure(db, tmp, cli("--json"), max(1, runs // 2))
            touched = measure(db, tmp, cli("--json", "--touched-only"), runs)
            rows[size] = (base, human, full, touched)
            print(
                f"| {size:,} | {base[0] * 1000:.0f} ms | {human[0] * 1000:.0f} ms | "
                f"{human[0] / base[0]:.2f}× | {full[0] * 1000:.0f} ms | "
                f"{touched[0] * 1000:.0f} ms | {base[1] / 1024:.0f} / {human[1] / 1024:.0f} / "
                f"{full[1] / 1024:.0f} / {touched[1] / 1024:.0f} MiB |",
                flush=True,
            )
        small, large = rows[SIZES[0]][1][0], rows[SIZES[-1]][1][0]
        print(
            f"deliver --db, {SIZES[-1]:,} / {SIZES[0]:,} tasks: {large / small:.2f}× "
            "(flat = 1.0); goal: CLI <= 1.5× baseline at every size"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
