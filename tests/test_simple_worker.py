"""The simplest complete worker as a user now writes it (issue 27): examples/simple_worker.py
is quoted exactly by docs/worker-loop.md, runs as written on SQLite and in memory, and
leaves every turn finished exactly once - statuses, cost rows numbered by round, the
quota charged to the cent, nothing left on any task's queue. It takes 5 names from 3
markertools modules (plus the demo's records)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from support.paths import REPO

import markertools_adapters
from markertools import CostRow

EXAMPLE = REPO / "examples" / "simple_worker.py"
DOC = REPO / "docs" / "worker-loop.md"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_the_worker_loop_page_quotes_the_example_exactly() -> None:
    blocks = re.findall(r"^````python \{run\}\n(.*?)^````$", DOC.read_text(), re.S | re.M)
    assert blocks[0] == EXAMPLE.read_text()


def test_it_imports_three_markertools_modules() -> None:
    tree = ast.parse(EXAMPLE.read_text())
    modules = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert {m for m in modules if m and m.startswith("markertools")} == {
        "markertools",
        "markertools_adapters",
        "markertools_adapters.first_turn",
    }


@pytest.mark.rule("TRN-9", "CST-2", "TRN-6")
def test_it_finishes_every_turn_once_and_charges_to_the_cent(tmp_path: Path) -> None:
    done = run(cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[:2] == [
        "t-plan (fresh): 2 block(s) -> queued",
        "t-plan (continuation): 0 block(s) -> completed",
    ]
    assert re.fullmatch(r"t-[0-9a-f]{16} \(fresh\): 0 block\(s\) -> completed", lines[2])
    assert lines[3:] == ["nothing queued; alice has spent $0.02 of $10"]
    created = lines[2].split()[0]
    with markertools_adapters.connect(tmp_path / "simple-worker.db", executor="noop") as store:
        plan = store.get_task("t-plan")
        assert (plan.status, plan.result_text) == ("completed", "Done: Plan the release")
        assert store.task_costs("t-plan") == (
            CostRow("t-plan", 1, Decimal("0.012"), 1800),
            CostRow("t-plan", 2, Decimal("0.004"), 600),
        )
        assert store.get_task(created).status == "completed"
        assert store.task_costs(created) == (CostRow(created, 1, Decimal("0.004"), 600),)
        assert store.get_quota("alice").used_usd == Decimal("0.02")
        world = store.export_world(0.0)
        assert [t.title for t in world.todos if t.task_id == created] == ["Review the test results"]
        assert all(f.consumed for f in world.followups)  # every report reached the agent once
    again = run(cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout == "nothing queued; alice has spent $0.02 of $10\n"


def test_it_runs_on_the_memory_store_the_same_way(tmp_path: Path) -> None:
    done = run("memory:", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "nothing queued; alice has spent $0.02 of $10"
    assert list(tmp_path.iterdir()) == []  # nothing written to disk
