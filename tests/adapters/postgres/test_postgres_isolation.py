"""PostgreSQL: the compare-and-set transitions do not depend on the server's defaults, and
hosts creating a new schema at once do not trip over each other.

Each race here is made deterministic: another session (a plain connection, like another
host) changes the row inside an open transaction, the store's call is started and
observed blocking on that row lock (pg_stat_activity), then the other session commits.
The store must then see the newest row - "changed meanwhile" - also when the database's
default_transaction_isolation is SERIALIZABLE (where a statement that waited for a
concurrent update would otherwise fail with a serialization error)."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from support.postgres import SKIP_REASON, connect, dsn, pg_dsn, schema

from markertools.domain.model import Automation, Task, Todo
from markertools_adapters.postgres import LATEST_VERSION, PostgresStore
from markertools_adapters.postgres._schema import MIGRATION_LOCK

pytestmark = [pytest.mark.postgres, pytest.mark.skipif(pg_dsn() is None, reason=SKIP_REASON)]
__all__ = ["dsn", "schema"]  # fixtures


def _conninfo(dsn: str, app: str, **settings: str) -> str:
    """`dsn` with an application_name (to find the store's sessions) and `-c` settings."""
    from psycopg.conninfo import make_conninfo

    options = " ".join(f"-c {name}={value}" for name, value in settings.items())
    extra = {"options": options} if options else {}
    return make_conninfo(dsn, application_name=app, **extra)


def _blocked(dsn: str, app: str) -> bool:
    with connect(dsn) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE application_name = %s AND wait_event_type = 'Lock'",
            (app,),
        ).fetchone()
    return row is not None and row[0] > 0


