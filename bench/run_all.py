"""Run every benchmark in bench/ in turn (`make bench`; `--quick` for a smoke run).

Each benchmark prints ratios against a baseline it measures in the same run, so the
figures compare across machines. Nothing here is a test: no thresholds, no exit codes
for slowness. The PostgreSQL benchmark starts its own throwaway server when
MARKERTOOLS_PG_DSN is unset (see scripts/with_postgres.sh).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = (
    ("bench_parse.py", True),
    ("bench_store_calls.py", False),
    ("bench_files.py", False),
    ("bench_sqlite.py", True),
    ("bench_postgres.py", True),
    ("bench_exactly_once.py", False),
    ("bench_claims.py", True),
    ("bench_cli_deliver.py", True),
    ("bench_import.py", True),
    ("bench_dots.py", False),
    ("bench_worker.py", True),
    ("bench_claude.py", True),
    ("bench_views.py", True),
    ("bench_tools.py", True),
    ("bench_fleet.py", True),
    ("bench_approvals.py", True),
)


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    failed = []
    for name, takes_quick in BENCHES:
        args = [sys.executable, str(HERE / name)]
        if quick and takes_quick:
            args.append("--quick")
        print(f"\n===== {name} {'(quick)' if quick and takes_quick else ''}", flush=True)
        start = time.perf_counter()
        status = subprocess.call(args)
        print(f"===== {name}: exit {status}, {time.perf_counter() - start:.1f} s", flush=True)
        if status != 0:
            failed.append(name)
    if failed:
        print("benchmarks that failed to run:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
