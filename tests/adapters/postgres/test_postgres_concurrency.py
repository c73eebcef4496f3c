"""Several processes, each with its own connection pool, standing in for worker hosts that
share one PostgreSQL database: they race cancel, retry, platform requeue and automation
claims on the SAME rows, directly on the ports and through delivery. Every transition has
exactly one winner (zero duplicated transitions) and every write lands (zero lost
writes: the winner's values are the ones stored; every follow-up and audit row is there,
in each process's order)."""

from __future__ import annotations

import multiprocessing
import random
from collections import Counter
from typing import Any

import pytest
from support.postgres import SKIP_REASON, pg_dsn, require_dsn, throwaway_store

from markertools.domain.model import Automation, PermissionGrant, Task
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.world import World

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.skipif(pg_dsn() is None, reason=SKIP_REASON),
]

HOSTS = 4
TASKS = 60
MESSAGES = 40
TIMEOUT = 120


def _host(dsn: str, schema: str, host: int, barrier: Any, results: Any) -> None:
    """One 'host': own pool; the same phases as every other host, aligned by a barrier."""
    from markertools_adapters.postgres import open_store

    store = open_store(dsn, 2, schema=schema)
    rng = random.Random(host)
    order = list(range(TASKS))
    won: dict[str, list[str]] = {"cancel": [], "retry": [], "requeue": [], "claim": []}
    try:
        barrier.wait()
        rng.shuffle(order)
        for i in order:
            changes = {"status": "interrupted", "interrupted_reason": f"host{host}"}
            if store.transition_task(f"r{i}", "running", changes) is not None:
                won["cancel"].append(f"r{i}")
        barrier.wait()
        rng.shuffle(order)
        for i in order:
            changes = {"status": "queued", "result_text": None, "host": f"host{host}"}
            if store.transition_task(f"r{i}", "interrupted", changes) is not None:
                won["retry"].append(f"r{i}")
        barrier.wait()
        rng.shuffle(order)
        for i in order:
            if store.requeue_platform(f"f{i}", "failed", "platform_fresh", -1, float(host)).ok:
                won["requeue"].append(f"f{i}")
            if store.claim_automation(f"a{i}", 1000.0, 2000.0 + host):
                won["claim"].append(f"a{i}")
        for k in range(MESSAGES):  # interleaved appends from every host
            store.enqueue_followup("inbox", f"host{host}-{k}")
            store.record_audit(_audit(host, k))
        results.put((host, won))
    finally:
        store.close()


def _audit(host: int, k: int) -> Any:
    from markertools.domain.model import AuditRecord

    return AuditRecord(f"host{host}", "task-cancel", None, "done", str(k), float(k))


def _world() -> World:
    return World(
        tasks=(
            *(Task(id=f"r{i}", project_id="p", status="running") for i in range(TASKS)),
            *(
                Task(
                    id=f"f{i}",
                    project_id="p",
                    status="failed",
                    result_text=f"out{i}",
                    auto_resume_count=0,
                )
                for i in range(TASKS)
            ),
        ),
        automations=tuple(
            Automation(
                id=f"a{i}",
                project_id="p",
                name=f"n{i}",
                prompt="x",
                interval_seconds=60,
                first_run_at=1000.0,
                created_at=0.0,
            )
            for i in range(TASKS)
        ),
    )


def _run_hosts(target: Any, args: tuple[Any, ...]) -> dict[int, Any]:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(HOSTS)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=target, args=(*args, host, barrier, results)) for host in range(HOSTS)
    ]
    for p in procs:
        p.start()
    collected = dict(results.get(timeout=TIMEOUT) for _ in procs)
    for p in procs:
        p.join(TIMEOUT)
        assert p.exitcode == 0
    return collected