def _until(condition: Callable[[], bool], what: str, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def _behind_a_committed_writer(
    dsn: str, schema: str, app: str, writer_sql: str, call: Callable[[], Any]
) -> tuple[str, Any]:
    """Run `call()` while another session holds `writer_sql` uncommitted; commit it once
    `call` waits for the row lock. Returns ("ok", value) or ("raised", exception)."""
    outcome: list[tuple[str, Any]] = []

    def run() -> None:
        try:
            outcome.append(("ok", call()))
        except Exception as exc:  # reported to the test
            outcome.append(("raised", exc))

    with connect(dsn, schema) as writer:
        with writer.transaction():
            writer.execute(writer_sql)
            thread = threading.Thread(target=run, daemon=True)
            thread.start()
            _until(lambda: _blocked(dsn, app) or not thread.is_alive(), "the store to block")
        thread.join(60)
    assert not thread.is_alive()
    (result,) = outcome
    return result


@pytest.fixture(params=["server default", "serializable", "repeatable read"])
def strict_store(request: pytest.FixtureRequest, dsn: str, schema: str) -> Any:
    """A store whose connections would default to the given isolation level."""
    app = "mt_iso_" + secrets.token_hex(4)
    settings = (
        {}
        if request.param == "server default"
        else {"default_transaction_isolation": request.param.replace(" ", "\\ ")}
    )
    store = PostgresStore(_conninfo(dsn, app, **settings), pool_size=2, schema=schema)
    store.app = app  # type: ignore[attr-defined]
    yield store
    store.close()


def test_every_store_connection_runs_read_committed(strict_store: Any) -> None:
    assert strict_store._db.read_one("SHOW transaction_isolation") == ("read committed",)
    with strict_store._db.write() as conn:
        row = conn.execute("SHOW transaction_isolation").fetchone()
    assert row == ("read committed",)
    waiter = strict_store.change_waiter()  # its LISTEN connection is set up the same way
    assert waiter.listening


@pytest.mark.rule("CTL-4")
def test_a_transition_behind_a_committed_writer_is_changed_meanwhile(
    strict_store: Any, dsn: str
) -> None:
    store = strict_store
    store.insert_task(Task(id="t", project_id="p", status="running"))
    result = _behind_a_committed_writer(
        dsn,
        store.schema,
        store.app,
        "UPDATE tasks SET status = 'failed', error_text = 'other host' WHERE id = 't'",
        lambda: store.transition_task("t", "running", {"status": "interrupted"}),
    )
    assert result == ("ok", None)  # changed meanwhile, not a serialization error
    task = store.get_task("t")
    assert task is not None and (task.status, task.error_text) == ("failed", "other host")
    # and the transition from the status it now has still works
    result = _behind_a_committed_writer(
        dsn,
        store.schema,
        store.app,
        "UPDATE tasks SET error_text = 'touched' WHERE id = 't'",  # status stays 'failed'
        lambda: store.transition_task("t", "failed", {"status": "queued", "error_text": None}),
    )
    assert result[0] == "ok" and result[1] is not None and result[1].status == "queued"


@pytest.mark.rule("CTL-4")
def test_a_todo_update_behind_a_committed_writer_is_changed_meanwhile(
    strict_store: Any, dsn: str
) -> None:
    store = strict_store
    store.insert_todo(Todo(id="d", project_id="p", status="pending"))
    result = _behind_a_committed_writer(
        dsn,
        store.schema,
        store.app,
        "UPDATE todos SET status = 'completed' WHERE id = 'd'",
        lambda: store.update_todo("d", "pending", {"status": "blocked"}),
    )
    assert result == ("ok", None)
    todo = store.get_todo("d")
    assert todo is not None and todo.status == "completed"


@pytest.mark.rule("ATT-2")
def test_a_requeue_behind_a_committed_writer_records_nothing(strict_store: Any, dsn: str) -> None:
    store = strict_store
    store.insert_task(Task(id="f", project_id="p", status="failed", result_text="out"))
    result = _behind_a_committed_writer(
        dsn,
        store.schema,
        store.app,
        "UPDATE tasks SET status = 'queued' WHERE id = 'f'",
        lambda: store.requeue_platform("f", "failed", "platform_fresh", -1, 5.0),
    )
    assert result[0] == "ok"
    assert result[1].ok is False and "changed meanwhile" in (result[1].error or "")
    assert store.list_attempts("f") == ()
    task = store.get_task("f")
    assert task is not None and (task.status, task.auto_resume_count) == ("queued", 0)


@pytest.mark.rule("SCH-4")
def test_a_claim_behind_a_committed_claim_of_the_slot_loses(strict_store: Any, dsn: str) -> None:
    store = strict_store
    store.insert_automation(
        Automation(
            id="a",
            project_id="p",
            name="n",
            prompt="x",
            interval_seconds=60,
            first_run_at=1000.0,
            created_at=0.0,
        )
    )
    result = _behind_a_committed_writer(
        dsn,
        store.schema,
        store.app,
        "UPDATE automations SET run_count = 1, last_slot_at = 1000, last_run_at = 1500"
        " WHERE id = 'a'",
        lambda: store.claim_automation("a", 1000.0, 2000.0),
    )
    assert result == ("ok", False)  # the other host won this slot; no error
    automation = store.get_automation("a")
    assert automation is not None and (automation.run_count, automation.last_run_at) == (1, 1500.0)


def test_a_host_creating_the_same_new_schema_meanwhile_is_waited_for(dsn: str, schema: str) -> None:
    """Another host is creating the schema (uncommitted) when this one opens it: this one
    waits and then uses it, instead of failing with a duplicate-key error."""
    app = "mt_iso_" + secrets.token_hex(4)
    result = _behind_a_committed_writer(
        dsn,
        "public",
        app,
        f"{MIGRATION_LOCK % repr(schema)}; CREATE SCHEMA {schema}",
        lambda: PostgresStore(_conninfo(dsn, app), pool_size=1, schema=schema),
    )
    assert result[0] == "ok", result
    store = result[1]
    try:
        assert store.schema == schema and store.schema_version == LATEST_VERSION
    finally:
        store.close()
