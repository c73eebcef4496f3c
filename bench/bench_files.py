"""task-files reader cost, as ratios against a plain `open().read()` of the same small
file measured in the same run (no absolute thresholds anywhere).

    .venv/bin/python bench/bench_files.py
"""

from __future__ import annotations

import os
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from markertools.domain.model import Task
from markertools_adapters.worktrees import WorktreeFiles


def _best(fn: Callable[[], object], repeat: int = 5, number: int = 200) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def _peak(fn: Callable[[], object]) -> int:
    """Peak traced allocation (bytes) of one call, relative to the start."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        wt = root / "host-worktrees" / "t1"
        (wt / "src" / "pkg").mkdir(parents=True)
        small = wt / "src" / "pkg" / "module.py"
        small.write_text("x = 1\n" * 500)
        big = wt / "big.log"
        with open(big, "wb") as fh:
            block = b"0123456789abcdef" * 4096
            for _ in range(50 * 1024 * 1024 // len(block)):
                fh.write(block)
        many = wt / "many"
        many.mkdir()
        for i in range(10_000):
            (many / f"f{i:05d}").touch()
        (wt / "link.py").symlink_to("src/pkg/module.py")
        files = WorktreeFiles(root, "h1")
        task = Task("t1", "p1")

        def baseline() -> bytes:
            with open(small, "rb") as fh:
                return fh.read(65536)

        base = _best(baseline)
        cases: list[tuple[str, Callable[[], object], int]] = [
            ("read small file (3 KB)", lambda: files.read(task, "src/pkg/module.py", 20000), 200),
            ("read via in-worktree symlink", lambda: files.read(task, "link.py", 20000), 200),
            ("read 50 MB file (truncated)", lambda: files.read(task, "big.log", 20000), 20),
            ("list top level", lambda: files.read(task, None, 20000), 200),
            ("list 10,000 entries", lambda: files.read(task, "many", 20000), 5),
        ]
        print(f"baseline open().read() of the small file: {base * 1e6:.1f} us")
        for label, fn, number in cases:
            cost = _best(fn, number=number)
            print(f"{label:32s} {cost * 1e6:10.1f} us  {cost / base:8.1f}x baseline")
        for label, fn in (
            ("small file (3 KB)", lambda: files.read(task, "src/pkg/module.py", 20000)),
            ("50 MB file (truncated)", lambda: files.read(task, "big.log", 20000)),
        ):
            peak = _peak(fn)
            print(f"peak Python memory, {label:24s} {peak / 1024:8.1f} KiB")
        print(
            f"  50 MB file / peak = {big.stat().st_size / max(_peak(lambda: files.read(task, 'big.log', 20000)), 1):.0f}x"
        )
        print(f"(file system: {os.statvfs(tmp).f_bsize}-byte blocks at {tmp})")


if __name__ == "__main__":
    main()
