# Owns: what `markertools worker status` shows (WRK-10): tasks per status, the hosts
# running tasks (their lease expiry when the store keeps leases) with each running task's
# turn number, and the queued tasks held back because their creator is over quota
# (WRK-8) - as the CLI.md JSON (`fleet_status`) and as text lines (`status_lines`).
from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, Final

from markertools import Quota, Task, msg

_ALL: Final[int] = 1_000_000


def _tasks(store: Any, project: str | None) -> list[Task]:
    if project is not None:
        return list(store.list_tasks(project, status=None, q=None, limit=_ALL).rows)
    return list(store.export_world(time.time()).tasks)


def _over(quota: Quota | None) -> bool:
    return quota is not None and quota.total_usd is not None and quota.used_usd >= quota.total_usd


def fleet_status(store: Any, project: str | None, *, locale: str = "en") -> dict[str, Any]:
    """`{"tasks": {STATUS: N}, "hosts": [...], "held_by_quota": [...]}` (CLI.md)."""
    tasks = _tasks(store, project)
    counts: dict[str, int] = {}
    for task in tasks:
        counts[task.status] = counts.get(task.status, 0) + 1
    get_lease = getattr(store, "get_lease", None)
    hosts: dict[str, dict[str, Any]] = {}
    for task in sorted(tasks, key=lambda t: t.id):
        if task.status != "running" or not task.host:
            continue
        lease = get_lease(task.id) if callable(get_lease) else None
        entry = hosts.setdefault(
            task.host, {"host": task.host, "lease_expires_at": None, "running": []}
        )
        expires = getattr(lease, "expires_at", None)
        if isinstance(expires, (int, float)):
            current = entry["lease_expires_at"]
            entry["lease_expires_at"] = expires if current is None else max(current, expires)
        entry["running"].append(
            {
                "task_id": task.id,
                "turn": task.turn,
                "started_at": getattr(lease, "started_at", None),
            }
        )
    held: list[dict[str, Any]] = []
    quotas: dict[str, Quota | None] = {}
    for task in sorted(tasks, key=lambda t: t.id):
        if task.status != "queued" or not task.created_by:
            continue
        user = task.created_by
        if user not in quotas:
            quotas[user] = store.get_quota(user)
        quota = quotas[user]
        if quota is not None and _over(quota):
            reason = msg(
                "worker.quota_held", user=user, used=str(quota.used_usd), total=str(quota.total_usd)
            ).render(locale)
            held.append({"task_id": task.id, "created_by": user, "reason": reason})
    return {
        "tasks": dict(sorted(counts.items())),
        "hosts": [hosts[h] for h in sorted(hosts)],
        "held_by_quota": held,
    }


def status_lines(
    status: dict[str, Any], *, locale: str = "en", now: float | None = None
) -> Iterable[str]:
    """The text form of `fleet_status`."""
    now = time.time() if now is None else now
    counts = status["tasks"]
    if counts:
        text = ", ".join(f"{k} {v}" for k, v in counts.items())
        yield msg("worker.status.tasks", counts=text).render(locale)
    else:
        yield msg("worker.status.no_tasks").render(locale)
    unknown = msg("worker.status.unknown").render(locale)
    for host in status["hosts"]:
        until = host["lease_expires_at"]
        yield msg(
            "worker.status.host",
            host=host["host"],
            n=len(host["running"]),
            until=unknown if until is None else time.strftime("%H:%M:%S", time.gmtime(until)),
        ).render(locale)
        for row in host["running"]:
            started = row["started_at"]
            elapsed = unknown if started is None else str(int(max(now - started, 0)))
            yield msg(
                "worker.status.running", task_id=row["task_id"], turn=row["turn"], elapsed=elapsed
            ).render(locale)
    for row in status["held_by_quota"]:
        yield msg("worker.status.held", task_id=row["task_id"], reason=row["reason"]).render(locale)
