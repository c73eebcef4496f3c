"""`markertools deliver --db D --sender S --turn-id T` twice: the second prints the first
report with "replayed": true and the database is unchanged (TRN-9); --deadline bounds
waiting (TRN-11); a turn not delivered says why in "not_delivered" (TRN-10); --db runs
on the system clock, --world stays virtual."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from support.exactly_once import TURN, world
from typer.testing import CliRunner

from markertools_adapters.cli import app
from markertools_adapters.sqlite import create_store_from_world, open_store
from markertools_adapters.world import world_to_json

runner = CliRunner()


def make_db(tmp: Path) -> Path:
    db = tmp / "w.db"
    create_store_from_world(world(), db).close()
    return db


def dump(db: Path) -> dict:
    with open_store(db) as store:
        w = world_to_json(store.export_world(0.0))
    return {k: v for k, v in w.items() if k != "now"}


@pytest.mark.rule("TRN-9")
def test_the_same_turn_id_twice_prints_the_first_report_as_a_replay(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    turn = tmp_path / "turn.md"
    turn.write_text(TURN)
    args = ["deliver", str(turn), "--db", str(db), "--sender", "t-s", "--turn-id", "T1", "--json"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    one = json.loads(first.stdout)
    after_first = dump(db)
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    two = json.loads(second.stdout)
    assert one["replayed"] is False and two["replayed"] is True
    assert one["turn_id"] == two["turn_id"] == "T1"
    assert two["entries"] == one["entries"] and two["message"] == one["message"]
    assert dump(db) == after_first  # the database is unchanged
    human = runner.invoke(app, args[:-1])
    assert "(a replay of the first delivery of this turn id: nothing ran now)" in human.stdout


@pytest.mark.rule("TRN-10")
def test_a_turn_not_delivered_says_why_in_json(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    turn = tmp_path / "turn.md"
    turn.write_text(TURN)
    run = runner.invoke(app, ["deliver", str(turn), "--db", str(db), "--sender", "t-s", "--outcome", "failed", "--json"])
    assert run.exit_code == 0
    doc = json.loads(run.stdout)
    assert doc["delivered"] is False
    assert doc["not_delivered"] == {
        "reason": "outcome-not-completed",
        "message": "the turn ended 'failed', only completed turns are delivered",
    }


@pytest.mark.rule("TRN-11")
def test_deadline_bounds_the_waits_of_a_db_delivery_on_the_system_clock(tmp_path: Path) -> None:
    db = make_db(tmp_path)
    turn = tmp_path / "wait.md"
    turn.write_text('```task-poll\n{"task_id": "t-run", "timeout_seconds": 600, "interval_seconds": 1}\n```\n')
    started = time.monotonic()
    run = runner.invoke(app, ["deliver", str(turn), "--db", str(db), "--sender", "t-s", "--deadline", "1.5", "--json"])
    took = time.monotonic() - started
    assert run.exit_code == 0, run.output
    reason = json.loads(run.stdout)["entries"][0]["reason"]
    assert "NOT finished: stopped waiting after" in reason
    assert 1.0 <= took < 30  # it really waited (system clock), and stopped at the deadline
    bad = runner.invoke(app, ["deliver", str(turn), "--db", str(db), "--sender", "t-s", "--deadline", "-1"])
    assert bad.exit_code == 2 and "--deadline SECONDS must be a finite number >= 0" in bad.stderr
