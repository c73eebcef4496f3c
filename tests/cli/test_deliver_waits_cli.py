"""How long `markertools deliver` waits, and Ctrl-C while it does: `--deadline` defaults to
the library's DEFAULT_DELIVERY_DEADLINE (TRN-11); Ctrl-C during a `deliver --db` that
waits on the real clock is one line and exit 130, and the same `--turn-id` finishes the
turn exactly once (TRN-9)."""

from __future__ import annotations

import json
import os
import pty
import sqlite3
import time
from pathlib import Path

import pytest
from support.cli import EXE, cli
from support.paths import REPO

from markertools import DEFAULT_DELIVERY_DEADLINE

SHOP = REPO / "examples" / "worlds" / "shop.json"


POLL_900 = (
    '```task-poll\n{"task_id": "t-api", "timeout_seconds": 900, "interval_seconds": 60}\n```\n'
)


@pytest.mark.rule("TRN-11")
@pytest.mark.parametrize(
    ("extra", "waited", "says"),
    [
        ((), 600, "because the delivery's deadline passed (600 s from its start"),
        (
            ("--deadline", "700"),
            700,
            "because the delivery's deadline passed (700 s from its start",
        ),
        (("--deadline", "none"), 900, "NOT finished: timed out after 900 s"),
    ],
)
def test_deliver_deadline_defaults_to_the_library_default(
    tmp_path: Path, extra: tuple[str, ...], waited: int, says: str
) -> None:
    assert DEFAULT_DELIVERY_DEADLINE == 600
    turn = tmp_path / "poll.md"
    turn.write_text(POLL_900)
    done = cli("deliver", str(turn), "--world", str(SHOP), "--sender", "t-lead", *extra)
    assert done.returncode == 0, done.stderr
    assert says in done.stdout
    assert f"virtual time passed: {waited} s" in done.stdout


WAITING_TURN = (
    '```task-create\n{"name": "probe", "prompt": "Probe the checkout latency."}\n```\n\n'
    '```task-poll\n{"task_id": "t-api", "timeout_seconds": 3600, "interval_seconds": 60}\n```\n'
)


def tasks_with_prompt(db: Path, prompt: str) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        (count,) = conn.execute("SELECT count(*) FROM tasks WHERE prompt = ?", (prompt,)).fetchone()
    return int(count)


def run_in_a_pty(args: list[str], db: Path, prompt: str) -> tuple[int, str]:
    """Run the command on a new pseudo-terminal (its controlling terminal, the command the
    foreground process group); once its task-create is in the database - it is polling
    then - type Ctrl-C. Returns (exit status, everything the terminal showed)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: exec the command on the pty
        os.execv(str(EXE), [str(EXE), *args])
    shown = b""
    try:
        give_up = time.monotonic() + 60
        while tasks_with_prompt(db, prompt) == 0:
            assert time.monotonic() < give_up, "the delivery never created its task"
            time.sleep(0.05)
        os.write(fd, b"\x03")  # Ctrl-C: the terminal sends SIGINT to the foreground group
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), shown.decode("utf-8", "replace")


@pytest.mark.rule("TRN-9")
def test_ctrl_c_while_a_db_delivery_waits_is_one_line_and_the_turn_id_finishes_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "shop.db"
    assert cli("world", "load", str(SHOP), "--db", str(db)).returncode == 0
    turn = tmp_path / "turn.md"
    turn.write_text(WAITING_TURN)
    args = ["deliver", str(turn), "--db", str(db), "--sender", "t-lead", "--turn-id", "turn-1"]
    code, shown = run_in_a_pty(args, db, "Probe the checkout latency.")
    assert code == 130, shown
    assert "Traceback" not in shown
    lines = [line for line in shown.replace("^C", "").splitlines() if line.strip()]
    assert lines == [
        "markertools: interrupted: the turn was not delivered completely and no report was "
        "queued; blocks that finished before Ctrl-C stay applied; deliver again with "
        "--turn-id turn-1 to apply the rest exactly once"
    ], shown
    # the same turn id finishes the turn: the task it created is not created again
    again = cli(*args, "--deadline", "0", "--json")
    assert again.returncode == 0, again.stderr
    doc = json.loads(again.stdout)
    assert [(e["kind"], e["outcome"]) for e in doc["entries"]] == [
        ("task-create", "done"),
        ("task-poll", "done"),
    ]
    assert "because the delivery's deadline passed (0 s" in doc["entries"][1]["reason"]
    assert doc["report_queued"] is True
    assert tasks_with_prompt(db, "Probe the checkout latency.") == 1
