"""The simplest complete worker as a user now writes it (issue 27): examples/simple_worker.py
is quoted exactly by docs/worker-loop.md, runs as written on SQLite and in memory, and
leaves every turn finished exactly once - statuses, cost rows numbered by round, the
quota charged to the cent, nothing left on any task's queue. It takes 5 names from 3
markertools modules (plus the demo's records). Killed with SIGKILL while its agent works,
the next run requeues the dead host's task once its lease lapsed and finishes it once
(WRK-6)."""

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


DRIVER = '''\
"""The example as a user tries kill -9 on it: its own module, a 1 s lease, and with
"hang" an agent that never answers (the host is then killed)."""
import importlib.util
import sys
import time

spec = importlib.util.spec_from_file_location("simple_worker", sys.argv[1])
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)
example.LEASE = 1.0
if sys.argv[3] == "hang":

    def run_agent(task, inputs):
        print(f"agent started on {task.id}", flush=True)
        time.sleep(3600)

    example.run_agent = run_agent
example.main(sys.argv[2])
'''


def _first_line(proc: subprocess.Popen[str], within: float) -> str:
    """The first line `proc` prints (or "" if it ends or prints nothing in `within` s)."""
    import selectors

    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(within):
            return ""
    return proc.stdout.readline()


@pytest.mark.rule("WRK-6")
def test_a_killed_worker_s_task_is_requeued_and_finished_once_by_the_next_run(
    tmp_path: Path,
) -> None:
    """kill -9 the example while its agent works on the first task; run it again once
    the lease (1 s) has lapsed: it requeues the task with a ledger row naming the dead
    host, runs it again, and the plan's child task and todo exist once."""
    import signal
    import time

    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    db = tmp_path / "w.db"
    argv = [sys.executable, str(driver), str(EXAMPLE), str(db)]
    hung = subprocess.Popen(
        [*argv, "hang"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert _first_line(hung, 60) == "agent started on t-plan\n"
        with markertools_adapters.connect(db, executor="noop") as store:
            assert store.get_task("t-plan").status == "running"
            lease = store.get_lease("t-plan")
            assert lease is not None and lease.host == "worker-1"
        hung.send_signal(signal.SIGKILL)
        hung.wait(30)
    finally:
        if hung.poll() is None:
            hung.kill()
            hung.wait(30)
    assert hung.returncode == -signal.SIGKILL
    with markertools_adapters.connect(db, executor="noop") as store:
        assert store.get_task("t-plan").status == "running"  # nothing ran its turn's end
        assert store.list_attempts("t-plan") == ()
        assert [t.id for t in store.export_world(0.0).tasks] == ["t-plan"]  # no block ran
    time.sleep(max(0.0, lease.expires_at - time.time()) + 0.2)  # the lease lapses

    again = subprocess.run(
        [*argv, "normal"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr
    assert again.stderr == ""
    lines = again.stdout.splitlines()
    assert lines[:2] == [
        "t-plan (resume): 2 block(s) -> queued",  # the platform interruption resumed
        "t-plan (continuation): 0 block(s) -> completed",
    ], lines
    assert re.fullmatch(r"t-[0-9a-f]{16} \(fresh\): 0 block\(s\) -> completed", lines[2]), lines
    assert lines[3:] == ["nothing queued; alice has spent $0.02 of $10"]
    created = lines[2].split()[0]
    with markertools_adapters.connect(db, executor="noop") as store:
        (attempt,) = store.list_attempts("t-plan")
        assert (attempt.kind, attempt.interrupted_reason) == ("platform_fresh", "worker-1 died")
        plan = store.get_task("t-plan")
        assert (plan.status, plan.result_text) == ("completed", "Done: Plan the release")
        assert store.get_lease("t-plan") is None
        world = store.export_world(0.0)
        assert sorted(t.id for t in world.tasks) == sorted(["t-plan", created])
        children = [t for t in world.tasks if t.parent_task_id == "t-plan"]
        assert [(t.id, t.prompt, t.status) for t in children] == [
            (created, "Make the release tests pass.", "completed")
        ]
        assert [(d.title, d.task_id) for d in world.todos] == [("Review the test results", created)]
        assert store.get_quota("alice").used_usd == Decimal("0.02")  # the dead turn cost nothing
