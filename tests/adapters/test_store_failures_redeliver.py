"""The database fails in the middle of a delivery (TRN-8, TRN-9): SQLite "database is
locked" beyond the busy timeout, and the real PostgreSQL server cutting the store's
connections. The blocks hit are rejected with the reason, the report is not queued
(the result says why), the store recovers by itself, and delivering the same turn id
again completes the turn exactly once - equal to one clean delivery."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from support.exactly_once import deliver, snapshot, world
from support.postgres import SKIP_REASON, connect, pg_dsn, throwaway_store

from markertools_adapters.sqlite import create_store_from_world, open_store


def without_audit(s: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in s.items() if k != "audit"}


@pytest.mark.rule("TRN-8", "TRN-9")
def test_sqlite_locked_beyond_the_busy_timeout_then_redelivered_exactly_once(tmp_path: Path) -> None:
    clean = create_store_from_world(world(), tmp_path / "clean.db")
    deliver(clean)
    expected = without_audit(snapshot(clean))
    clean.close()
    path = tmp_path / "locked.db"
    create_store_from_world(world(), path).close()
    store = open_store(path, busy_timeout=0.2)
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        report = deliver(store)
    finally:
        other.execute("ROLLBACK")
        other.close()
    rejected = [e for e in report.entries if e.outcome == "rejected"]
    assert rejected and all("database is locked" in e.reason.render("en") for e in rejected)
    assert report.report_queued is False
    assert "could not be recorded" in (report.report_error or "")
    again = deliver(store)
    assert again.report_queued and not again.replayed
    assert [e.outcome for e in again.entries] == ["done"] * 6
    assert without_audit(snapshot(store)) == expected
    assert deliver(store).replayed is True
    store.close()


@pytest.mark.postgres
@pytest.mark.rule("TRN-8", "TRN-9")
@pytest.mark.skipif(pg_dsn() is None, reason=SKIP_REASON)
def test_postgres_connections_cut_mid_delivery_then_redelivered_exactly_once() -> None:
    clean = throwaway_store(world())
    deliver(clean)
    expected = without_audit(snapshot(clean))
    clean.close()
    store = throwaway_store(world(), pool_size=2)
    admin = connect(pg_dsn() or "")

    class CutOnce:
        """Terminates the store's server connections at its 3rd effect write."""

        def __init__(self, inner: Any) -> None:
            self.inner, self.calls = inner, 0

        def __getattr__(self, name: str) -> Any:
            value = getattr(self.inner, name)
            if name not in ("insert_todo", "transition_task"):
                return value

            def cut(*a: Any, **k: Any) -> Any:
                self.calls += 1
                if self.calls == 1:
                    admin.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                        "AND application_name NOT LIKE 'with_postgres%'"
                    )
                return value(*a, **k)

            return cut

    try:
        report = deliver(CutOnce(store))
        rejected = [e for e in report.entries if e.outcome == "rejected"]
        assert rejected, report.entries
        reasons = [e.reason.render("en") for e in rejected]
        cut = (
            "AdminShutdown: terminating connection due to administrator command",
            "OperationalError: the connection is closed",  # when the pool noticed first
        )
        assert all(
            r.startswith("rejected: a storage or service call failed (")
            and r.endswith("); nothing else was changed by this block")
            and any(c in r for c in cut)
            for r in reasons
        ), reasons
        assert report.report_queued is False
        again = deliver(store)  # the pool has reconnected by itself
        assert again.report_queued, again.report_error
        assert [e.outcome for e in again.entries] == ["done"] * 6
        assert without_audit(snapshot(store)) == expected
        assert deliver(store).replayed is True
    finally:
        admin.close()
        store.close()
