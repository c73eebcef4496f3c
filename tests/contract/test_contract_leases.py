"""Issue 29 on every store (memory, the toy kit store, SQLite, PostgreSQL): leases written
by the claim, renewed by their host and expiring (WRK-6); the crash requeue of an expired
lease, done once, with the ATT-2 ledger row and affinity to the dead host that another host
respects until it lapses; the quota hold (WRK-8); goal checkpoints (WRK-7); which tasks
were cancelled elsewhere; and the fleet snapshot `worker status` shows (WRK-10)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from markertools import Quota, Task, TaskChange, worker_status_json
from markertools.domain.model import PermissionGrant, Project
from markertools_adapters.world import World

MakeStore = Callable[[World], Any]
NOW = 1_798_333_200.0
LEASE = 30.0


def _world(*tasks: Task, quotas: tuple[Quota, ...] = ()) -> World:
    return World(
        now=NOW,
        projects=(Project("p1", "shop"), Project("p2", "other")),
        permissions=(PermissionGrant("u1", "p1", ("read", "create_task")),),
        tasks=tasks,
        quotas=quotas,
    )


def _task(tid: str, status: str = "queued", created: float = 0.0, **kw: Any) -> Task:
    kw.setdefault("created_by", "u1")
    kw.setdefault("project_id", "p1")
    return Task(tid, status=status, created_at=created, **kw)


@pytest.mark.rule("WRK-6")
def test_a_claim_with_a_lease_writes_it_and_its_host_renews_it(make_store: MakeStore) -> None:
    store = make_store(_world(_task("a", created=1.0), _task("b", created=2.0)))
    claim = store.claim_task("p1", "h1", now=NOW, lease_seconds=LEASE)
    assert claim.task.id == "a" and claim.task.status == "running"
    lease = store.get_lease("a")
    assert (lease.task_id, lease.host, lease.expires_at) == ("a", "h1", NOW + LEASE)
    assert (lease.pgid, lease.machine_id, lease.started_at) == (None, None, NOW)
    assert store.get_lease("b") is None
    # the old positional call still claims (no lease)
    assert store.claim_task("p1", "h2").task.id == "b"
    assert store.get_lease("b") is None

    assert store.renew_leases("h1", ["a", "b", "nope"], lease_seconds=LEASE, now=NOW + 20) == ("a",)
    assert store.get_lease("a").expires_at == NOW + 20 + LEASE
    assert store.renew_leases("h2", ["a"], lease_seconds=LEASE, now=NOW + 21) == ()  # not h2's
    store.record_process_group("a", "h1", 4242, machine_id="m-1", now=NOW + 22)
    store.record_process_group("a", "h2", 1, machine_id="m-2", now=NOW + 22)  # ignored
    lease = store.get_lease("a")
    assert (lease.pgid, lease.machine_id, lease.engine) == (4242, "m-1", None)
    store.record_process_group("a", "h1", 4243, machine_id="m-1", now=NOW + 23, engine="codex")
    assert (store.get_lease("a").pgid, store.get_lease("a").engine) == (4243, "codex")
    assert store.expired_leases(NOW + 49) == ()
    assert [x.task_id for x in store.expired_leases(NOW + 50)] == ["a"]
    assert store.expired_leases(NOW + 50, "p2") == ()


@pytest.mark.rule("WRK-6")
def test_a_lease_goes_when_the_task_leaves_running(make_store: MakeStore) -> None:
    store = make_store(_world(_task("a", created=1.0), _task("b", created=2.0)))
    store.claim_task("p1", "h1", now=NOW, lease_seconds=LEASE)
    store.claim_task("p1", "h1", now=NOW, lease_seconds=LEASE)
    assert store.transition_task("a", "running", TaskChange(status="completed")) is not None
    assert store.get_lease("a") is None
    assert store.renew_leases("h1", ["a", "b"], lease_seconds=LEASE, now=NOW + 1) == ("b",)
    store.release_lease("b", "h2")  # another host's release changes nothing
    assert store.get_lease("b") is not None
    store.release_lease("b", "h1")
    assert store.get_lease("b") is None


@pytest.mark.rule("WRK-6")
def test_an_expired_lease_is_requeued_once_with_affinity_to_its_host(
    make_store: MakeStore,
) -> None:
    store = make_store(_world(_task("a", created=1.0), _task("b", created=2.0)))
    store.claim_task("p1", "h1", now=NOW, lease_seconds=LEASE)
    early = store.requeue_expired("a", "h1", NOW + 10, affinity_seconds=60.0)
    assert not early.ok and "no expired lease of host 'h1'" in early.error
    wrong = store.requeue_expired("a", "h9", NOW + 40, affinity_seconds=60.0)
    assert not wrong.ok and "no expired lease of host 'h9'" in wrong.error
    assert store.get_task("a").status == "running"

    first = store.requeue_expired("a", "h1", NOW + 40, affinity_seconds=60.0)
    second = store.requeue_expired("a", "h1", NOW + 40, affinity_seconds=60.0)
    assert first.ok, first.error
    assert not second.ok and second.error == "task 'a' is not running"
    task = store.get_task("a")
    assert (task.status, task.auto_resume_count) == ("queued", 1)
    (attempt,) = store.list_attempts("a")
    assert (attempt.attempt_no, attempt.kind, attempt.checkpoint_round) == (1, "platform_fresh", -1)
    assert store.get_lease("a") is None
    affinity = store.get_affinity("a")
    assert (affinity.host, affinity.until) == ("h1", NOW + 100)

    # another host skips it while the affinity lasts and takes the next task instead
    claim = store.claim_task("p1", "h2", now=NOW + 50, lease_seconds=LEASE)
    assert claim.task.id == "b"
    assert store.claim_task("p1", "h2", now=NOW + 60, lease_seconds=LEASE) is None
    # after it lapses any host may take it
    late = store.claim_task("p1", "h2", now=NOW + 101, lease_seconds=LEASE)
    assert late.task.id == "a" and late.task.host == "h2"


@pytest.mark.rule("WRK-6", "WRK-7")
def test_affinity_puts_the_task_first_on_its_own_host(make_store: MakeStore) -> None:
    store = make_store(_world(_task("a", created=5.0), _task("b", created=1.0)))
    assert store.claim_task("p1", "h1", now=NOW, lease_seconds=LEASE).task.id == "b"
    store.claim_task("p1", "h1", now=NOW, lease_seconds=LEASE)  # a
    result = store.requeue_expired(
        "a", "h1", NOW + 31, affinity_seconds=60.0, kind="goal_breakpoint", checkpoint_round=4
    )
    assert result.ok, result.error
    assert (result.attempt.kind, result.attempt.checkpoint_round) == ("goal_breakpoint", 4)
    store.insert_task(_task("c", created=0.5))  # older than a
    assert store.claim_task("p1", "h1", now=NOW + 40, lease_seconds=LEASE).task.id == "a"


@pytest.mark.rule("WRK-8", "WRK-10")
def test_a_creator_over_quota_gets_no_task_claimed_and_the_snapshot_says_why(
    make_store: MakeStore,
) -> None:
    store = make_store(
        _world(
            _task("a", created=1.0, created_by="broke"),
            _task("b", created=2.0, created_by="u1"),
            quotas=(Quota("broke", total_usd=Decimal("2"), used_usd=Decimal("2.5")),),
        )
    )
    assert store.claim_task("p1", "h1", now=NOW, lease_seconds=LEASE).task.id == "b"
    assert store.claim_task("p1", "h1", now=NOW, lease_seconds=LEASE) is None
    snapshot = worker_status_json(store.fleet_snapshot("p1", NOW + 1))
    assert snapshot["held_by_quota"] == [
        {
            "task_id": "a",
            "created_by": "broke",
            "reason": "held by quota: broke has spent $2.50 of $2.00; no host claims the task"
            " until the quota is raised",
        }
    ]
    store.put_quota(Quota("broke", total_usd=Decimal("10"), used_usd=Decimal("2.5")))
    assert worker_status_json(store.fleet_snapshot("p1", NOW + 2))["held_by_quota"] == []
    assert store.claim_task("p1", "h1", now=NOW + 2, lease_seconds=LEASE).task.id == "a"


@pytest.mark.rule("WRK-7")
def test_the_last_checkpoint_is_kept(make_store: MakeStore) -> None:
    store = make_store(_world(_task("a", "running")))
    assert store.last_checkpoint("a") is None
    store.record_checkpoint("a", 1, thread_id="th-1", turn_id="turn-1", now=NOW)
    store.record_checkpoint("a", 2, thread_id="th-1", turn_id=None, now=NOW + 5)
    cp = store.last_checkpoint("a")
    assert (cp.task_id, cp.round, cp.thread_id, cp.turn_id, cp.at) == (
        "a",
        2,
        "th-1",
        None,
        NOW + 5,
    )


@pytest.mark.rule("WRK-6")
def test_cancelled_among_names_the_tasks_no_longer_running(make_store: MakeStore) -> None:
    store = make_store(_world(_task("a", "running"), _task("b", "running"), _task("c", "queued")))
    assert store.cancelled_among(["a", "b"]) == ()
    store.transition_task("b", "running", TaskChange(status="interrupted"))
    assert store.cancelled_among(["a", "b", "c", "gone"]) == ("b", "c", "gone")


@pytest.mark.rule("WRK-10")
def test_the_fleet_snapshot_is_the_worker_status_json(make_store: MakeStore) -> None:
    store = make_store(
        _world(
            _task("a", created=1.0),
            _task("b", created=2.0),
            _task("c", created=3.0),
            _task("d", "completed"),
            _task("x", created=1.0, project_id="p2"),
        )
    )
    store.claim_task("p1", "h2", now=NOW, lease_seconds=LEASE)  # a
    store.claim_task("p1", "h1", now=NOW + 1, lease_seconds=LEASE)  # b
    store.claim_task("p1", "h1", now=NOW + 2, lease_seconds=LEASE)  # c
    store.renew_leases("h1", ["c"], lease_seconds=LEASE, now=NOW + 10)
    # ENG-1: a host records its engine with the process group of its task
    store.record_process_group(
        "b", "h1", 4242, machine_id="m-1", now=NOW + 2, engine="claude-code"
    )
    doc = worker_status_json(store.fleet_snapshot("p1", NOW + 30.5))  # a's lease has expired
    assert doc == {
        "tasks": {"completed": 1, "running": 3},
        "hosts": [
            {
                "host": "h1",
                "engine": "claude-code",
                "lease_expires_at": NOW + 40,
                "running": [
                    {"task_id": "b", "turn": 1, "started_at": NOW + 1},
                    {"task_id": "c", "turn": 1, "started_at": NOW + 2},
                ],
            }
        ],
        "held_by_quota": [],
        # a's host stopped renewing: not a live host, but its task is still shown
        "unleased": [
            {
                "task_id": "a",
                "host": "h2",
                "turn": 1,
                "started_at": NOW,
                "lease_expires_at": NOW + LEASE,
            }
        ],
        "approvals_pending": [],  # additive (APR-4)
    }
    everything = worker_status_json(store.fleet_snapshot(None, NOW))
    assert everything["tasks"] == {"completed": 1, "queued": 1, "running": 3}
    assert [h["host"] for h in everything["hosts"]] == ["h1", "h2"]
