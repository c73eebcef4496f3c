"""The shared SQL layer (markertools_adapters._sql) and what both SQL adapters build on
it: shipped migration steps stay byte-for-byte frozen, migration step 3 (AUT-3's partial
unique index) refuses - never rewrites - a database whose active automations already
share a name, and the dialects turn shared statement text into their own."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from support.postgres import SKIP_REASON, connect, dsn, pg_dsn, schema

from markertools.domain.model import Automation
from markertools.domain.ports import AutomationNameTaken
from markertools_adapters.postgres import _schema as pg_schema
from markertools_adapters.postgres._codec import POSTGRES
from markertools_adapters.sqlite import _schema as lite_schema
from markertools_adapters.sqlite._codec import SQLITE

__all__ = ["dsn", "schema"]  # fixtures

# sha256 of each shipped SQL step's statements joined by U+001E. A shipped step must never
# change (a database that ran it would silently differ from a fresh one): add a step.
FROZEN = {
    ("sqlite", 0): "4107e5d0b7fe31cd883446a3166e6ad3e1a8f80ba40d9d91bd7adb0cbd9db870",
    ("sqlite", 1): "edc288216ba1e588849ec15a3f7b7009e8e8774685668cbc73177473d61c3bff",
    ("postgres", 0): "c4368b37521247041499368e1eb3ab4b6407790ab054000be2928fc26de84bb6",
    ("postgres", 1): "9501fecf8a8b8286afe60db74f829b7ec48fc0fd8b0d88f3b6d0fb7572651fa8",
}
STEP3 = (
    "CREATE UNIQUE INDEX automations_active_name ON automations (project_id, name)"
    " WHERE status = 'active'"
)


def _sql_steps(migration: tuple[Any, ...]) -> list[tuple[str, ...]]:
    return [tuple(step) for step in migration if not callable(step)]


@pytest.mark.parametrize(("adapter", "module"), [("sqlite", lite_schema), ("postgres", pg_schema)])
def test_shipped_migration_steps_are_byte_for_byte_frozen(adapter: str, module: Any) -> None:
    for (name, index), digest in FROZEN.items():
        if name != adapter:
            continue
        (statements,) = _sql_steps(module.MIGRATIONS[index])
        got = hashlib.sha256("\x1e".join(statements).encode()).hexdigest()
        assert got == digest, f"{adapter} migration {index + 1} changed"
    assert _sql_steps(module.MIGRATIONS[2]) == [(STEP3,)]


def test_shared_statement_text_becomes_each_dialects_own() -> None:
    text = "UPDATE t SET a = ? WHERE id = ? AND status = 'active'"
    assert SQLITE.sql(text) == text
    assert POSTGRES.sql(text) == "UPDATE t SET a = %s WHERE id = %s AND status = 'active'"
    assert (SQLITE.params(3), POSTGRES.params(2)) == ("?, ?, ?", "%s, %s")
    assert POSTGRES.bind_text("a\x00b") != "a\x00b"  # NUL is escaped for PostgreSQL
    assert POSTGRES.stored_text(POSTGRES.bind_text("a\x00\x01b")) == "a\x00\x01b"
    assert SQLITE.bind_text("a\x00b") == "a\x00b"


def _twin(aid: str, status: str = "active") -> Automation:
    return Automation(aid, "p", "nightly", "tick", status=status, created_at=1.0)


@pytest.mark.rule("AUT-3")
def test_sqlite_step_3_refuses_existing_twins_and_changes_nothing(tmp_path: Path) -> None:
    from markertools_adapters.sqlite import SchemaError, SqliteStore, open_store
    from markertools_adapters.sqlite._codec import AUTOMATIONS

    path = tmp_path / "old.db"
    SqliteStore(path, migrate_to=2).close()
    conn = sqlite3.connect(path, isolation_level=None)
    for aid in ("a1", "a2"):
        conn.execute(AUTOMATIONS.insert_sql, AUTOMATIONS.encode(_twin(aid)))
    with pytest.raises(SchemaError, match=r"project 'p': 2 named 'nightly'.*pause or rename"):
        open_store(path)
    assert conn.execute("SELECT version FROM schema_version").fetchone() == (2,)
    assert conn.execute("SELECT count(*) FROM automations WHERE status = 'active'").fetchone() == (
        2,
    )
    conn.execute("UPDATE automations SET status = 'paused' WHERE id = 'a2'")
    conn.close()
    with open_store(path) as store:
        from markertools_adapters.sqlite._schema import LATEST_VERSION

        assert store.schema_version == LATEST_VERSION  # step 3 and every later one ran
        with pytest.raises(AutomationNameTaken):
            store.insert_automation(_twin("a3"))
        assert store.active_automation_names("p") == frozenset({"nightly"})


@pytest.mark.postgres
@pytest.mark.rule("AUT-3")
@pytest.mark.skipif(pg_dsn() is None, reason=SKIP_REASON)
def test_postgres_step_3_refuses_existing_twins_and_changes_nothing(dsn: str, schema: str) -> None:
    from markertools_adapters.postgres import PostgresStore, SchemaError, open_store
    from markertools_adapters.postgres._codec import AUTOMATIONS

    PostgresStore(dsn, schema=schema, migrate_to=2).close()
    with connect(dsn, schema) as conn:
        for aid in ("a1", "a2"):
            conn.execute(AUTOMATIONS.insert_sql, AUTOMATIONS.encode(_twin(aid)))
    with pytest.raises(SchemaError, match=r"project 'p': 2 named 'nightly'.*pause or rename"):
        open_store(dsn, 1, schema=schema)
    with connect(dsn, schema) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (2,)
        conn.execute("UPDATE automations SET status = 'paused' WHERE id = 'a2'")
    with open_store(dsn, 1, schema=schema) as store:
        from markertools_adapters.postgres._schema import LATEST_VERSION

        assert store.schema_version == LATEST_VERSION  # step 3 and every later one ran
        with pytest.raises(AutomationNameTaken):
            store.insert_automation(_twin("a3"))
