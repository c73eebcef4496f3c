# Owns: the values of leases and crash recovery (WRK-6), goal checkpoints (WRK-7), the
# quota hold (WRK-8) and the fleet snapshot (WRK-10), and the pure functions over them:
# `quota_hold_reason` (the text `worker status` shows for a held task) and
# `worker_status_json` (the `worker status --json` shape). Stores fill these values
# (markertools.domain.ports.LeaseStore); nothing here does I/O.
#
# Invariants:
#   Rule 1: every value is frozen; times are epoch seconds (float).
#   Rule 2: worker_status_json returns exactly the keys of the CLI contract:
#           {"tasks": {STATUS: COUNT}, "hosts": [{"host", "lease_expires_at", "running":
#           [{"task_id", "turn", "started_at"}]}], "held_by_quota": [{"task_id",
#           "created_by", "reason"}], "unleased": [{"task_id", "host", "turn",
#           "started_at", "lease_expires_at"}], "approvals_pending": [{"id", "task_id",
#           "kind", "command", "asked_at"}]}, hosts by name, tasks and requests by id
#           (stable output). `worker status` (text and JSON) is built from the snapshot
#           only.
#   Rule 3: `pick_claim` is the claim order every store follows: skip a task whose
#           affinity is another host's and has not ended (until > now) and a task whose
#           creator's quota is exhausted; of the rest, tasks a queued or running task
#           waits for first (FLT-5), then tasks with a live affinity to the claiming host,
#           then oldest (created_at, id).
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Final

import attrs

from markertools.domain.approvals import ApprovalRequest
from markertools.domain.model import Quota, Task
from markertools.domain.money import usd_text
from markertools.text.msg import DEFAULT_LOCALE, Msg, msg

REQUEUE_KINDS: Final[frozenset[str]] = frozenset({"platform_fresh", "goal_breakpoint"})


@attrs.frozen
class Lease:
    """WRK-6: a running task's hold on its host until `expires_at`; `pgid` / `machine_id`
    name the host's app-server process group for the task (recorded after the start)."""

    task_id: str
    host: str
    expires_at: float
    pgid: int | None = None
    machine_id: str | None = None
    started_at: float = 0.0  # when the task was claimed (the lease first written)
    epoch: int = 0  # FLT-1: the fencing number of the claim the lease belongs to
    engine: str | None = None  # ENG-1: the holding host's engine (recorded with the pgid)


@attrs.frozen
class Affinity:
    """WRK-6: after a crash requeue the task belongs to `host` (its directory is there)
    until `until`; other hosts skip it until then."""

    task_id: str
    host: str
    until: float


@attrs.frozen
class Checkpoint:
    """WRK-7: the last goal round a task completed, in which thread and turn."""

    task_id: str
    round: int
    thread_id: str | None
    turn_id: str | None
    at: float


@attrs.frozen
class RunningTask:
    """WRK-10: one task a host runs: its turn number (0 when unknown) and claim time."""

    task_id: str
    turn: int
    started_at: float


@attrs.frozen
class HostLeases:
    """WRK-10: a host with at least one live lease; `lease_expires_at` is the latest."""

    host: str
    lease_expires_at: float
    running: tuple[RunningTask, ...] = ()
    engine: str | None = None  # ENG-1: the host's engine, as its leases record it


@attrs.frozen
class QuotaHold:
    """WRK-8: a queued task no host claims while its creator's quota is exhausted;
    `used_usd` / `total_usd` are the creator's quota (None when the store did not say)."""

    task_id: str
    created_by: str
    reason: Msg
    used_usd: Decimal | None = None
    total_usd: Decimal | None = None


@attrs.frozen
class UnleasedRun:
    """WRK-10: a running task no live lease holds - its lease expired (its host died or
    stopped renewing; any host may requeue it, WRK-6), it was claimed without one, or it
    was written `running` with no host at all (a world file, a hand edit: `host` None).
    `started_at` / `lease_expires_at` are its last lease's (None: it never had one)."""

    task_id: str
    host: str | None
    turn: int
    started_at: float | None = None
    lease_expires_at: float | None = None


