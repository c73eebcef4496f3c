"""`--db postgresql://...` wherever `--db PATH` is accepted (docs/cli.md): `world load`,
`world dump`, `deliver`, `prompt`; and the dispatch helper markertools_adapters.stores.open_db.
Server tests use a fresh schema selected through the URL's search_path option."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.postgres import SKIP_REASON, connect, dsn, pg_dsn, schema
from typer.testing import CliRunner

from markertools_adapters.cli import app
from markertools_adapters.memory import MemoryStore
from markertools_adapters.stores import create_db_from_world, is_postgres_url, open_db, redact
from markertools_adapters.world import World, dumps_world, loads_world

runner = CliRunner()
needs_server = pytest.mark.skipif(pg_dsn() is None, reason=SKIP_REASON)
__all__ = ["dsn", "schema"]  # fixtures

WORLD = {
    "now": 1798333200,
    "projects": [{"id": "p1", "name": "shop"}],
    "permissions": [{"user": "u1", "project": "p1", "grants": ["read", "create_task"]}],
    "tasks": [
        {"id": "t1", "project_id": "p1", "created_by": "u1", "prompt": "root"},
        {
            "id": "t2",
            "project_id": "p1",
            "parent_task_id": "t1",
            "created_by": "u1",
            "prompt": "child",
            "status": "running",
        },
    ],
    "todos": [{"id": "d1", "project_id": "p1", "title": "write notes"}],
    "costs": [{"task_id": "t1", "round": 1, "usd": 0.5, "tokens": 7}],
}


def _url(dsn: str, schema: str) -> str:
    sep = "&" if "?" in dsn else "?"
    return f"{dsn}{sep}options=-csearch_path%3D{schema}"


def _make_schema(dsn: str, schema: str) -> str:
    """Create the empty schema; returns the URL that selects it."""
    with connect(dsn) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    return _url(dsn, schema)


def _world_file(tmp_path: Path) -> Path:
    src = tmp_path / "w.json"
    src.write_text(json.dumps(WORLD), encoding="utf-8")
    return src


def _table_count(dsn: str, schema: str) -> Any:
    with connect(dsn, schema) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchone()


# ---- the dispatch helper (no server needed) ---------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgresql://h/db", True),
        ("postgres://u@h:5432/db", True),
        ("POSTGRESQL://h/db", True),
        ("postgresql:/h/db", False),  # what pathlib makes of a URL: not one any more
        ("w.db", False),
        ("./postgresql://x", False),
        ("", False),
    ],
)
def test_urls_are_recognised_by_their_scheme_only(text: str, expected: bool) -> None:
    assert is_postgres_url(text) is expected
    assert is_postgres_url(Path("postgresql://h/db")) is False


def test_redact_hides_passwords_only() -> None:
    assert redact("postgresql://bob:s3cr%40t@h:5/db") == "postgresql://bob:***@h:5/db"
    assert redact("postgres://h/db?sslmode=require&password=x&a=1") == (
        "postgres://h/db?sslmode=require&password=***&a=1"
    )
    assert redact("postgresql://bob@h/db") == "postgresql://bob@h/db"
    assert redact("/tmp/a:b@c.db") == "/tmp/a:b@c.db"


def test_a_path_opens_sqlite(tmp_path: Path) -> None:
    from markertools_adapters.sqlite import SqliteStore

    with pytest.raises(FileNotFoundError):
        open_db(tmp_path / "missing.db", must_exist=True)
    store = create_db_from_world(World(), tmp_path / "a.db")
    store.close()
    with open_db(str(tmp_path / "a.db"), must_exist=True) as opened:
        assert isinstance(opened, SqliteStore)


def test_a_refused_connection_is_one_line_without_the_password() -> None:
    url = "postgresql://bob:sekret@127.0.0.1:1/x?connect_timeout=2"
    for args in (["world", "dump", "--db", url], ["deliver", "-", "--db", url, "--sender", "t"]):
        result = runner.invoke(app, args, input="")
        assert result.exit_code == 2
        assert "sekret" not in result.output and "bob:***@" in result.output
        assert result.output.count("\n") == 1 and "Traceback" not in result.output


# ---- against the server -------------------------------------------------------------------


@needs_server
def test_world_load_then_dump_round_trips_like_sqlite(
    dsn: str, schema: str, tmp_path: Path
) -> None:
    url = _make_schema(dsn, schema)
    src = _world_file(tmp_path)
    loaded = runner.invoke(app, ["world", "load", str(src), "--db", url])
    assert loaded.exit_code == 0, loaded.output
    assert loaded.stdout.startswith(f"created {url} from {src}: 1 project, 2 tasks, 1 todo")
    dumped = runner.invoke(app, ["world", "dump", "--db", url])
    assert dumped.exit_code == 0, dumped.output
    given = loads_world(src.read_text())
    assert (
        dumped.stdout == dumps_world(MemoryStore.from_world(given).export_world(given.now)) + "\n"
    )
    lite = tmp_path / "w.db"
    assert runner.invoke(app, ["world", "load", str(src), "--db", str(lite)]).exit_code == 0
    assert runner.invoke(app, ["world", "dump", "--db", str(lite)]).stdout == dumped.stdout


@needs_server
def test_world_load_refuses_a_schema_that_holds_records(
    dsn: str, schema: str, tmp_path: Path
) -> None:
    url = _make_schema(dsn, schema)
    src = _world_file(tmp_path)
    assert runner.invoke(app, ["world", "load", str(src), "--db", url]).exit_code == 0
    again = runner.invoke(app, ["world", "load", str(src), "--db", url])
    assert again.exit_code == 2
    assert "already has" in again.output and again.output.count("\n") == 1


@needs_server
def test_world_dump_never_creates_tables(dsn: str, schema: str) -> None:
    result = runner.invoke(app, ["world", "dump", "--db", _make_schema(dsn, schema)])
    assert result.exit_code == 2 and "holds no markertools tables" in result.output
    assert _table_count(dsn, schema) == (0,)


@needs_server
@pytest.mark.rule("CTL-2", "CTL-4")
def test_deliver_against_a_postgres_database_changes_it(
    dsn: str, schema: str, tmp_path: Path
) -> None:
    url = _make_schema(dsn, schema)
    src = _world_file(tmp_path)
    assert runner.invoke(app, ["world", "load", str(src), "--db", url]).exit_code == 0
    turn = tmp_path / "turn.md"
    turn.write_text('Stopping it.\n\n```task-cancel\n{"task_id": "t2"}\n```\n', encoding="utf-8")
    result = runner.invoke(app, ["deliver", str(turn), "--db", url, "--sender", "t1", "--json"])
    assert result.exit_code == 0, result.output
    out: Any = json.loads(result.stdout)
    assert [(e["kind"], e["outcome"], e["target"]) for e in out["entries"]] == [
        ("task-cancel", "done", "t2")
    ]
    dumped = loads_world(runner.invoke(app, ["world", "dump", "--db", url]).stdout)
    assert {t.id: t.status for t in dumped.tasks}["t2"] == "interrupted"
    assert [f.task_id for f in dumped.followups] == ["t1"]


@needs_server
def test_prompt_reads_a_postgres_database_like_a_sqlite_one(
    dsn: str, schema: str, tmp_path: Path
) -> None:
    url = _make_schema(dsn, schema)
    src = _world_file(tmp_path)
    lite = tmp_path / "w.db"
    shown = {}
    for db in (url, str(lite)):
        assert runner.invoke(app, ["world", "load", str(src), "--db", db]).exit_code == 0
        result = runner.invoke(app, ["prompt", "--db", db, "--task", "t2", "--json"])
        assert result.exit_code == 0, result.output
        out = json.loads(result.stdout)
        shown[db] = (out["task"], out["sections"], out["goal"])
    assert shown[url] == shown[str(lite)]
    assert shown[url][0] == "t2"
    missing = runner.invoke(app, ["prompt", "--db", url, "--task", "nope"])
    assert missing.exit_code == 2 and "no such task" in missing.output


@needs_server
def test_prompt_never_creates_tables_in_a_postgres_schema(dsn: str, schema: str) -> None:
    result = runner.invoke(app, ["prompt", "--db", _make_schema(dsn, schema), "--task", "t1"])
    assert result.exit_code == 2 and "holds no markertools tables" in result.output
    assert result.output.count("\n") == 1
    assert _table_count(dsn, schema) == (0,)
