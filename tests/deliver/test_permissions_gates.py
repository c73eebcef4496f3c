"""The permission adapters wired into deliver_turn with the in-memory store: a lookup
that fails (raises, times out, has no tables) narrows cancel / retry to the sender's
lineage (GAT-2) and denies everything else (GAT-4); the report says why."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlite_utils
from support.strategies.files import deliver, files_ports, make_root, make_worktree

from markertools import Command, Task
from markertools.domain.model import Todo
from markertools.domain.ports import PermissionLookup
from markertools.parse.params import (
    AutomationCreateParams,
    QuotaStatusParams,
    TaskCancelParams,
    TaskCostParams,
    TaskCreateParams,
    TaskFilesParams,
    TaskListParams,
    TaskPollParams,
    TaskRetryParams,
    TodoCreateParams,
    TodoListParams,
    TodoUpdateParams,
    WaitThreadsParams,
)
from markertools_adapters.permissions import (
    CallablePermissions,
    SqlitePermissions,
    grant_permissions,
)
from markertools_adapters.worktrees import WorktreeFiles

ERROR = "permission service down"

SENDER = Task("t1", "p1", created_by="u1")
CHILD = Task("child", "p1", created_by="u2", parent_task_id="t1")  # lineage only
PEER = Task("peer", "p1", created_by="u1")  # same creator only
FAILED_CHILD = Task("failed-child", "p1", status="failed", created_by="u2", parent_task_id="t1")
FAILED_PEER = Task("failed-peer", "p1", status="failed", created_by="u1")
TASKS = (SENDER, CHILD, PEER, FAILED_CHILD, FAILED_PEER)


def _raising(user: str | None, project: str, permission: str) -> bool:
    raise ConnectionError(ERROR)


def _hanging(user: str | None, project: str, permission: str) -> bool:
    time.sleep(30)
    return True


def _no_tables(tmp_path: Path) -> PermissionLookup:
    path = tmp_path / "perm.db"
    sqlite_utils.Database(path).table("unrelated").insert({"x": 1})
    return SqlitePermissions(path)


FAILING: dict[str, Callable[[Path], PermissionLookup]] = {
    "raises": lambda tmp: CallablePermissions(_raising, 5.0),
    "times-out": lambda tmp: CallablePermissions(_hanging, 0.05),
    "no-tables": _no_tables,
}


@pytest.mark.rule("GAT-2")
@pytest.mark.parametrize("failure", sorted(FAILING))
def test_failed_lookup_narrows_cancel_and_retry_to_lineage(tmp_path: Path, failure: str) -> None:
    store, ports = files_ports(TASKS, files_port=None, permissions=FAILING[failure](tmp_path))
    report = deliver(
        ports,
        Command("task-cancel", 1, TaskCancelParams("child")),
        Command("task-cancel", 2, TaskCancelParams("peer")),
        Command("task-retry", 3, TaskRetryParams("failed-child")),
        Command("task-retry", 4, TaskRetryParams("failed-peer")),
    )
    outcome = {e.target: e for e in report.entries}
    assert outcome["child"].outcome == "done"
    assert outcome["failed-child"].outcome == "done"
    assert outcome["peer"].outcome == "rejected"
    assert outcome["failed-peer"].outcome == "rejected"
    for entry in report.entries:  # every entry says the lookup failed
        text = entry.reason.render("en").lower()
        assert "lookup" in text and "fail" in text, text
    status = {t.id: t.status for t in store.export_world(0).tasks}
    assert status["child"] == "interrupted"
    assert status["failed-child"] == "queued"
    assert status["peer"] == "running"  # same-creator-only targets are untouched
    assert status["failed-peer"] == "failed"


@pytest.mark.rule("GAT-2")
def test_working_table_lookup_still_allows_same_creator(tmp_path: Path) -> None:
    db_path = tmp_path / "perm.db"
    grant_permissions(sqlite_utils.Database(db_path), "u1", "p1", ["create_task", "approve_merge"])
    store, ports = files_ports(TASKS, files_port=None, permissions=SqlitePermissions(db_path))
    report = deliver(
        ports,
        Command("task-cancel", 1, TaskCancelParams("peer")),
        Command("task-retry", 2, TaskRetryParams("failed-peer")),
    )
    assert [e.outcome for e in report.entries] == ["done", "done"]
    status = {t.id: t.status for t in store.export_world(0).tasks}
    assert status["peer"] == "interrupted" and status["failed-peer"] == "queued"


@pytest.mark.rule("GAT-4")
@pytest.mark.parametrize("failure", sorted(FAILING))
def test_failed_lookup_denies_every_other_kind(tmp_path: Path, failure: str) -> None:
    root, _ = make_root(tmp_path)
    make_worktree(root, "child")
    store, ports = files_ports(
        TASKS, files_port=WorktreeFiles(root, "h1"), permissions=FAILING[failure](tmp_path)
    )
    store.insert_todo(Todo("d1", "p1", title="existing"))
    before = store.export_world(0)
    commands = [
        Command("task-create", 1, TaskCreateParams(prompt="spawn")),
        Command("todo-create", 2, TodoCreateParams(title="new todo")),
        Command("todo-update", 3, TodoUpdateParams(id="d1", title="renamed")),
        Command("automation-create", 4, AutomationCreateParams(prompt="nightly")),
        Command("task-list", 5, TaskListParams()),
        Command("todo-list", 6, TodoListParams()),
        Command("task-cost", 7, TaskCostParams("child")),
        Command("quota-status", 8, QuotaStatusParams()),
        Command("task-files", 9, TaskFilesParams("child")),
        Command("task-poll", 10, TaskPollParams("child")),
        Command("wait-threads", 11, WaitThreadsParams(("child",), timeout_seconds=0)),
    ]
    report = deliver(ports, *commands)
    assert len(report.entries) == len(commands)
    for entry in report.entries:
        assert entry.outcome == "rejected", (entry.kind, entry.reason.render("en"))
        text = entry.reason.render("en")
        assert "fail" in text.lower() or "timed out" in text, (entry.kind, text)
    after = store.export_world(0)
    assert after.tasks == before.tasks
    assert after.todos == before.todos
    assert after.automations == before.automations
