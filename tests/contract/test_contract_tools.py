"""Same-turn tools on every store (memory, the toy kit store, SQLite, PostgreSQL): a task's
turn number and thread id, the per-turn call ledger (TOL-4), the follow-ups a call holds
until its turn's report (TOL-7), task tokens (TOL-3) - revoked in the transaction of any
change that takes the task out of running - the audit record's source (TOL-2), and
`deliver_call` through each store: caps shared with the turn's blocks, lineage caps,
exactly once (TOL-5) and the refused senders."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest

from markertools import (
    Task,
    TaskChange,
    TaskTokenRefused,
    authorize_task_token,
    call_result_json,
    deliver_call,
    deliver_turn,
    mint_task_token,
    revoke_task_tokens,
    token_hash,
)
from markertools.domain.model import PermissionGrant, Project
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

MakeStore = Callable[[World], Any]
NOW = 1_798_333_200.0
WAIT = {"task_ids": ["t2"], "timeout_seconds": 1}
WAIT_BLOCK = '```wait-threads\n{"task_ids": ["t2"], "timeout_seconds": 1}\n```'
OVER_WAIT_CAP = (
    "over the per-turn cap: at most 2 wait-threads block(s) run per turn (wait-threads,"
    " wait_threads count together); this was block 3, so it was ignored"
)


def _world(*tasks: Task) -> World:
    return World(
        now=NOW,
        projects=(Project("p1", "shop"),),
        permissions=(PermissionGrant("u1", "p1", ("read", "create_task", "approve_merge")),),
        tasks=tasks,
    )


def _task(tid: str, status: str = "running", created: float = 0.0, **kw: Any) -> Task:
    return Task(tid, "p1", status=status, created_by="u1", created_at=created, **kw)


def _ports(store: Any, now: float = NOW) -> Any:
    return store_ports(
        store, clock=VirtualClock(now), random=SeededRandom(1), executor=NoopExecutor()
    )


_TOKENS = SeededRandom(7)


def _mint(store: Any, tid: str = "t1", ttl: float = 60.0) -> str:
    return mint_task_token(store, tid, now=NOW, token_hex=_TOKENS.token_hex, ttl_seconds=ttl).token


# ---- the turn number and the thread id ------------------------------------------------


@pytest.mark.rule("TOL-4")
def test_a_claim_and_taking_followups_advance_the_turn(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1", "queued"), _task("t2", "queued", created=1.0)))
    assert store.get_task("t1").turn == 0
    claim = store.claim_task("p1", "h1")
    assert claim.task.id == "t1" and claim.task.turn == 1
    assert store.get_task("t1").turn == 1
    assert store.take_followups("t1") == ()  # nothing handed out: no new turn
    assert store.get_task("t1").turn == 1
    store.enqueue_followup("t1", "next")
    assert store.take_followups("t1") == ("next",)
    assert store.get_task("t1").turn == 2  # a new turn starts
    claimed = store.claim_next_task("p1", "h1")
    assert claimed.id == "t2" and claimed.turn == 1


@pytest.mark.rule("TOL-4")
def test_a_claim_that_takes_followups_advances_the_turn_once(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1", "queued", turn=3)))
    store.enqueue_followup("t1", "continue")
    claim = store.claim_task("p1", "h1")
    assert claim.followups == ("continue",)
    assert claim.task.turn == 4 and store.get_task("t1").turn == 4


def test_the_thread_id_and_turn_are_stored_and_exported(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1", turn=5)))
    store.set_thread_id("t1", "thread-abc")
    task = store.get_task("t1")
    assert (task.thread_id, task.turn) == ("thread-abc", 5)
    (exported,) = store.export_world(NOW).tasks
    assert (exported.thread_id, exported.turn) == ("thread-abc", 5)
    with pytest.raises(LookupError):
        store.set_thread_id("nope", "x")


# ---- the call ledger ----------------------------------------------------------------------


@pytest.mark.rule("TOL-4")
def test_turn_use_counts_per_task_turn_and_kind(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1")))
    assert store.turn_usage("t1", 1) == {}
    assert [store.record_turn_use("t1", 1, "wait-threads") for _ in range(3)] == [1, 2, 3]
    assert store.record_turn_use("t1", 1, "task-poll") == 1
    assert store.record_turn_use("t1", 2, "wait-threads") == 1
    assert dict(store.turn_usage("t1", 1)) == {"wait-threads": 3, "task-poll": 1}
    assert dict(store.turn_usage("t1", 2)) == {"wait-threads": 1}


@pytest.mark.rule("TOL-7")
def test_held_followups_are_queued_by_release_or_by_the_next_take(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1"), _task("t2")))
    store.enqueue_followup("t1", "report")
    store.hold_followup("t1", 1, "/goal a")
    store.hold_followup("t2", 1, "/goal b")
    assert store.release_held_followups("t1") == ("/goal a",)
    assert store.release_held_followups("t1") == ()
    assert store.take_followups("t1") == ("report", "/goal a")
    # t2's turn queued no report: the next take hands the held follow-up out
    assert store.take_followups("t2") == ("/goal b",)
    assert store.take_followups("t2") == ()


# ---- task tokens (TOL-3) ------------------------------------------------------------------


@pytest.mark.rule("TOL-3")
def test_a_token_binds_its_running_task_until_it_expires(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1")))
    token = _mint(store, ttl=60.0)
    assert token.startswith("mtt_") and len(token) >= 4 + 32
    stored = store.task_token(token_hash(token))
    assert (stored.task_id, stored.expires_at, stored.revoked) == ("t1", NOW + 60.0, False)
    assert store.task_token(token) is None  # only the hash is stored
    assert authorize_task_token(store, token, NOW + 59).task_id == "t1"
    expired = authorize_task_token(store, token, NOW + 60)
    assert expired.task_id is None
    assert expired.refusal.render() == "not authorised: token expired"
    assert token not in expired.refusal.render()


@pytest.mark.rule("TOL-3")
def test_missing_unknown_and_revoked_tokens_are_refused_by_name(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1")))
    token = _mint(store)
    for presented, why in [(None, "no token"), ("", "no token"), ("mtt_0000", "unknown token")]:
        answer = authorize_task_token(store, presented, NOW)
        assert answer.refusal.render() == f"not authorised: {why}"
    assert revoke_task_tokens(store, "t1") == 1
    assert revoke_task_tokens(store, "t1") == 0
    answer = authorize_task_token(store, token, NOW)
    assert answer.refusal.render() == "not authorised: token revoked"
    assert answer.refusal.render("zh") == "未授权：令牌已撤销"


@pytest.mark.rule("TOL-3")
@pytest.mark.parametrize("status", ["queued", "completed", None])
def test_minting_for_a_task_that_is_not_running_raises_and_stores_nothing(
    make_store: MakeStore, status: str | None
) -> None:
    store = make_store(_world(*([_task("t1", status)] if status else [])))
    with pytest.raises(TaskTokenRefused) as refused:
        _mint(store)
    assert refused.value.status == status
    assert ("not running" if status else "no task 't1'") in str(refused.value)


def _leave_by_transition(store: Any) -> None:
    assert store.transition_task("t1", "running", TaskChange(status="completed")) is not None


def _leave_by_finish(store: Any) -> None:
    assert store.finish_turn("t1", "turn-1", outcome="failed").changed


def _leave_by_requeue(store: Any) -> None:
    assert store.requeue_platform("t1", "running", "platform_fresh", -1, NOW).ok


@pytest.mark.rule("TOL-3")
@pytest.mark.parametrize(
    "leave", [_leave_by_transition, _leave_by_finish, _leave_by_requeue], ids=lambda f: f.__name__
)
def test_leaving_running_revokes_the_tasks_tokens(make_store: MakeStore, leave: Any) -> None:
    store = make_store(_world(_task("t1"), _task("t2")))
    token, other = _mint(store, "t1"), _mint(store, "t2")
    leave(store)
    assert store.task_token(token_hash(token)).revoked
    assert authorize_task_token(store, token, NOW).refusal.render() == (
        "not authorised: token revoked"
    )
    # running again (a new claim) does not bring an old token back
    if store.get_task("t1").status != "queued":
        store.transition_task("t1", store.get_task("t1").status, TaskChange(status="queued"))
    assert store.claim_task("p1", "h1").task.id == "t1"
    assert authorize_task_token(store, token, NOW).refusal is not None
    assert authorize_task_token(store, other, NOW).task_id == "t2"


@pytest.mark.rule("TOL-3")
def test_a_token_of_a_task_not_running_is_refused_with_its_status(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1")))
    token = _mint(store)
    # a writer outside markertools' transitions cannot unrevoke, but a status read wins too
    store.revoke_task_tokens("t1")
    store.transition_task("t1", "running", TaskChange(status="queued"))
    answer = authorize_task_token(store, token, NOW)
    assert answer.refusal.render() == "not authorised: token revoked"


# ---- deliver_call on every store ------------------------------------------------------------


@pytest.mark.rule("TOL-2")
def test_a_call_writes_one_audit_record_marked_as_a_tool_call(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1"), _task("t2", "completed")))
    ports = _ports(store)
    result = deliver_call("task_poll", {"task_id": "t2"}, sender="t1", ports=ports)
    assert result.entry.outcome == "done" and not result.is_error
    assert result.fields["task"]["status"] == "completed"
    deliver_turn(
        '```task-poll\n{"task_id": "t2"}\n```', sender="t1", outcome="completed", ports=ports
    )
    audit = store.export_world(NOW).audit
    assert [(a.kind, a.outcome, a.source) for a in audit] == [
        ("task-poll", "done", "tool"),
        ("task-poll", "done", "block"),
    ]


@pytest.mark.rule("TOL-4")
def test_calls_and_blocks_of_one_turn_share_the_per_turn_cap(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1", turn=1), _task("t2", "completed")))
    ports = _ports(store)
    first = deliver_call("wait_threads", WAIT, sender="t1", ports=ports)
    assert first.entry.outcome == "done"
    report = deliver_turn(
        WAIT_BLOCK + "\n" + WAIT_BLOCK, sender="t1", outcome="completed", ports=ports
    )
    assert [e.outcome for e in report.entries] == ["done", "ignored"]
    assert report.entries[1].reason.render() == OVER_WAIT_CAP
    second = deliver_call("wait_threads", WAIT, sender="t1", ports=ports)
    third = deliver_call("wait_threads", WAIT, sender="t1", ports=ports)
    assert second.entry.outcome == "done" and third.entry.outcome == "ignored"
    assert third.entry.reason.render() == OVER_WAIT_CAP
    assert call_result_json(third)["reason"] == OVER_WAIT_CAP
    # a new turn has its own caps
    store.enqueue_followup("t1", "go on")
    store.take_followups("t1")
    assert deliver_call("wait_threads", WAIT, sender="t1", ports=ports).entry.outcome == "done"


@pytest.mark.rule("TOL-4", "LIN-3")
def test_the_direct_children_cap_holds_across_calls(make_store: MakeStore) -> None:
    children = [_task(f"c{i:02d}", "completed", parent_task_id="t1") for i in range(19)]
    store = make_store(_world(_task("t1"), *children))
    ports = _ports(store)
    made = deliver_call("task_create", {"prompt": "one more"}, sender="t1", ports=ports)
    assert made.entry.outcome == "done" and made.fields["task_id"] == made.entry.target
    refused = deliver_call("task_create", {"prompt": "and another"}, sender="t1", ports=ports)
    assert refused.entry.outcome == "rejected" and refused.is_error
    assert "20" in refused.entry.reason.render()
    assert store.count_children("t1") == 20


@pytest.mark.rule("TOL-5")
def test_a_repeated_call_id_applies_once_and_replays(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1")))
    ports = _ports(store)
    args = {"title": "write the changelog"}
    first = deliver_call("todo_create", args, sender="t1", ports=ports, call_id="k1")
    again = deliver_call("todo_create", args, sender="t1", ports=ports, call_id="k1")
    assert first.entry.outcome == "done" and not first.replayed
    assert again.replayed and again.entry == first.entry and again.text == first.text
    assert call_result_json(again)["replayed"] is True
    assert len(store.export_world(NOW).todos) == 1
    other = deliver_call("todo_create", args, sender="t1", ports=ports, call_id="k2")
    assert not other.replayed and len(store.export_world(NOW).todos) == 2


@pytest.mark.rule("TOL-7")
def test_goal_convert_by_call_is_queued_after_the_turns_report(make_store: MakeStore) -> None:
    store = make_store(_world(_task("t1")))
    ports = _ports(store)
    result = deliver_call("goal_convert", {"goal": "ship it"}, sender="t1", ports=ports)
    assert result.entry.outcome == "done"
    assert "It takes effect after this turn" in result.text
    assert store.export_world(NOW).followups == ()  # nothing before the report
    report = deliver_turn(
        '```todo-list\n{"q": "x"}\n```', sender="t1", outcome="completed", ports=ports
    )
    assert report.queued_followups[1:] == ("/goal ship it",)
    taken = store.take_followups("t1")
    assert (
        len(taken) == 2
        and taken[0].startswith("markertools report")
        and taken[1] == ("/goal ship it")
    )


@pytest.mark.rule("TOL-7", "TRN-4")
@pytest.mark.parametrize("flags", [{"goal_mode": True}, {"is_coordinator": True}])
def test_goal_and_coordinator_tasks_are_refused_every_tool(
    make_store: MakeStore, flags: dict[str, Any]
) -> None:
    store = make_store(_world(_task("t1", **flags)))
    before = store.export_world(NOW)
    result = deliver_call("todo_create", {"title": "x"}, sender="t1", ports=_ports(store))
    assert result.entry.outcome == "rejected" and result.is_error
    assert result.entry.reason.render() == "goal and coordinator tasks never run marker blocks"
    assert store.export_world(NOW) == before


@pytest.mark.rule("TOL-2", "FLT-7")
@pytest.mark.parametrize(
    ("status", "why"),
    [
        ("interrupted", "the sender was cancelled"),
        ("completed", "refused: the bound task is not running (completed); nothing changed"),
        ("queued", "refused: the bound task is not running (queued); nothing changed"),
    ],
)
def test_a_sender_that_is_not_running_changes_nothing(
    make_store: MakeStore, status: str, why: str
) -> None:
    """FLT-7: nothing is applied; the refusal itself is the one audit record."""
    store = make_store(_world(_task("t1", status)))
    before = store.export_world(NOW)
    result = deliver_call("todo_create", {"title": "x"}, sender="t1", ports=_ports(store))
    assert (result.entry.outcome, result.entry.reason.render()) == ("rejected", why)
    after = store.export_world(NOW)
    assert attrs.evolve(after, audit=()) == attrs.evolve(before, audit=())
    assert [(a.sender, a.kind, a.outcome, a.reason, a.source) for a in after.audit] == [
        ("t1", "todo-create", "rejected", why, "tool")
    ]
    unknown = deliver_call("todo_create", {"title": "x"}, sender="zz", ports=_ports(store))
    assert unknown.entry.reason.render() == "the sender task does not exist"