@pytest.mark.rule("CTL-4", "SCH-4", "ATT-2")
def test_hosts_racing_on_the_same_rows_never_duplicate_or_lose_a_transition() -> None:
    store = throwaway_store(_world())
    try:
        won = _run_hosts(_host, (require_dsn(), store.schema))
        for phase, expected in (("cancel", "r"), ("retry", "r"), ("requeue", "f"), ("claim", "a")):
            winners = Counter(row for host in won.values() for row in host[phase])
            assert sorted(winners) == sorted(f"{expected}{i}" for i in range(TASKS)), phase
            assert set(winners.values()) == {1}, phase  # exactly one winner per row
        for host, rows in won.items():
            for row in rows["cancel"]:  # the winner's write is the stored one ...
                task = store.get_task(row)
                assert task is not None and task.interrupted_reason == f"host{host}"
            for row in rows["retry"]:  # ... and the later winner's on top of it
                task = store.get_task(row)
                assert task is not None and (task.status, task.host) == ("queued", f"host{host}")
            for row in rows["requeue"]:
                (attempt,) = store.list_attempts(row)
                assert attempt.created_at == float(host) and attempt.result_text == f"out{row[1:]}"
                task = store.get_task(row)
                assert task is not None and (task.status, task.auto_resume_count) == ("queued", 1)
            for row in rows["claim"]:
                automation = store.get_automation(row)
                assert automation is not None
                assert (automation.run_count, automation.last_run_at) == (1, 2000.0 + host)
        texts = store.followups_for("inbox")
        assert len(texts) == HOSTS * MESSAGES
        for host in range(HOSTS):  # each host's own order survives the interleaving
            mine = [t for t in texts if t.startswith(f"host{host}-")]
            assert mine == [f"host{host}-{k}" for k in range(MESSAGES)]
        audit = store.audit_records()
        assert Counter(r.sender for r in audit) == {f"host{h}": MESSAGES for h in range(HOSTS)}
    finally:
        store.close()


# ---- the same race through delivery -------------------------------------------------------


def _delivering_host(dsn: str, schema: str, host: int, barrier: Any, results: Any) -> None:
    from markertools import deliver_turn
    from markertools.parse.params import TaskCancelParams, TaskRetryParams
    from markertools.parse.plan import Command, TurnPlan
    from markertools_adapters.clock import SystemClock, SystemRandom
    from markertools_adapters.postgres import open_store
    from markertools_adapters.wiring import store_ports

    store = open_store(dsn, 2, schema=schema)
    try:
        ports = store_ports(
            store, clock=SystemClock(), random=SystemRandom(), executor=NoopExecutor()
        )
        cancels = TurnPlan(
            commands=tuple(
                Command("task-cancel", i + 1, TaskCancelParams(f"x{i}")) for i in range(5)
            )
        )
        retries = TurnPlan(
            commands=tuple(Command("task-retry", i + 1, TaskRetryParams(f"x{i}")) for i in range(5))
        )
        outcomes: dict[str, list[str]] = {}
        barrier.wait()
        for phase, plan in (("cancel", cancels), ("retry", retries)):
            report = deliver_turn(plan, sender=f"s{host}", outcome="completed", ports=ports)
            outcomes[phase] = [e.target for e in report.entries if e.outcome == "done"]
            barrier.wait()
        results.put((host, outcomes))
    finally:
        store.close()


@pytest.mark.rule("CTL-4", "GAT-1")
def test_hosts_delivering_cancel_and_retry_of_the_same_targets_have_one_winner_each() -> None:
    world = World(
        permissions=(PermissionGrant("u", "p", ("read", "create_task", "approve_merge")),),
        tasks=(
            *(
                Task(id=f"s{h}", project_id="p", status="running", created_by="u")
                for h in range(HOSTS)
            ),
            *(Task(id=f"x{i}", project_id="p", status="running", created_by="u") for i in range(5)),
        ),
    )
    store = throwaway_store(world)
    try:
        won = _run_hosts(_delivering_host, (require_dsn(), store.schema))
        for phase in ("cancel", "retry"):
            winners = Counter(t for host in won.values() for t in host[phase])
            assert winners == {f"x{i}": 1 for i in range(5)}, phase
        for i in range(5):
            task = store.get_task(f"x{i}")
            assert task is not None and task.status == "queued"
        audit = [r for r in store.audit_records() if r.kind in ("task-cancel", "task-retry")]
        assert len(audit) == 2 * 5 * HOSTS  # every block, won or lost, was audited
    finally:
        store.close()
