"""CST-2 for databases written before issue 27: migration step 6 turns the float dollar
columns of a version-5 database (costs.usd, quotas.total_usd / used_usd) into exact
micro-dollar columns, so the old database reads back the amounts it showed and adds
charges exactly from then on; an amount the records refuse (negative, infinite) stops the
migration with a SchemaError naming the row, and the database is left as it was. On
SQLite and on PostgreSQL."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from support.postgres import drop_schema, new_schema_name, require_dsn

from markertools import CostRow, Quota

V5 = 5  # the last schema version with float dollar columns
# what a version-5 markertools wrote: floats, one of them the sum 0.1 + 0.2
OLD_COSTS = [("t1", 1, 0.12, 3000, 0, 1), ("t1", 2, None, 500, 0, 0), ("t2", 1, 0.1 + 0.2, 7, 1, 1)]
OLD_QUOTAS = [("u1", 50.0, 12.5), ("u2", None, 0.30000000000000004)]


class Old:
    """A version-5 database of one engine: write rows the old way, then open it."""

    def __init__(self, engine: str, tmp: Path) -> None:
        self.engine = engine
        self.path = tmp / "old.db"
        self.dsn = require_dsn() if engine == "postgres" else ""
        self.schema = new_schema_name()

    def create(self) -> None:
        if self.engine == "sqlite":
            from markertools_adapters.sqlite import SqliteStore

            SqliteStore(self.path, migrate_to=V5).close()
        else:
            from markertools_adapters.postgres import PostgresStore

            PostgresStore(self.dsn, schema=self.schema, migrate_to=V5).close()

    def execute(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        if self.engine == "sqlite":
            conn = sqlite3.connect(self.path, isolation_level=None)
            conn.executemany(sql, rows)
            conn.close()
        else:
            from support.postgres import connect

            with connect(self.dsn, self.schema) as conn, conn.cursor() as cur:
                cur.executemany(sql.replace("?", "%s"), rows)

    def version(self) -> int:
        if self.engine == "sqlite":
            conn = sqlite3.connect(self.path)
            try:
                return int(conn.execute("SELECT version FROM schema_version").fetchone()[0])
            finally:
                conn.close()
        from support.postgres import connect

        with connect(self.dsn, self.schema) as conn:
            row = conn.execute("SELECT version FROM schema_version").fetchone()
            assert row is not None
            return int(row[0])

    def open(self) -> Any:
        import markertools_adapters

        if self.engine == "sqlite":
            return markertools_adapters.connect(self.path, executor="noop")
        return markertools_adapters.connect(self.dsn, executor="noop", schema=self.schema)


@pytest.fixture(params=["sqlite", "postgres"])
def old(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Old]:
    database = Old(request.param, tmp_path)
    database.create()
    yield database
    if request.param == "postgres":
        drop_schema(database.dsn, database.schema)


def fill(old: Old, costs: list[tuple[Any, ...]], quotas: list[tuple[Any, ...]]) -> None:
    old.execute(
        "INSERT INTO costs (task_id, round, usd, tokens, estimated, priced)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [(*row[:4], *(bool(b) if old.engine == "postgres" else b for b in row[4:])) for row in costs],
    )
    old.execute('INSERT INTO quotas ("user", total_usd, used_usd) VALUES (?, ?, ?)', quotas)


@pytest.mark.rule("CST-2")
def test_an_old_database_reads_back_its_amounts_exactly_and_charges_exactly(old: Old) -> None:
    fill(old, OLD_COSTS, OLD_QUOTAS)
    with old.open() as store:
        assert store.task_costs("t1") == (
            CostRow("t1", 1, Decimal("0.12"), 3000),
            CostRow("t1", 2, None, 500, priced=False),
        )
        assert store.task_costs("t2") == (CostRow("t2", 1, Decimal("0.3"), 7, estimated=True),)
        assert store.get_quota("u1") == Quota("u1", Decimal("50"), Decimal("12.5"))
        assert store.get_quota("u2") == Quota("u2", None, Decimal("0.3"))
        assert store.charge_quota("u2", 0.1) == Quota("u2", None, Decimal("0.4"))
        assert store.charge_quota("u2", 0.2).used_usd == Decimal("0.6")
        assert store.export_world(0.0).quotas[1] == Quota("u2", None, Decimal("0.6"))
    assert old.version() > V5


@pytest.mark.rule("CST-2")
def test_an_amount_the_records_refuse_stops_the_migration_and_changes_nothing(old: Old) -> None:
    from markertools_adapters._sql import SchemaError

    fill(old, [("t1", 1, -0.5, 10, 0, 1)], [("u1", float("inf"), 1.0)])
    with pytest.raises(SchemaError) as refused:
        old.open()
    assert str(refused.value) == (
        "cannot convert 2 amount(s) to exact micro-dollars: "
        "costs seq=1: usd: must not be negative, got -0.5; "
        "quotas user='u1': total_usd: must be a finite amount, got inf; "
        "correct them with an older markertools, then open the database again"
    )
    assert old.version() == V5
    old.execute("UPDATE costs SET usd = ? WHERE usd < 0", [(0.5,)])
    old.execute('UPDATE quotas SET total_usd = ? WHERE "user" = ?', [(None, "u1")])
    with old.open() as store:
        assert store.task_costs("t1") == (CostRow("t1", 1, Decimal("0.5"), 10),)
        assert store.get_quota("u1") == Quota("u1", None, 1)
