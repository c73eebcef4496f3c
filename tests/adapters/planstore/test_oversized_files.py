"""Run files far too big to be real are never read whole (issue 37 item 7): a 1.5 GB
sparse `run-*.json` and a 1.2 GB sparse `run-*.jsonl` took `dots serve` to 3.9 GB and
`dots status` to 1.9 GB before the run was set aside. Now a record's size is checked
before it is read (`MAX_RECORD_BYTES`, 64 MiB) and a log is read as a stream, one line
at a time of at most `MAX_LINE_BYTES` (16 MiB). Real sparse files (truncate), the real
commands in processes of their own, their peak memory measured (`ru_maxrss` of the
command, read by a small parent process that runs nothing else): it stays under 200 MB,
a generous bound from the limits (16 MiB of line, plus the interpreter). The run is
flagged (`dots status`: damaged) or set aside (`dots serve`: quarantine/) with a reason
naming the size, and the other runs load."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from support.strategies.plans import role_dict, run_of

from markertools.plans import StartRun
from markertools_adapters import planstore
from markertools_adapters.planstore import MAX_LINE_BYTES, PlanStore, RunJournal, quarantined

PEAK_BOUND_KB = 200 * 1024  # generous: MAX_LINE_BYTES (16 MiB) + the interpreter + the CLI
MEASURED = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[2:], input=sys.argv[1], capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
sys.stdout.write(str(peak) + "\\n" + str(done.returncode) + "\\n" + done.stdout)
sys.stderr.write(done.stderr)
"""
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def measured(*argv: str, stdin: str = "") -> tuple[int, int, str, str]:
    """Run `markertools ARGV` in a process of its own; (its peak RSS in KB, exit code,
    stdout, stderr)."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURED, stdin, sys.executable, "-m", "markertools", *argv],
        capture_output=True, text=True, timeout=300,
    )
    peak, code, out = done.stdout.split("\n", 2)
    return int(peak), int(code), out, done.stderr


def sparse(path: Path, size: int) -> None:
    with open(path, "wb") as fh:
        fh.truncate(size)


def state_with_oversized_runs(tmp: Path) -> tuple[Path, str]:
    """A state directory with one good run, a 1.5 GB sparse record (run `huge`) and a
    normal record whose log is a 1.2 GB sparse file (run `longlog`)."""
    root = tmp / "state"
    with planstore.host(root) as (store, lock):
        good = RunJournal.create(store, lock, run_of([role_dict("reader")]))
        good.submit(StartRun("e1"), 1.0)
        longlog = RunJournal.create(store, lock, attrs.evolve(run_of([role_dict("reader")]), run_id="r2"))
    longlog_id = longlog.state.run_id
    sparse(root / "run-huge.json", 1_500_000_000)
    sparse(root / f"run-{longlog_id}.jsonl", 1_200_000_000)
    return root, longlog_id


@pytest.mark.rule("DOT-2")
def test_dots_status_flags_oversized_runs_without_reading_them(tmp_path: Path) -> None:
    root, longlog = state_with_oversized_runs(tmp_path)
    peak, code, out, err = measured("dots", "status", "--state-dir", str(root))
    assert (code, err) == (0, ""), err
    assert peak < PEAK_BOUND_KB, f"dots status peaked at {peak} KB"
    lines = out.splitlines()
    assert any(line.startswith("run ") and ": running (0/" in line for line in lines), out
    assert (
        "damaged run-huge.json: 1.5 GB (1500000000 bytes), more than the 67108864 bytes this "
        f"file may have (never read) (the next supervisor moves it to {root / 'quarantine'})"
    ) in lines
    assert (
        f"damaged run-{longlog}.jsonl: line 1 is longer than {MAX_LINE_BYTES} bytes, the most a "
        "line of a run's log may have (the log is 1.2 GB; the rest was not read) (the next "
        f"supervisor moves it to {root / 'quarantine'})"
    ) in lines


@pytest.mark.rule("DOT-2", "DOT-11")
def test_dots_serve_quarantines_oversized_runs_without_reading_them(tmp_path: Path) -> None:
    root, longlog = state_with_oversized_runs(tmp_path)
    peak, code, out, err = measured(
        "dots", "serve", "--state-dir", str(root), stdin=json.dumps(INITIALIZE) + "\n"
    )
    assert code == 0, err
    assert peak < PEAK_BOUND_KB, f"dots serve peaked at {peak} KB"
    assert json.loads(out.splitlines()[0])["result"]["serverInfo"]["name"] == "markertools-dots"
    assert "quarantined run-huge.json: 1.5 GB (1500000000 bytes), more than the 67108864 bytes" in err
    assert f"quarantined run-{longlog}.jsonl: line 1 is longer than {MAX_LINE_BYTES} bytes" in err
    aside = {q.file: q for q in quarantined(root)}
    assert "1.5 GB" in aside["run-huge.json"].reason
    assert "the log is 1.2 GB" in aside[f"run-{longlog}.jsonl"].reason
    left = sorted(p.name for p in root.glob("run-*"))
    assert len(left) == 2 and all(longlog not in name for name in left)  # the good run stays


@pytest.mark.rule("DOT-2")
def test_a_notification_too_long_for_one_line_is_kept_as_its_head(tmp_path: Path) -> None:
    """What the store writes stays within the line bound, so it always reads back."""
    with planstore.host(tmp_path / "state") as (store, lock):
        run = RunJournal.create(store, lock, run_of([role_dict("reader")]))
        body = '{"method":"item/completed","params":{"text":"' + '\\"x' * (MAX_LINE_BYTES // 2) + '"}}'
        store.append_raw(run.state.run_id, "notification", 1.0, body)
        store.append_raw(run.state.run_id, "notification", 2.0, "short")
        run.submit(StartRun("e1"), 3.0)
        raw: list[Any] = [
            json.loads(line) for line in store.log_path(run.state.run_id).read_bytes().splitlines()
        ]
        assert all(len(json.dumps(r, ensure_ascii=False)) < MAX_LINE_BYTES for r in raw)
        first = raw[0]
        assert body.startswith(first["notification"]) and first["cut"] == len(body) - len(first["notification"])
        assert store.read_raw(run.state.run_id, "notification")[1] == "short"
        assert [e.event for e in PlanStore(store.root, create=False).read_events(run.state.run_id)] == [
            StartRun("e1")
        ]
