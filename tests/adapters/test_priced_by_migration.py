"""Migration step 11 (a cost row's `priced_by`, issue 39) on a database written before it:
a version-10 SQLite file or PostgreSQL schema keeps its cost rows (who priced them: not
said), a turn it finished replays from the same input (FLT-6: the stored digest still
matches) and new rows say who priced them (WRK-8)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from support.postgres import drop_schema
from test_money_migration import Old

from markertools import CostRow, TurnCost
from markertools_adapters.postgres._schema import LATEST_VERSION as PG_LATEST
from markertools_adapters.sqlite._schema import LATEST_VERSION as SQLITE_LATEST

V10 = 10  # the last schema version without costs.priced_by


class Old10(Old):
    def create(self) -> None:
        if self.engine == "sqlite":
            from markertools_adapters.sqlite import SqliteStore

            SqliteStore(self.path, migrate_to=V10).close()
        else:
            from markertools_adapters.postgres import PostgresStore

            PostgresStore(self.dsn, schema=self.schema, migrate_to=V10).close()


@pytest.fixture(params=["sqlite", "postgres"])
def old(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Old10]:
    database = Old10(request.param, tmp_path)
    database.create()
    yield database
    if request.param == "postgres":
        drop_schema(database.dsn, database.schema)


def test_both_engines_are_at_step_11() -> None:
    assert SQLITE_LATEST == PG_LATEST == 11


@pytest.mark.rule("WRK-8", "FLT-6")
def test_a_version_10_database_keeps_its_costs_and_replays_its_finished_turns(
    old: Old10,
) -> None:
    no, yes = (False, True) if old.engine == "postgres" else (0, 1)
    old.execute(
        "INSERT INTO tasks (id, project_id, status, created_by, executor, goal_mode,"
        " is_coordinator, prompt, created_at, auto_resume_count, turn, epoch) VALUES"
        " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [("t1", "p1", "completed", "u1", "local", no, no, "fix the bug", 1.5, 0, 1, 1)],
    )
    old.execute(
        "INSERT INTO costs (task_id, round, tokens, estimated, priced, usd_micros)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [("t1", 1, 5, no, yes, 1_500_000)],
    )
    # the entry and digest a version-10 markertools kept for finish_turn(t1, turn-1, ...)
    canonical = ["completed", "ok", None, ["1500000", 5, False, True], False]
    digest = (
        "finish:"
        + hashlib.sha256(json.dumps(canonical, separators=(",", ":")).encode()).hexdigest()
    )
    entry = {
        "status": "completed",
        "changed": True,
        "cost": [1, 1_500_000, 5, False, True],
        "charged": None,
        "digest": digest,
    }
    old.execute(
        "INSERT INTO finished_turns (task_id, turn_id, entry) VALUES (?, ?, ?)",
        [("t1", "turn-1", json.dumps(entry))],
    )
    with old.open() as store:
        first = CostRow("t1", 1, Decimal("1.5"), 5)
        assert store.task_costs("t1") == (first,)
        assert first.priced_by is None
        replay = store.finish_turn(
            "t1", "turn-1", outcome="completed", result_text="ok", cost=TurnCost("1.5", 5)
        )
        assert replay.replayed and replay.digest == digest and replay.cost == first
        store.charge_turn("t1", "turn-2", TurnCost("0.5", 7, priced_by="claude-code"))
        assert [(r.round, r.priced_by) for r in store.task_costs("t1")] == [
            (1, None),
            (2, "claude-code"),
        ]
    assert old.version() == 11
