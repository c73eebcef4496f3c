# Owns: what `markertools worker status` shows (WRK-10), from one read: the store's
# `fleet_snapshot(project, now)` - tasks per status, the hosts holding live leases with
# each running task's turn number, the running tasks no live lease holds (a dead host's,
# or claimed without a lease), and the queued tasks held back because their creator is
# over quota (WRK-8). The JSON is the core's `worker_status_json` of that snapshot (the
# CLI.md contract, `fleet_status`); the text lines are the same snapshot (`status_lines`).
#
# Must never: read the store a second way (one code path: what the JSON says, the text
# says).
from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from markertools import FleetSnapshot, QuotaHold, UnleasedRun, msg, worker_status_json


def fleet_snapshot(store: Any, project: str | None, now: float | None = None) -> FleetSnapshot:
    """The store's snapshot of `project` (every project when None) at `now` (default:
    the wall clock)."""
    snapshot: FleetSnapshot = store.fleet_snapshot(project, time.time() if now is None else now)
    return snapshot


def fleet_status(
    store: Any, project: str | None, *, locale: str = "en", now: float | None = None
) -> dict[str, Any]:
    """The `worker status --json` document (CLI.md): `worker_status_json` of the snapshot."""
    return worker_status_json(fleet_snapshot(store, project, now), locale)


def _held_reason(hold: QuotaHold, locale: str) -> str:
    if hold.used_usd is None or hold.total_usd is None:
        return hold.reason.render(locale)
    return msg(
        "worker.quota_held",
        user=hold.created_by,
        used=str(hold.used_usd),
        total=str(hold.total_usd),
    ).render(locale)


def _unleased_why(stale: UnleasedRun, locale: str) -> str:
    if stale.host is None:
        return msg("worker.status.unleased_no_host").render(locale)
    if stale.lease_expires_at is None:
        return msg("worker.status.unleased_no_lease", host=stale.host).render(locale)
    until = time.strftime("%H:%M:%S", time.gmtime(stale.lease_expires_at))
    return msg("worker.status.unleased_expired", host=stale.host, until=until).render(locale)


def status_lines(snapshot: FleetSnapshot, *, locale: str = "en") -> Iterable[str]:
    """The text form of the snapshot: the counts, each host with the tasks its live leases
    hold, then the running tasks no live lease holds, each flagged with why (its host's
    lease ended, it was claimed without a lease, no host at all) and what recovers it,
    then the pending approval requests (answer with `markertools approvals`), then the
    tasks held by quota. Elapsed times are counted to `snapshot.now`."""
    counts = snapshot.tasks
    if counts:
        text = ", ".join(f"{k} {counts[k]}" for k in sorted(counts))
        yield msg("worker.status.tasks", counts=text).render(locale)
    else:
        yield msg("worker.status.no_tasks").render(locale)
    unknown = msg("worker.status.unknown").render(locale)
    # host -> (latest lease expiry, [(task id, turn, started_at)])
    hosts: dict[str, tuple[float | None, list[tuple[str, int, float | None]]]] = {}
    for live in snapshot.hosts:
        hosts[live.host] = (
            live.lease_expires_at,
            [(r.task_id, r.turn, r.started_at) for r in live.running],
        )
    for host in sorted(hosts):
        until, rows = hosts[host]
        yield msg(
            "worker.status.host",
            host=host,
            n=len(rows),
            until=unknown if until is None else time.strftime("%H:%M:%S", time.gmtime(until)),
        ).render(locale)
        for task_id, turn, started in sorted(rows):
            elapsed = unknown if started is None else str(int(max(snapshot.now - started, 0)))
            yield msg("worker.status.running", task_id=task_id, turn=turn, elapsed=elapsed).render(
                locale
            )
    for stale in sorted(snapshot.unleased, key=lambda u: u.task_id):
        yield msg(
            "worker.status.unleased",
            task_id=stale.task_id,
            turn=stale.turn,
            why=_unleased_why(stale, locale),
        ).render(locale)
    for asking in sorted(snapshot.approvals_pending, key=lambda a: a.id):  # APR-4
        what = " ".join(asking.command) if asking.command else ", ".join(asking.paths) or "-"
        yield msg(
            "worker.status.approval",
            id=asking.id,
            task_id=asking.task_id,
            kind=asking.kind,
            what=what[:200],
            asked=time.strftime("%H:%M:%S", time.gmtime(asking.asked_at)),
        ).render(locale)
    for hold in sorted(snapshot.held_by_quota, key=lambda q: q.task_id):
        reason = _held_reason(hold, locale)
        yield msg("worker.status.held", task_id=hold.task_id, reason=reason).render(locale)
