"""Store outages and silent errors, with real processes (FLT-3, FLT-4): a PostgreSQL
server of the test's own is stopped for 3 s while a task's turn runs - the host stays up,
logs when the outage began and ended with its cause, and the task completes; stopped
longer than `--store-outage-seconds`, the host exits 75 with one line. A store error no
retry cures (a table dropped under the host) is a line on stderr naming the cause and a
non-zero exit, never silence."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from support.fleet import private_postgres, start_host
from support.worker import PROJECT, USER, add_task, routed

from markertools import Project, Quota
from markertools_adapters.codex.fakemodel import Text
from markertools_adapters.opener import connect


def _seed(db: str | Path) -> Any:
    store = connect(db, executor="noop")
    store.put_project(Project(PROJECT, "demo"))
    store.set_permissions(USER, PROJECT, ["read", "create_task"])
    store.put_quota(Quota(USER, total_usd=10))
    return store


@pytest.mark.rule("FLT-3", "FLT-4")
def test_a_3_second_database_restart_mid_turn_is_ridden_out(
    offline_codex: Any, tmp_path: Path
) -> None:
    router = routed(offline_codex)
    router.on("steady", lambda last, texts: Text("done after the restart", delay=6.0))
    with private_postgres() as (dsn, server):
        store = _seed(dsn)
        try:
            add_task(store, "t-1", "[agent:steady] keep going")
        finally:
            store.close()
        host = start_host(
            offline_codex,
            tmp_path,
            dsn,
            "h1",
            "--until-idle",
            "--lease-seconds",
            "30",
            "--store-outage-seconds",
            "60",
        )
        host.wait_for("turn_started", task_id="t-1")
        server.halt()
        time.sleep(3)
        server.resume()
        code = host.finish(timeout=180)
        assert code == 0, host.stderr
        store = connect(dsn, executor="noop")
        try:
            task = store.get_task("t-1")
            assert (task.status, task.result_text) == ("completed", "done after the restart")
            assert store.list_attempts("t-1") == ()  # never requeued: the turn kept running
        finally:
            store.close()
    began = [line for line in host.stderr if "the store outage began:" in line]
    ended = [line for line in host.stderr if "the store outage ended after" in line]
    assert len(began) == 1 and len(ended) >= 1, host.stderr
    assert began[0].startswith("markertools worker run: warning: the store outage began: StoreUnavailable")
    kinds = host.kinds()
    assert "outage_began" in kinds and "outage_ended" in kinds
    assert kinds.index("outage_began") < kinds.index("outage_ended")


@pytest.mark.rule("FLT-3")
def test_an_outage_longer_than_the_budget_exits_75_with_one_line(
    offline_codex: Any, tmp_path: Path
) -> None:
    router = routed(offline_codex)
    router.on("steady", lambda last, texts: Text("never delivered", delay=3.0))
    with private_postgres() as (dsn, server):
        store = _seed(dsn)
        try:
            add_task(store, "t-1", "[agent:steady] keep going")
        finally:
            store.close()
        host = start_host(
            offline_codex,
            tmp_path,
            dsn,
            "h1",
            "--lease-seconds",
            "30",
            "--store-outage-seconds",
            "2",
            "--grace-seconds",
            "1",
        )
        host.wait_for("turn_started", task_id="t-1")
        server.halt()
        try:
            code = host.finish(timeout=120)
        finally:
            server.resume()
    assert code == 75, host.stderr
    errors = [line for line in host.stderr if ": error: " in line]
    assert errors and errors[0].startswith(
        "markertools worker run: error: the store was unavailable for "
    ), host.stderr
    assert "longer than the outage budget of 2 s (--store-outage-seconds)" in errors[0]
    assert not any(line.startswith("Traceback") for line in host.stderr)


@pytest.mark.rule("FLT-4", "FLT-8")
def test_a_store_error_no_retry_cures_is_said_on_stderr_and_the_host_fails(
    offline_codex: Any, tmp_path: Path
) -> None:
    """The issue's silent host: a damaged database used to leave stderr empty while
    tasks were delivered and never finished. A table dropped under a running host is a
    StoreError (not retried as an outage): one line with the cause, exit 1."""
    router = routed(offline_codex)
    router.on("steady", lambda last, texts: Text("fine", delay=30.0))
    db = tmp_path / "w.db"
    store = _seed(db)
    try:
        add_task(store, "t-1", "[agent:steady] keep going")
    finally:
        store.close()
    host = start_host(
        offline_codex, tmp_path, str(db), "h1", "--lease-seconds", "30", "--grace-seconds", "1"
    )
    host.wait_for("turn_started", task_id="t-1")
    with sqlite3.connect(db) as raw:  # what a careless migration or a bad restore does
        raw.execute("DROP TABLE task_waits")
    code = host.finish(timeout=120)
    assert code == 1, host.stderr
    assert any(
        line.startswith("markertools worker run: error: ")
        and "no such table: task_waits" in line
        for line in host.stderr
    ), host.stderr
    assert not any(line.startswith("Traceback") for line in host.stderr)
