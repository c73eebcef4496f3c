"""examples/codex_worker.py without `codex` installed (issue 19): it says what to
install and exits 2, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "codex_worker.py"


def test_without_codex_it_prints_what_to_install_and_exits_2(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(tmp_path))  # no codex on PATH
    run = subprocess.run(
        [sys.executable, str(EXAMPLE), "--db", str(tmp_path / "w.db"), "--project", "p1"],
        capture_output=True, text=True, env=env, check=False,
    )
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert "codex not found" in run.stderr and "npm install -g @openai/codex" in run.stderr
    assert not (tmp_path / "w.db").exists()
