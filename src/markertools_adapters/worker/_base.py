# Owns: what the parts of one task run share (`RunBase`: the run's fields, its host as a
# `RunOwner`, its store calls, its events) - so the delivery (`_delivery.py`), the ends
# (`_ends.py`) and the turn loop (`run.py`) are small modules over one state.
#
# Must never: do anything itself; it only declares.
from __future__ import annotations

import asyncio
import threading
from typing import Any, Protocol

from markertools import Claim, Ports, Task
from markertools_adapters._outage import Outage, OutageTooLong
from markertools_adapters.worker._runstore import RunStore
from markertools_adapters.worker.engine import Engine
from markertools_adapters.worker.events import HostEvent
from markertools_adapters.worker.leases import Leases
from markertools_adapters.worker.settings import WorkerSettings


class RunOwner(Protocol):
    """What a run needs of its host (`WorkerHost`)."""

    settings: WorkerSettings
    store: Any
    ports: Ports
    leases: Leases
    outage: Outage
    stopping: bool
    broker: Any  # APR-1: the approval broker, None with `--approvals decline`
    tools_url: str | None  # TOL-10: where the host serves its tasks' tools (None: it does not)

    def emit(self, event: HostEvent) -> None: ...

    def run_ended(self, run: Any) -> None: ...

    def waiting_changed(self, run: Any) -> None: ...

    def may_wait(self) -> bool: ...

    async def resume_slot(self, run: Any) -> None: ...

    def outage_too_long(self, exc: OutageTooLong) -> None: ...


class RunBase:
    """The fields of a run (set by `TaskRun.__init__`)."""

    host: RunOwner
    claim: Claim
    task: Task
    task_id: str
    turn: int
    closing: bool
    cancelled: bool
    stopping: bool
    lost: str | None
    waiting: bool
    parked: bool
    thread_id: str | None
    db: RunStore
    engine: Engine | None
    _directory: str
    _halt: threading.Event
    _halted_event: asyncio.Event
    _signals: asyncio.Queue[tuple[str, Any]]
    _wait_began: asyncio.Event
    _loop: asyncio.AbstractEventLoop | None

    def _emit(self, kind: str, **details: Any) -> None:
        self.host.emit(HostEvent(kind, self.task_id, details=details))

    def waiting_on(self, targets: tuple[str, ...]) -> None:
        """FLT-5, from the delivery's thread: the delivery began to wait."""
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(self._wait_began.set)

    async def _open(self, resume: str | None) -> str | None:  # run.py's
        raise NotImplementedError

    async def _record_group(self) -> None:  # run.py's
        raise NotImplementedError

    async def _fail(self, turn_id: str | None, reason: Any, cost: Any) -> None:  # _ends.py's
        raise NotImplementedError


__all__ = ["RunBase", "RunOwner"]
