"""Import cost of the core, as a ratio to a bare interpreter start (same run).

Each figure is the median wall time of fresh `python -c ...` processes (-S is not used:
site-packages are on the path as for any user). Goal (issue 19): `import markertools`
adds at most 50 ms to a bare start. Also shows `import markertools.plans`, the first
`parse_turn` and the heavy modules each one loads (none of typer, rich, pydantic,
sqlite_utils, psycopg may appear). `--quick`: 5 runs instead of 21.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

HEAVY = ("typer", "rich", "pydantic", "sqlite_utils", "psycopg", "click", "markdown_it")
CASES = (
    ("bare interpreter", "pass"),
    ("import markertools", "import markertools"),
    ("import markertools.plans", "import markertools.plans"),
    ("first parse_turn", "import markertools; markertools.parse_turn('```task-poll\\n{}\\n```')"),
)


def wall(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def loaded(code: str) -> list[str]:
    probe = f"{code}\nimport sys; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
    return out.stdout.split()


def main(argv: list[str]) -> int:
    runs = 5 if "--quick" in argv else 21
    results = {name: statistics.median(wall(code) for _ in range(runs)) for name, code in CASES}
    bare = results["bare interpreter"]
    print("| case | median | added to a bare start | × bare | heavy modules loaded |")
    print("|---|---:|---:|---:|---|")
    for name, code in CASES:
        t = results[name]
        heavy = ", ".join(loaded(code)) or "none"
        print(
            f"| {name} | {t * 1000:.1f} ms | {(t - bare) * 1000:+.1f} ms | {t / bare:.2f}× | {heavy} |"
        )
    added = (results["import markertools"] - bare) * 1000
    print(f"goal: import markertools adds <= 50 ms: {'met' if added <= 50 else 'MISSED'} ({added:.1f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
