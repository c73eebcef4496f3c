"""FLT-8, one root, as a user meets it: a worker wraps its calls in `except
MarkertoolsError` (docs/errors.md's first example) and catches every refusal the library
makes on purpose - a bad database URL, an unknown or a missing executor, a database that
is not there, a taken automation name, a token for a task that is not running, an
unknown marker kind, text that is not JSON - with the one line of reason, on the
in-memory, SQLite and PostgreSQL stores alike. A database that does not exist is a
StoreError a retry cannot cure, never StoreUnavailable."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.postgres import drop_schema, new_schema_name, require_dsn

import markertools_adapters
from markertools import Automation, MarkertoolsError, mint_task_token, render_guide
from markertools.plans import loads_strict
from markertools_adapters import StoreError, StoreUnavailable
from markertools_adapters.clock import SystemClock, SystemRandom
from markertools_adapters.memory import MemoryStore
from markertools_adapters.wiring import store_ports

NOW = 1_800_000_000.0
FORMS = (
    "sqlite:///PATH (or a plain file path), sqlite:///:memory:, "
    "postgresql://USER@HOST/DB, or memory:"
)


def caught(call: Callable[[], object]) -> MarkertoolsError:
    """What `except MarkertoolsError` around `call` catches (the test fails when nothing
    is raised, or something that is not a MarkertoolsError)."""
    try:
        call()
    except MarkertoolsError as exc:
        return exc
    raise AssertionError("nothing was raised")


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """A database URL of each kind (and the keywords `connect` needs for it)."""
    if request.param == "memory":
        yield "memory:", {}
    elif request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'w.db'}", {}
    else:
        dsn, schema = require_dsn(), new_schema_name()
        try:
            yield dsn, {"schema": schema}
        finally:
            drop_schema(dsn, schema)


@pytest.mark.rule("FLT-8")
def test_an_unknown_and_a_missing_executor_are_caught_with_the_reason(
    url: tuple[str, dict[str, Any]],
) -> None:
    name, options = url
    unknown = caught(lambda: markertools_adapters.connect(name, executor="nope", **options))  # type: ignore[arg-type]
    assert str(unknown) == "unknown executor 'nope'; expected one of noop, local, docker"
    assert isinstance(unknown, ValueError)  # the base it had
    missing = caught(lambda: markertools_adapters.connect(name, **options))
    assert str(missing) == (
        "connect needs executor=: what stops a cancelled task's processes (CTL-2) - "
        '"local" (process groups), "docker" (containers) or a TaskExecutor; pass "noop" '
        "to choose, knowingly, that a task-cancel changes the status and signals nothing"
    )
    assert isinstance(missing, TypeError)


@pytest.mark.rule("FLT-8")
def test_a_taken_name_and_a_refused_token_are_caught_on_every_store(
    url: tuple[str, dict[str, Any]],
) -> None:
    name, options = url
    with markertools_adapters.connect(name, executor="noop", **options) as store:
        store.insert_automation(Automation("a1", "p1", "nightly", "do it", created_at=NOW))
        again = Automation("a2", "p1", "nightly", "do it too", created_at=NOW)
        taken = caught(lambda: store.insert_automation(again))
        assert str(taken) == "an active automation of project 'p1' is already named 'nightly'"
        refused = caught(
            lambda: mint_task_token(store, "t9", now=NOW, token_hex=SystemRandom().token_hex)
        )
        assert isinstance(refused, ValueError)
        assert str(refused) == "no task 't9': a token binds an existing running task"


@pytest.mark.rule("FLT-8")
@pytest.mark.parametrize(
    ("given", "reason"),
    [
        (
            "mysql://root:secret@db/shop",
            f"mysql://root:***@db/shop: unknown database URL scheme 'mysql'; expected {FORMS}",
        ),
        ("", f"no database named; expected {FORMS}"),
        (
            "sqlite://w.db",
            "sqlite://w.db: a SQLite URL names a path after three slashes"
            " (sqlite:///relative.db, sqlite:////absolute.db)",
        ),
    ],
)
def test_a_url_markertools_does_not_open_is_caught_as_a_store_error(
    given: str, reason: str
) -> None:
    exc = caught(lambda: markertools_adapters.connect(given, executor="noop"))
    assert str(exc) == reason
    assert isinstance(exc, StoreError) and isinstance(exc, ValueError)
    assert not isinstance(exc, StoreUnavailable)  # no retry cures a bad URL


@pytest.mark.rule("FLT-8")
def test_a_sqlite_database_that_is_not_there_is_a_store_error_not_unavailable(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "missing.db"
    exc = caught(
        lambda: markertools_adapters.connect(
            f"sqlite:///{missing}", executor="noop", must_exist=True
        )
    )
    assert str(exc) == f"{missing}: no such database file"
    assert isinstance(exc, StoreError) and not isinstance(exc, StoreUnavailable)
    assert isinstance(exc, FileNotFoundError)  # the base it had
    assert not missing.exists()

    text = tmp_path / "notes.db"
    text.write_text("these are notes, not a database\n" * 40, encoding="utf-8")
    exc = caught(lambda: markertools_adapters.connect(text, executor="noop", must_exist=True))
    assert str(exc) == "not a markertools database: DatabaseError: file is not a database"
    assert isinstance(exc, StoreError) and isinstance(exc, ValueError)
    assert not isinstance(exc, StoreUnavailable)

    empty = tmp_path / "empty.db"
    empty.touch()
    exc = caught(lambda: markertools_adapters.connect(empty, executor="noop", must_exist=True))
    assert str(exc) == "not a markertools database: the file is empty"
    assert empty.stat().st_size == 0  # nothing was written


@pytest.mark.rule("FLT-8")
def test_a_sqlite_database_held_locked_is_the_retryable_one(tmp_path: Path) -> None:
    path = tmp_path / "held.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE schema_version (version INTEGER)")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        exc = caught(
            lambda: markertools_adapters.connect(
                path, executor="noop", must_exist=True, busy_timeout=0.05
            )
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert isinstance(exc, StoreUnavailable)
    assert str(exc) == "OperationalError: database is locked"


@pytest.mark.rule("FLT-8")
def test_a_postgresql_database_that_does_not_exist_is_a_store_error_not_unavailable() -> None:
    dsn = require_dsn()
    base, _, _ = dsn.rpartition("/")
    exc = caught(lambda: markertools_adapters.connect(f"{base}/no_such_db_flt8", executor="noop"))
    assert isinstance(exc, StoreError) and not isinstance(exc, StoreUnavailable)
    assert str(exc).startswith("OperationalError: connection failed: ")
    assert 'database "no_such_db_flt8" does not exist' in str(exc)
    bad = caught(lambda: markertools_adapters.connect(f"{dsn}?nonsense=1", executor="noop"))
    assert (
        str(bad) == 'invalid PostgreSQL connection string: invalid URI query parameter: "nonsense"'
    )
    assert isinstance(bad, markertools_adapters.BadDatabaseUrl) and isinstance(bad, ValueError)


@pytest.mark.rule("FLT-8")
def test_the_cores_own_refusals_are_caught_by_the_root() -> None:
    kind = caught(lambda: render_guide(kinds=["task-craete"]))
    assert str(kind).startswith("unknown marker kind 'task-craete'; did you mean 'task-create'?")
    assert isinstance(kind, ValueError)
    not_json = caught(lambda: loads_strict("{"))
    assert isinstance(not_json, ValueError) and "line 1" in str(not_json)
    store = MemoryStore()
    wiring: Any = store_ports  # the call a worker that forgot the executor makes
    no_executor = caught(lambda: wiring(store, clock=SystemClock(), random=SystemRandom()))
    assert str(no_executor).startswith("store_ports needs executor=: ")
    assert isinstance(no_executor, TypeError)
