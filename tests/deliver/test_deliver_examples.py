"""The embedding example in examples/ runs and does what its docstring says."""

from __future__ import annotations

import runpy
import subprocess
import sys

import pytest
from support.paths import REPO

EXAMPLE = REPO / "examples" / "worker_memory.py"


@pytest.mark.rule("GOA-2", "WAI-4", "CRE-2", "INJ-1", "TRN-6")
def test_worker_memory_example_spawns_waits_and_converts_to_a_goal():
    namespace = runpy.run_path(str(EXAMPLE))
    first, second, queued, starts = namespace["main"]()
    assert first.startswith("markertools report: 3 block(s) from your last turn (3 done).")
    assert "2 finished, 0 not finished" in first
    assert "finished: write the API" in first and "finished: write the docs" in first
    assert "goal conversion queued" in second
    assert (
        queued
        == "next input queued for lead: '/goal ship the release once the API and the docs are merged'"
    )
    # its second and third claims continue with what its turns queued, never a fresh start
    assert starts == "the lead's claims: fresh, continuation, continuation"


def test_worker_memory_example_runs_as_a_script():
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "goal conversion queued" in done.stdout
