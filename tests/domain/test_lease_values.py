"""The pure side of issue 29: the claim order every store follows (`pick_claim`, WRK-6,
WRK-8) and the `worker status --json` document (`worker_status_json`, WRK-10), in both
report locales."""

from __future__ import annotations

from decimal import Decimal

import pytest

from markertools import (
    Affinity,
    FleetSnapshot,
    HostLeases,
    Quota,
    QuotaHold,
    RunningTask,
    Task,
    UnleasedRun,
    pick_claim,
    quota_hold_reason,
    worker_status_json,
)


def _t(tid: str, created: float, by: str | None = "u1") -> Task:
    return Task(tid, "p1", status="queued", created_by=by, created_at=created)


@pytest.mark.rule("WRK-6", "WRK-8")
def test_pick_claim_skips_other_hosts_affinity_and_quota_and_prefers_its_own() -> None:
    tasks = [_t("old", 1.0), _t("mine", 3.0), _t("theirs", 0.5), _t("broke", 0.1, "b")]
    affinity = {
        "mine": Affinity("mine", "h1", 100.0),
        "theirs": Affinity("theirs", "h2", 100.0),
    }
    exhausted = {"b"}.__contains__
    assert pick_claim(tasks, "h1", 50.0, affinity.get, exhausted).id == "mine"
    assert pick_claim(tasks, "h3", 50.0, affinity.get, exhausted).id == "old"
    # lapsed affinities are ignored: plain oldest first (the quota hold stays)
    assert pick_claim(tasks, "h3", 100.0, affinity.get, exhausted).id == "theirs"
    assert pick_claim([_t("broke", 0.1, "b")], "h1", 0.0, affinity.get, exhausted) is None


@pytest.mark.rule("ENG-1")
def test_a_hosts_engine_is_what_its_leases_record() -> None:
    from markertools import host_engine

    assert host_engine(["codex", None, "codex"]) == "codex"
    assert host_engine([None, None]) is None
    assert host_engine([]) is None
    assert host_engine(["codex", "claude-code"]) == "claude-code,codex"  # never expected


@pytest.mark.rule("WRK-10", "WRK-8")
def test_worker_status_json_is_the_cli_shape_in_both_locales() -> None:
    quota = Quota("ana", total_usd=Decimal("5"), used_usd=Decimal("5.25"))
    snapshot = FleetSnapshot(
        {"running": 2, "queued": 1},
        (
            HostLeases("h2", 90.0, (RunningTask("t9", 0, 10.0),), "claude-code"),
            HostLeases("h1", 80.0, (RunningTask("t3", 2, 5.0), RunningTask("t1", 1, 4.0))),
        ),
        (QuotaHold("t5", "ana", quota_hold_reason("ana", quota)),),
        60.0,
        (UnleasedRun("t7", "h3", 4, 1.0, 31.0), UnleasedRun("t6", "h1", 1)),
    )
    doc = worker_status_json(snapshot)
    assert list(doc) == ["tasks", "hosts", "held_by_quota", "unleased", "approvals_pending"]
    assert doc["approvals_pending"] == []
    assert doc["tasks"] == {"queued": 1, "running": 2}
    assert doc["hosts"] == [
        {
            "host": "h1",
            "engine": None,
            "lease_expires_at": 80.0,
            "running": [
                {"task_id": "t1", "turn": 1, "started_at": 4.0},
                {"task_id": "t3", "turn": 2, "started_at": 5.0},
            ],
        },
        {
            "host": "h2",
            "engine": "claude-code",
            "lease_expires_at": 90.0,
            "running": [{"task_id": "t9", "turn": 0, "started_at": 10.0}],
        },
    ]
    assert doc["held_by_quota"] == [
        {
            "task_id": "t5",
            "created_by": "ana",
            "reason": "held by quota: ana has spent $5.25 of $5.00; no host claims the task"
            " until the quota is raised",
        }
    ]
    # running tasks no live lease holds: an expired one (h3 died) and one claimed without
    assert doc["unleased"] == [
        {"task_id": "t6", "host": "h1", "turn": 1, "started_at": None, "lease_expires_at": None},
        {"task_id": "t7", "host": "h3", "turn": 4, "started_at": 1.0, "lease_expires_at": 31.0},
    ]
    zh = worker_status_json(snapshot, "zh")["held_by_quota"]
    assert zh[0]["reason"] == "因配额暂停：ana 已花费 $5.25 / $5.00；配额提高前不会有主机认领此任务"


@pytest.mark.rule("APR-4", "WRK-10")
def test_worker_status_json_lists_the_pending_approval_requests_by_id() -> None:
    from markertools import ApprovalRequest

    asking = (
        ApprovalRequest("apr-b", "t2", "p1", "file_change", None, None, ("a.py",), asked_at=5.0),
        ApprovalRequest("apr-a", "t1", "p1", "command", ("uv", "run", "pytest"), "/w", asked_at=7.0),
    )
    doc = worker_status_json(FleetSnapshot({"running": 2}, approvals_pending=asking))
    assert doc["approvals_pending"] == [
        {"id": "apr-a", "task_id": "t1", "kind": "command", "command": ["uv", "run", "pytest"], "asked_at": 7.0},
        {"id": "apr-b", "task_id": "t2", "kind": "file_change", "command": None, "asked_at": 5.0},
    ]
