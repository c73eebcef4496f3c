"""The approval broker on every store (memory, the toy kit store, SQLite, PostgreSQL): a
request is recorded, the project's rules answer first (APR-2), otherwise the first answer
of a person or an ancestor agent decides (APR-3); unanswered at its timeout it is
declined and the agent is told why (APR-1); a wait ends when the task leaves `running`
or the call is cancelled; every request and answer is an event. Real stores, real time
(short timeouts)."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from markertools import ApprovalRule, Task, TaskChange
from markertools.domain.model import PermissionGrant, Project
from markertools_adapters.approvals import ApprovalAsk, ApprovalEvent, Broker
from markertools_adapters.clock import SeededRandom
from markertools_adapters.world import World

MakeStore = Callable[[World], Any]
NOW = 1_798_333_200.0


def _store(make_store: MakeStore, worktree: str = "/w/h1/t1") -> Any:
    return make_store(
        World(
            now=NOW,
            projects=(Project("p1", "shop"),),
            permissions=(PermissionGrant("u1", "p1", ("read", "create_task")),),
            tasks=(
                Task("t1", "p1", status="running", created_by="u1", worktree=worktree),
                Task("t2", "p1", status="queued", created_by="u1"),
            ),
        )
    )


def _broker(store: Any, events: list[ApprovalEvent], **kw: Any) -> Broker:
    kw.setdefault("poll_interval", 0.02)
    return Broker(store, on_event=events.append, random=SeededRandom(3), **kw)


PYTEST = ApprovalAsk(
    "t1", "command", ("uv", "run", "pytest", "-x"), "/w/h1/t1", reason="run the tests"
)


@pytest.mark.rule("APR-2", "APR-1")
def test_a_rule_answers_without_anyone(make_store: MakeStore) -> None:
    store = _store(make_store)
    store.add_approval_rule(ApprovalRule("r-1", "p1", "allow", prefix=("uv", "run", "pytest")))
    store.add_approval_rule(ApprovalRule("r-2", "p1", "deny", prefix=("rm",)))
    events: list[ApprovalEvent] = []
    broker = _broker(store, events)
    decision = asyncio.run(broker.decide(PYTEST, timeout=60))
    assert (decision.approved, decision.how) == (True, "rule")
    assert decision.text() == (
        'approved by the project\'s rule r-1 (allow commands starting with "uv run pytest")'
    )
    assert decision.text("zh") == '由项目的规则 r-1（允许：以 "uv run pytest" 开头的命令）已批准'
    stored = store.get_approval(decision.request.id)
    assert (stored.status, stored.answered_by, stored.reason) == (
        "approved",
        "rule:r-1",
        "run the tests",
    )
    assert [e.name for e in events] == ["approval_requested", "approval_answered"]
    assert events[0].json()["command"] == ["uv", "run", "pytest", "-x"]
    shell = ApprovalAsk("t1", "command", ("bash", "-lc", "uv run pytest; rm -rf ~"))
    denied = asyncio.run(broker.decide(shell, timeout=60))
    assert (denied.approved, denied.how) == (False, "rule")
    assert denied.text() == 'denied by the project\'s rule r-2 (deny commands starting with "rm")'


@pytest.mark.rule("APR-3", "APR-1")
def test_no_rule_waits_for_the_first_answer(make_store: MakeStore) -> None:
    store = _store(make_store)
    events: list[ApprovalEvent] = []
    broker = _broker(store, events)

    async def scenario() -> Any:
        pending = asyncio.create_task(broker.decide(PYTEST, timeout=60))
        while not events:
            await asyncio.sleep(0.01)
        rid = events[0].request.id
        assert store.get_approval(rid).status == "pending"
        assert store.answer_approval(
            rid,
            "denied",
            answered_by="person:ana",
            reason="use make test",
            now=events[0].request.asked_at + 1,
        )
        return await asyncio.wait_for(pending, 30)

    decision = asyncio.run(scenario())
    assert (decision.approved, decision.how) == (False, "answer")
    assert decision.text() == "denied by person:ana: use make test"
    assert decision.text("zh") == "由 person:ana 已拒绝：use make test"
    assert [e.name for e in events] == ["approval_requested", "approval_answered"]
    assert events[1].request.status == "denied"


@pytest.mark.rule("APR-1")
def test_unanswered_at_its_expiry_it_is_declined_and_the_agent_told_why(
    make_store: MakeStore,
) -> None:
    store = _store(make_store)
    events: list[ApprovalEvent] = []
    decision = asyncio.run(_broker(store, events).decide(PYTEST, timeout=1.0))
    assert (decision.approved, decision.how) == (False, "expired")
    rid = decision.request.id
    assert decision.text() == f"declined: nobody answered approval request {rid} within 1 s"
    assert decision.text("zh") == f"已拒绝：审批请求 {rid} 在 1 秒内无人回答"
    stored = store.get_approval(rid)
    assert (stored.status, stored.answered_by, stored.answer_reason) == (
        "expired",
        "expiry",
        "nobody answered within 1 s",
    )
    assert (
        store.answer_approval(
            rid, "approved", answered_by="person:ana", reason=None, now=stored.asked_at + 0.5
        )
        is None
    )


@pytest.mark.rule("APR-1", "APR-3")
def test_a_wait_ends_when_the_task_leaves_running_or_the_call_is_cancelled(
    make_store: MakeStore,
) -> None:
    store = _store(make_store)
    events: list[ApprovalEvent] = []
    broker = _broker(store, events)

    async def cancelled() -> str:
        pending = asyncio.create_task(broker.decide(PYTEST, timeout=60))
        while not events:
            await asyncio.sleep(0.01)
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        return events[0].request.id

    rid = asyncio.run(cancelled())
    withdrawn = store.get_approval(rid)
    assert (withdrawn.status, withdrawn.answered_by, withdrawn.answer_reason) == (
        "expired",
        "withdrawn",
        "the turn that asked ended before an answer",
    )

    async def interrupted() -> Any:
        pending = asyncio.create_task(broker.decide(PYTEST, timeout=60))
        while len(events) < 2:
            await asyncio.sleep(0.01)
        store.transition_task("t1", "running", TaskChange(status="interrupted"))
        return await asyncio.wait_for(pending, 30)

    decision = asyncio.run(interrupted())
    assert (decision.approved, decision.how) == (False, "withdrawn")
    assert decision.text() == (
        f"declined: approval request {decision.request.id} was not answered (its task is "
        "interrupted, no longer running)"
    )


@pytest.mark.rule("APR-1")
def test_a_request_that_cannot_be_recorded_is_declined_with_why(make_store: MakeStore) -> None:
    store = _store(make_store)
    events: list[ApprovalEvent] = []
    broker = _broker(store, events)
    queued = asyncio.run(broker.decide(ApprovalAsk("t2", "command", ("ls",)), timeout=5))
    assert (queued.approved, queued.how, queued.request) == (False, "not_recorded", None)
    assert queued.text() == (
        "declined: the request could not be recorded (InvalidArgument: approval request for task "
        "'t2': the task is 'queued', not running)"
    )
    odd = asyncio.run(broker.decide(ApprovalAsk("t1", "network"), timeout=5))
    assert odd.how == "not_recorded" and "approval kind must be one of" in odd.text()
    assert events == []
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
        asyncio.run(broker.decide(PYTEST, timeout=0))


@pytest.mark.rule("APR-2")
def test_a_link_out_of_the_directory_never_matches_an_allow_glob(
    make_store: MakeStore, tmp_path: Path
) -> None:
    root = tmp_path / "t1"
    (root / "src").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", root / "src" / "escape")
    store = _store(make_store, worktree=str(root))
    store.add_approval_rule(ApprovalRule("r-src", "p1", "allow", path_glob="src/**"))
    events: list[ApprovalEvent] = []
    broker = _broker(store, events)
    inside = ApprovalAsk(
        "t1", "file_change", paths=(f"{root}/src/a.py", "src/b/c.py"), diff_summary="+2 -0"
    )
    assert asyncio.run(broker.decide(inside, timeout=5)).how == "rule"
    escaping = ApprovalAsk("t1", "file_change", paths=(f"{root}/src/escape/passwd",))
    decision = asyncio.run(broker.decide(escaping, timeout=0.2))
    assert decision.how == "expired"
    assert store.get_approval(decision.request.id).paths == (f"{root}/src/escape/passwd",)


@pytest.mark.rule("APR-1", "APR-3")
def test_a_failing_event_callback_never_stops_a_decision(make_store: MakeStore) -> None:
    store = _store(make_store)
    store.add_approval_rule(ApprovalRule("r-1", "p1", "allow", kind="command"))

    def broken(event: ApprovalEvent) -> None:
        raise RuntimeError("log sink down")

    broker = Broker(store, on_event=broken, poll_interval=0.02)
    assert asyncio.run(broker.decide(PYTEST, timeout=5)).approved


@pytest.mark.rule("APR-3")
def test_many_waiting_requests_share_no_thread_and_each_gets_its_answer(
    make_store: MakeStore,
) -> None:
    store = _store(make_store)
    events: list[ApprovalEvent] = []
    broker = _broker(store, events, poll_interval=0.05)

    async def scenario() -> list[bool]:
        before = threading.active_count()
        waits = [asyncio.create_task(broker.decide(PYTEST, timeout=60)) for _ in range(20)]
        while len(events) < 20:
            await asyncio.sleep(0.01)
        assert threading.active_count() <= before + 8  # the to_thread pool, not one per wait
        for n, event in enumerate(events[:20]):
            status = "approved" if n % 2 else "denied"
            store.answer_approval(
                event.request.id,
                status,
                answered_by="person:ana",
                reason=None,
                now=event.request.asked_at,
            )
        return [d.approved for d in await asyncio.gather(*waits)]

    answers = asyncio.run(scenario())
    assert sorted(answers) == [False] * 10 + [True] * 10


class _Flaky:
    """The store, whose reads of requests fail while `down` is set (a store outage)."""

    def __init__(self, store: Any) -> None:
        self._store, self.down, self.failed = store, False, 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if name not in ("get_approval", "get_task", "expire_approval") or not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                self.failed += 1
                raise ConnectionError("store unreachable")
            return attr(*args, **kwargs)

        return call


@pytest.mark.rule("APR-1", "APR-3")
def test_a_store_outage_during_a_wait_delays_the_answer_never_the_expiry(
    make_store: MakeStore, caplog: pytest.LogCaptureFixture
) -> None:
    store = _store(make_store)
    flaky = _Flaky(store)
    events: list[ApprovalEvent] = []
    broker = Broker(flaky, on_event=events.append, poll_interval=0.02, listen=False)

    async def answered_after_an_outage() -> Any:
        pending = asyncio.create_task(broker.decide(PYTEST, timeout=60))
        while not events:
            await asyncio.sleep(0.01)
        flaky.down = True
        rid = events[0].request.id
        store.answer_approval(
            rid, "approved", answered_by="person:ana", reason=None, now=events[0].request.asked_at
        )
        while flaky.failed < 3:
            await asyncio.sleep(0.01)
        flaky.down = False
        return await asyncio.wait_for(pending, 30)

    decision = asyncio.run(answered_after_an_outage())
    assert (decision.approved, decision.how) == (True, "answer")
    warnings = [r.getMessage() for r in caplog.records if "approvals:" in r.getMessage()]
    assert len(warnings) == 1 and "trying again: ConnectionError: store unreachable" in warnings[0]

    events.clear()

    async def down_until_the_expiry() -> Any:
        pending = asyncio.create_task(broker.decide(PYTEST, timeout=0.5))
        while not events:
            await asyncio.sleep(0.01)
        flaky.down = True
        return await asyncio.wait_for(pending, 30)

    expired = asyncio.run(down_until_the_expiry())
    assert (expired.approved, expired.how) == (False, "expired")
    assert (
        expired.text()
        == f"declined: nobody answered approval request {expired.request.id} within 0.5 s"
    )
    assert store.get_approval(expired.request.id).status == "pending"  # the requeue expires it
