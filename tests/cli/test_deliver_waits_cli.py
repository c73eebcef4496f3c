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
from support.terminal import markertools

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


def task_ids_with_prompt(db: Path, prompt: str) -> list[str]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT id FROM tasks WHERE prompt = ? ORDER BY id", (prompt,))
        return [str(r[0]) for r in rows]


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
    probe = task_ids_with_prompt(db, "Probe the checkout latency.")[0]
    assert shown.replace("^C", "").strip().splitlines()[-1] == (
        "markertools: interrupted: the turn was not delivered completely and no report was "
        f"queued; blocks that finished before Ctrl-C stay applied (task-create → {probe}); "
        "deliver again with --turn-id turn-1 to apply the rest exactly once"
    ), shown
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


# ---- what a waiting delivery shows (issue 36, item 2) -------------------------------------

BASIC = REPO / "examples" / "transcripts" / "basic.md"
GIFT_CARDS = (
    "Add property tests for cart/totals.py covering gift cards combined with coupons. "
    "Do not change production code."
)
WAITING_LINE = (
    r"deliver is waiting: task-poll \(line 24\) for (t-[0-9a-f]+) to finish, checked every "
    r"60 s · at most (\d+:\d\d) more \(--deadline 600 s\) · Ctrl-C stops"
)


def _loaded(tmp_path: Path) -> Path:
    db = tmp_path / "shop.db"
    assert cli("world", "load", str(SHOP), "--db", str(db)).returncode == 0
    return db


@pytest.mark.rule("TRN-11", "TRN-9")
def test_the_readme_delivery_in_a_terminal_says_what_it_waits_for_and_ctrl_c_stops_it(
    tmp_path: Path,
) -> None:
    """The README's turn on the database the README makes: its task-poll waits on the
    real clock (wait_seconds 900, cut by the 600 s deadline). The terminal says so on one
    status line; Ctrl-C ends it with one line naming what stayed applied, exit 130, and
    the same --turn-id finishes the turn without doing any block twice."""
    db = _loaded(tmp_path)
    args = ["deliver", str(BASIC), "--db", str(db), "--sender", "t-lead", "--turn-id", "r1"]
    term = markertools(*args)
    waiting = term.wait_for_pattern(WAITING_LINE)
    gift_cards = task_ids_with_prompt(db, GIFT_CARDS)
    assert [waiting.group(1)] == gift_cards  # the poll of @gift-cards, as delivery resolved it
    term.ctrl_c()
    assert term.exit_code() == 130
    screen = term.screen()
    assert "Traceback" not in screen
    world = json.loads(cli("world", "dump", "--db", str(db)).stdout)
    audit = [(a["kind"], a["target"]) for a in world["audit"]]
    assert [kind for kind, _ in audit] == [
        "task-create", "task-create", "todo-create", "automation-create", "task-cancel"
    ]  # fmt: skip
    finished = ", ".join(f"{kind} → {target}" for kind, target in audit)
    assert screen.replace("^C", "").strip().splitlines()[-1] == (
        "markertools: interrupted: the turn was not delivered completely and no report was "
        f"queued; blocks that finished before Ctrl-C stay applied ({finished}); deliver "
        "again with --turn-id r1 to apply the rest exactly once"
    )
    assert [f for f in world["followups"] if f["task_id"] == "t-lead"] == []  # no report
    again = cli(*args, "--deadline", "0", "--json")
    assert again.returncode == 0, again.stderr
    doc = json.loads(again.stdout)
    assert doc["report_queued"] is True and doc["replayed"] is False
    assert len(task_ids_with_prompt(db, GIFT_CARDS)) == 1  # not created twice


@pytest.mark.rule("TRN-11")
def test_no_status_line_with_json_or_on_a_pipe(tmp_path: Path) -> None:
    db = _loaded(tmp_path)
    args = ["deliver", str(BASIC), "--db", str(db), "--sender", "t-lead", "--deadline", "3"]
    piped = cli(*args)  # not a terminal: stdout and stderr are pipes
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == ""
    assert "because the delivery's deadline passed (3 s from its start" in piped.stdout
    term = markertools(*args, "--json", "--turn-id", "j1")
    assert term.exit_code() == 0
    screen = term.screen()
    assert "deliver is waiting" not in screen and "Ctrl-C" not in screen
    assert json.loads(screen)["turn_id"] == "j1"


@pytest.mark.rule("TRN-11")
def test_the_readme_deliver_db_example_gives_up_in_seconds(tmp_path: Path) -> None:
    """The README's two lines, as written (with /tmp/ made this test's directory): the
    database it makes, then the delivery to it, whose poll is bounded by --deadline."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = [
        line.split("#", 1)[0].strip().replace("/tmp/", f"{tmp_path}/")
        for line in readme.splitlines()
        if line.startswith(".venv/bin/markertools ")
        and "/tmp/shop.db" in line
        and " view " not in line
    ]
    assert [line.split()[1:3] for line in lines] == [
        ["world", "load"],
        ["deliver", "examples/transcripts/basic.md"],
    ]
    deliver = lines[1].split()
    deadline = float(deliver[deliver.index("--deadline") + 1])
    assert deadline <= 10  # seconds, not the 600 s default: a newcomer is not kept waiting
    for line in lines:
        done = cli(*line.split()[1:], cwd=REPO)
        assert done.returncode == 0, done.stderr
    assert f"because the delivery's deadline passed ({deadline:g} s from its start" in done.stdout
