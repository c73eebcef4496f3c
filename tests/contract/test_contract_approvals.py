"""Approvals on every store (memory, the toy kit store, SQLite, PostgreSQL): a request is
stored only for a running task, with its project and attempt taken from the task row
(APR-1); it is answered once by compare-and-set - the first of many concurrent answers
wins, nothing answers it after its expiry or once its task left `running` (APR-3); the
project's rules keep their order (APR-2); the pending requests of running tasks are read
in one call and in the fleet snapshot `worker status --json` shows (APR-4); a requeue
expires a task's pending requests in its own transaction, with the reason (APR-5)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from markertools import ApprovalRequest, ApprovalRule, Task, TaskChange, worker_status_json
from markertools.domain.model import PermissionGrant, Project
from markertools_adapters.world import World

MakeStore = Callable[[World], Any]
NOW = 1_798_333_200.0


def _world() -> World:
    return World(
        now=NOW,
        projects=(Project("p1", "shop"), Project("p2", "other")),
        permissions=(PermissionGrant("u1", "p1", ("read", "create_task")),),
        tasks=(
            Task("t1", "p1", status="running", created_by="u1", auto_resume_count=2),
            Task("t2", "p1", status="running", created_by="u1", parent_task_id="t1"),
            Task("t3", "p1", status="queued", created_by="u1"),
            Task("t9", "p2", status="running", created_by="u1"),
        ),
    )


def _ask(rid: str, task: str = "t1", at: float = NOW, **kw: Any) -> ApprovalRequest:
    kw.setdefault("kind", "command")
    if kw["kind"] == "command":
        kw.setdefault("command", ("uv", "run", "pytest"))
    return ApprovalRequest(rid, task, "ignored", asked_at=at, expires_at=at + 900, **kw)


@pytest.mark.rule("APR-1")
def test_a_request_is_stored_for_a_running_task_with_its_project_and_attempt(
    make_store: MakeStore,
) -> None:
    store = make_store(_world())
    stored = store.insert_approval(
        _ask("apr-1", cwd="/w/t1", reason="run the tests", command=("uv", "run", "pytest", "é"))
    )
    assert (stored.project_id, stored.attempt, stored.status) == ("p1", 2, "pending")
    assert store.get_approval("apr-1") == stored
    change = _ask(
        "apr-2",
        "t2",
        at=NOW + 1,
        kind="file_change",
        paths=("/w/t2/a.py", "/w/t2/b\x01.py"),
        diff_summary="+3 -1",
    )
    assert store.insert_approval(change) == attrs.evolve(change, project_id="p1", attempt=0)
    assert store.get_approval("nope") is None
    for refused, message in (
        (_ask("apr-3", "t3"), "approval request for task 't3': the task is 'queued', not running"),
        (
            _ask("apr-3", "ghost"),
            "approval request for task 'ghost': the task is missing, not running",
        ),
        (_ask("apr-1", "t2"), "approval request 'apr-1' already exists"),
        (
            _ask("apr-3", kind="shell"),
            "approval kind must be one of command, file_change, permission; got 'shell'",
        ),
        (
            _ask("apr-3", kind="command", command=None),
            "approval command: a command request needs its argv",
        ),
    ):
        with pytest.raises(ValueError) as error:
            store.insert_approval(refused)
        assert str(error.value) == message
    assert [a.id for a in store.list_approvals()] == ["apr-1", "apr-2"]
    assert store.list_approvals("p2") == ()
    assert [a.id for a in store.list_approvals("p1", task_id="t2")] == ["apr-2"]
    assert store.list_approvals(None, statuses=["approved"]) == ()
    assert store.list_approvals(None, statuses=[]) == ()


@pytest.mark.rule("APR-3")
def test_a_request_is_answered_once_and_never_after_its_expiry_or_its_task(
    make_store: MakeStore,
) -> None:
    store = make_store(_world())
    store.insert_approval(_ask("apr-1"))
    store.insert_approval(_ask("apr-2", "t2"))
    store.insert_approval(_ask("apr-3"))
    assert (
        store.answer_approval("apr-1", "approved", answered_by="x", reason=None, now=NOW + 900)
        is None
    )
    first = store.answer_approval(
        "apr-1", "approved", answered_by="person:ana", reason="fine", now=NOW + 5
    )
    assert (first.status, first.answered_by, first.answer_reason, first.answered_at) == (
        "approved",
        "person:ana",
        "fine",
        NOW + 5,
    )
    assert (
        store.answer_approval("apr-1", "denied", answered_by="task:t9", reason=None, now=NOW + 6)
        is None
    )
    assert store.expire_approval("apr-1", answered_by="expiry", reason="late", now=NOW + 7) is None
    assert store.get_approval("apr-1") == first
    store.transition_task("t2", "running", TaskChange(status="interrupted"))
    assert (
        store.answer_approval("apr-2", "denied", answered_by="x", reason=None, now=NOW + 1) is None
    )
    expired = store.expire_approval(
        "apr-2", answered_by="withdrawn", reason="the turn ended", now=NOW + 8
    )
    assert (expired.status, expired.answered_by, expired.answer_reason) == (
        "expired",
        "withdrawn",
        "the turn ended",
    )
    with pytest.raises(ValueError, match="an answer's status must be one of approved, denied"):
        store.answer_approval("apr-3", "expired", answered_by="x", reason=None, now=NOW)
    assert store.get_approval("apr-3").status == "pending"
    assert store.answer_approval("ghost", "approved", answered_by="x", reason=None, now=NOW) is None


@pytest.mark.rule("APR-3")
def test_of_concurrent_answers_exactly_one_wins(make_store: MakeStore) -> None:
    store = make_store(_world())
    store.insert_approval(_ask("apr-1"))
    wins: list[str] = []
    errors: list[BaseException] = []

    def answer(n: int) -> None:
        try:
            status = "approved" if n % 2 else "denied"
            if store.answer_approval(
                "apr-1", status, answered_by=f"person:{n}", reason=None, now=NOW + 1
            ):
                wins.append(f"person:{n}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=answer, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(wins) == 1
    assert store.get_approval("apr-1").answered_by == wins[0]


@pytest.mark.rule("APR-5")
@pytest.mark.parametrize("how", ["requeue_platform", "requeue_expired"])
def test_a_requeue_expires_the_tasks_pending_requests_in_its_transaction(
    make_store: MakeStore, how: str
) -> None:
    world = attrs.evolve(
        _world(), tasks=(Task("t1", "p1", status="queued", created_by="u1"), *_world().tasks[1:])
    )
    store = make_store(world)
    store.claim_task("p1", "h1", now=NOW, lease_seconds=30.0)
    store.insert_approval(_ask("apr-1"))
    store.insert_approval(_ask("apr-2", at=NOW + 1))
    store.insert_approval(_ask("apr-9", "t2"))
    store.answer_approval("apr-2", "denied", answered_by="person:ana", reason=None, now=NOW + 2)
    if how == "requeue_platform":
        result = store.requeue_platform(
            "t1", "running", "platform_fresh", -1, NOW + 40, reason="host h1 stopped"
        )
    else:
        result = store.requeue_expired(
            "t1", "h1", NOW + 40, affinity_seconds=60.0, reason="host h1 stopped"
        )
    assert result.ok, result.error
    expired = store.get_approval("apr-1")
    assert (expired.status, expired.answered_by, expired.answer_reason, expired.answered_at) == (
        "expired",
        "requeue",
        "its task was requeued before an answer (host h1 stopped)",
        NOW + 40,
    )
    assert store.get_approval("apr-2").status == "denied"  # answered before: untouched
    assert store.get_approval("apr-9").status == "pending"  # another task's
    # a requeue that is refused expires nothing
    refused = store.requeue_platform("t2", "queued", "platform_fresh", -1, NOW + 50)
    assert not refused.ok
    assert store.get_approval("apr-9").status == "pending"


@pytest.mark.rule("APR-4")
def test_pending_requests_of_running_tasks_and_the_fleet_snapshot(make_store: MakeStore) -> None:
    store = make_store(_world())
    store.insert_approval(_ask("apr-2", at=NOW + 1))
    store.insert_approval(_ask("apr-1", at=NOW + 1))
    store.insert_approval(_ask("apr-0", at=NOW + 2, kind="file_change", paths=("a",)))
    store.insert_approval(_ask("apr-5", "t2"))
    store.insert_approval(_ask("apr-8", "t9"))
    store.answer_approval("apr-0", "approved", answered_by="x", reason=None, now=NOW + 3)
    pending = store.pending_approvals(["t1", "t2", "t3", "ghost"])
    assert {k: [a.id for a in v] for k, v in pending.items()} == {
        "t1": ["apr-1", "apr-2"],
        "t2": ["apr-5"],
    }
    store.transition_task("t2", "running", TaskChange(status="completed"))
    assert list(store.pending_approvals(["t1", "t2"])) == ["t1"]
    assert store.pending_approvals([]) == {}
    snapshot = store.fleet_snapshot("p1", NOW + 10)
    assert [a.id for a in snapshot.approvals_pending] == ["apr-1", "apr-2"]
    assert worker_status_json(snapshot)["approvals_pending"] == [
        {
            "id": "apr-1",
            "task_id": "t1",
            "kind": "command",
            "command": ["uv", "run", "pytest"],
            "asked_at": NOW + 1,
        },
        {
            "id": "apr-2",
            "task_id": "t1",
            "kind": "command",
            "command": ["uv", "run", "pytest"],
            "asked_at": NOW + 1,
        },
    ]
    everywhere = store.fleet_snapshot(None, NOW + 10)
    assert [a.id for a in everywhere.approvals_pending] == ["apr-8", "apr-1", "apr-2"]


@pytest.mark.rule("APR-2")
def test_rules_keep_their_order_per_project_and_refuse_what_could_never_match(
    make_store: MakeStore,
) -> None:
    store = make_store(_world())
    added = [
        store.add_approval_rule(
            ApprovalRule(
                "r-b",
                "p1",
                "allow",
                prefix=("uv", "run", "pytest"),
                created_at=NOW,
                created_by="ana",
            )
        ),
        store.add_approval_rule(ApprovalRule("r-a", "p1", "deny", path_glob="secrets/**")),
        store.add_approval_rule(ApprovalRule("r-c", "p2", "deny", kind="permission")),
        store.add_approval_rule(ApprovalRule("r-d", "p1", "allow", kind="file_change")),
    ]
    assert [r.position for r in added] == [1, 2, 1, 3]
    assert [r.id for r in store.approval_rules("p1")] == ["r-b", "r-a", "r-d"]
    assert store.get_approval_rule("r-b") == added[0]
    assert store.remove_approval_rule("r-a") is True
    assert store.remove_approval_rule("r-a") is False
    assert store.get_approval_rule("r-a") is None
    assert store.add_approval_rule(ApprovalRule("r-e", "p1", "deny", kind="command")).position == 4
    assert [r.id for r in store.approval_rules("p1")] == ["r-b", "r-d", "r-e"]
    for bad, message in (
        (ApprovalRule("r-b", "p1", "deny", kind="command"), "approval rule 'r-b' already exists"),
        (
            ApprovalRule("r-f", "p1", "allow", prefix=("ls", "|")),
            "rule prefix: '|' holds shell syntax or is blank",
        ),
        (ApprovalRule("r-f", "p1", "allow"), "rule: give a kind, an argv prefix or a path glob"),
    ):
        with pytest.raises(ValueError) as error:
            store.add_approval_rule(bad)
        assert str(error.value) == message
    assert [r.id for r in store.approval_rules("p1")] == ["r-b", "r-d", "r-e"]


def test_a_tasks_engine_is_stored_and_checked(make_store: MakeStore) -> None:
    """The storage half of ENG-1 (the host's choice is the worker's): a task's `engine`
    round-trips and insert_task refuses an unknown one."""
    store = make_store(_world())
    store.insert_task(Task("t7", "p1", status="queued", engine="claude-code", created_at=NOW))
    assert store.get_task("t7").engine == "claude-code"
    assert store.get_task("t1").engine is None
    with pytest.raises(ValueError, match="task engine must be one of codex, claude-code"):
        store.insert_task(Task("t8", "p1", status="queued", engine="gpt", created_at=NOW))
    assert store.get_task("t8") is None
    exported = store.export_world(NOW)
    assert [t.engine for t in exported.tasks if t.id == "t7"] == ["claude-code"]