@attrs.frozen
class FleetSnapshot:
    """WRK-10: what `worker status` shows, read in one go."""

    tasks: Mapping[str, int] = attrs.field(factory=dict)
    hosts: tuple[HostLeases, ...] = ()
    held_by_quota: tuple[QuotaHold, ...] = ()
    now: float = 0.0
    unleased: tuple[UnleasedRun, ...] = ()
    # additive (APR-4): the pending approval requests of running tasks, by asked_at, id
    approvals_pending: tuple[ApprovalRequest, ...] = ()


def host_engine(engines: Iterable[str | None]) -> str | None:
    """ENG-1: a host's engine from what its leases record (every lease of a host records
    the host's `--engine`; None when none recorded one yet, e.g. a pre-engine host)."""
    named = sorted({e for e in engines if e is not None})
    return named[0] if len(named) == 1 else (",".join(named) or None)


def quota_hold_reason(user: str, quota: Quota) -> Msg:
    """The reason a held task shows (WRK-8): whose quota, spent and total."""
    return msg(
        "attempts.quota_held",
        user=user,
        used=usd_text(quota.used_usd),
        total="-" if quota.total_usd is None else usd_text(quota.total_usd),
    )


def worker_status_json(snapshot: FleetSnapshot, locale: str = DEFAULT_LOCALE) -> dict[str, object]:
    """The `worker status --json` document of a snapshot (Rule 2), reasons rendered."""
    return {
        "tasks": {status: snapshot.tasks[status] for status in sorted(snapshot.tasks)},
        "hosts": [
            {
                "host": h.host,
                "engine": h.engine,
                "lease_expires_at": h.lease_expires_at,
                "running": [
                    {"task_id": r.task_id, "turn": r.turn, "started_at": r.started_at}
                    for r in sorted(h.running, key=lambda r: r.task_id)
                ],
            }
            for h in sorted(snapshot.hosts, key=lambda h: h.host)
        ],
        "held_by_quota": [
            {"task_id": q.task_id, "created_by": q.created_by, "reason": q.reason.render(locale)}
            for q in sorted(snapshot.held_by_quota, key=lambda q: q.task_id)
        ],
        "unleased": [
            {
                "task_id": u.task_id,
                "host": u.host,
                "turn": u.turn,
                "started_at": u.started_at,
                "lease_expires_at": u.lease_expires_at,
            }
            for u in sorted(snapshot.unleased, key=lambda u: u.task_id)
        ],
        "approvals_pending": [
            {
                "id": a.id,
                "task_id": a.task_id,
                "kind": a.kind,
                "command": None if a.command is None else list(a.command),
                "asked_at": a.asked_at,
            }
            for a in sorted(snapshot.approvals_pending, key=lambda a: a.id)
        ],
    }


def pick_claim(
    queued: Iterable[Task],
    host: str,
    now: float,
    affinity: Callable[[str], Affinity | None],
    exhausted: Callable[[str], bool],
    awaited: Callable[[str], bool] = lambda _task_id: False,
) -> Task | None:
    """Rule 3: the queued task `host` claims next, or None. `affinity(task_id)` is the
    task's affinity, `exhausted(user)` whether the user's quota is used up (DOM-7),
    `awaited(task_id)` whether a queued or running task waits for it (FLT-5)."""
    best: tuple[int, int, float, str] | None = None
    chosen: Task | None = None
    for task in queued:
        aff = affinity(task.id)
        live = aff is not None and aff.until > now
        if live and aff is not None and aff.host != host:
            continue
        if task.created_by is not None and exhausted(task.created_by):
            continue
        key = (0 if awaited(task.id) else 1, 0 if live else 1, task.created_at, task.id)
        if best is None or key < best:
            best, chosen = key, task
    return chosen
