"""The installed `markertools` console script, run as a person runs it: `cli(...)` runs
it in a process of its own (never a traceback), `one_line_failure` checks a usage error
is one stderr line and exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXE = Path(sys.executable).with_name("markertools")


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(EXE), *args], capture_output=True, text=True, timeout=120, cwd=cwd, check=False
    )
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    return done


def one_line_failure(done: subprocess.CompletedProcess[str], needle: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("markertools: "), done.stderr
    assert "internal error" not in lines[0]
    assert needle in lines[0], lines[0]
    return lines[0]
