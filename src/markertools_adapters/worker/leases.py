# Owns: the host's side of leases and crash recovery (WRK-6) over the store's lease
# methods (`renew_leases`, `record_process_group`, `expired_leases`, `requeue_expired`):
# renewing the leases of the tasks this host runs, recording a task's app-server process
# group with its lease, and requeueing the tasks of expired leases - first ending the
# dead host's process group when it is on this machine and still a codex app-server
# (or Claude Code's `claude`).
# A store without lease methods gets none of this (its tasks are recovered by hand).
#
# Must never: signal a process group that is not on this machine or whose leader is no
# longer a codex process (a recycled pid is never killed).
from __future__ import annotations

import inspect
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from markertools import Claim
from markertools_adapters._procgroups import group_alive, live_group_members


def supports_leases(store: Any) -> bool:
    return all(
        callable(getattr(store, name, None))
        for name in ("renew_leases", "record_process_group", "expired_leases", "requeue_expired")
    )


def is_codex_group(pgid: int) -> bool:
    """True when some live member of group `pgid` runs a codex executable or Claude
    Code's `claude` (ENG-2: an engine's process, never a recycled pid's)."""
    for pid in live_group_members(pgid) or []:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        name = os.path.basename(argv[0])
        if b"codex" in name or b"app-server" in argv or b"claude" in name:
            return True
    return False


def end_group(pgid: int, wait: float = 2.0) -> bool:
    """SIGKILL the group and wait for it to be gone; True when it is gone."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return True
        time.sleep(0.02)
    return not group_alive(pgid)


def _takes(fn: Any, keyword: str) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == keyword or p.kind is p.VAR_KEYWORD for p in params)


class Leases:
    """One host's lease calls (all blocking: run them off the event loop)."""

    def __init__(
        self, store: Any, host: str, machine: str, lease_seconds: float, engine: str | None = None
    ) -> None:
        self.store = store
        self.host = host
        self.machine = machine
        self.lease_seconds = lease_seconds
        self.engine = engine
        self.enabled = supports_leases(store)
        # ENG-1: a store of an older shape records no engine (its method lacks the keyword)
        self._with_engine = self.enabled and _takes(store.record_process_group, "engine")

    def renew(self, claims: Sequence[Claim], now: float) -> tuple[str, ...]:
        """Renew, fenced by each claim (FLT-1); the ids this host still holds (all of
        them without lease support)."""
        ids = tuple(c.task.id for c in claims)
        if not self.enabled or not claims:
            return ids
        held = self.store.renew_leases(
            self.host, list(claims), lease_seconds=self.lease_seconds, now=now
        )
        return tuple(held) if held is not None else ids

    def record_group(self, task_id: str, pgid: int, now: float) -> None:
        if self.enabled:
            extra = {"engine": self.engine} if self._with_engine else {}
            self.store.record_process_group(
                task_id, self.host, pgid, machine_id=self.machine, now=now, **extra
            )

    def expired(self, project: str, now: float) -> list[Any]:
        return list(self.store.expired_leases(now, project)) if self.enabled else []

    def recover(
        self,
        lease: Any,
        now: float,
        *,
        affinity_seconds: float,
        kind: str,
        checkpoint_round: int,
        reason: str | None = None,
    ) -> Any:
        """End the dead host's group when it is here and still codex, then requeue."""
        pgid = getattr(lease, "pgid", None)
        if (
            isinstance(pgid, int)
            and pgid > 1
            and getattr(lease, "machine_id", None) == self.machine
            and group_alive(pgid)
            and is_codex_group(pgid)
        ):
            end_group(pgid)
        return self.store.requeue_expired(
            lease.task_id,
            lease.host,
            now,
            affinity_seconds=affinity_seconds,
            kind=kind,
            checkpoint_round=checkpoint_round,
            reason=reason,
        )
