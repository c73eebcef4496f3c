# Owns: `StatusWatch`, the one watch of a `tools serve` connection's waiting calls
# (TOL-11, TOL-6): a task_poll or wait_threads call waits here without a thread - an
# event per call - until none of its targets is queued or running, its sender is no
# longer running, or its time is up. One background loop (`run`, owned by the server's
# lifespan task group) wakes on a change (the store's own change waiter: LISTEN/NOTIFY
# on PostgreSQL, in one listening thread) or after a slice (SQLite, the memory store),
# then reads the statuses of every waited task and sender in ONE store call in the
# fair pool, and wakes the calls that are done. A read that fails is reported
# (`on_failure`, the server's outage state) and tried again after a pause - while an
# outage lasts, once the store is back (`store_back`); the waits go on meanwhile.
#
# Must never: hold a thread per waiting call; read the store more than once per slice
# whatever the number of waits; decide what a call reports - the call's delivery reads
# again and decides (an early wake-up is harmless).
from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Final

import anyio
import anyio.to_thread
import attrs

from markertools import CallWait, ChangeWaiter, Task, TaskStore
from markertools_adapters.tools._pool import FairPool

log = logging.getLogger("markertools.tools.serve")

SQL_SLICE: Final[float] = 0.25  # with the store's waiter: it wakes us; a read per slice
POLL_SLICE: Final[float] = 0.025  # without one (SQLite, memory): a status read per slice
FAILED_PAUSE: Final[float] = 0.5  # after a failed read
READ_SHARE: Final[float] = 0.25  # the reads take at most this share of the watch's time
WATCH_KEY: Final[str] = "\x00status-watch"  # the watch's own key in the fair pool
RUNNING: Final[frozenset[str]] = frozenset({"queued", "running"})


@attrs.define(eq=False)
class _Wait:
    sender: str
    task_ids: tuple[str, ...]
    done: anyio.Event

    def settled(self, rows: dict[str, Task]) -> bool:
        sender = rows.get(self.sender)
        if sender is None or sender.status != "running":
            return True  # cancelled, finished or gone: the delivery says so at once
        return all(i not in rows or rows[i].status not in RUNNING for i in self.task_ids)


class StatusWatch:
    """The waits of one server connection (see the module header)."""

    def __init__(
        self,
        tasks: TaskStore,
        waiter: ChangeWaiter | None,
        pool: FairPool,
        *,
        on_failure: Callable[[BaseException], None] = lambda exc: None,
        on_success: Callable[[], None] = lambda: None,
        store_back: Callable[[float], Awaitable[bool]] | None = None,
    ) -> None:
        self._tasks = tasks
        self._waiter = waiter
        self._pool = pool
        self._on_failure = on_failure
        self._on_success = on_success
        self._store_back = store_back
        self._waits: set[_Wait] = set()
        self._arrived: anyio.Event | None = None
        self._listen: anyio.CapacityLimiter | None = None
        self.reads = 0  # store reads made (tests, bench)

    @property
    def waiting(self) -> int:
        return len(self._waits)

    async def wait(self, plan: CallWait, seconds: float) -> None:
        """Return once the plan's wait is over (module header) or after `seconds`."""
        entry = _Wait(plan.sender, plan.task_ids, anyio.Event())
        self._waits.add(entry)
        if self._arrived is not None:
            self._arrived.set()
        try:
            with anyio.move_on_after(max(0.0, seconds)):
                await entry.done.wait()
        finally:
            self._waits.discard(entry)

    async def run(self) -> None:
        """The loop; runs until cancelled (the server's lifespan ends)."""
        pause = POLL_SLICE
        while True:
            if not self._waits:
                self._arrived = anyio.Event()
                await self._arrived.wait()
                self._arrived = None
                continue
            await self._pause(pause)
            if not self._waits:
                continue
            back = self._store_back
            if back is not None and not await back(time.monotonic() + SQL_SLICE):
                continue  # FLT-3: no reads while the store is down (the watchdog probes)
            entries = list(self._waits)  # a wait that arrives during the read: next round
            ids = _ids(entries)
            began = time.monotonic()
            try:
                rows = await self._pool.run(WATCH_KEY, self._read, ids)
            except Exception as exc:
                self._on_failure(exc)
                await anyio.sleep(FAILED_PAUSE)
                continue
            self._on_success()
            took = time.monotonic() - began
            # the reads take at most READ_SHARE of the time, however many tasks wait
            pause = max(POLL_SLICE, took * (1 - READ_SHARE) / READ_SHARE)
            for entry in entries:  # only those whose tasks this read holds
                if entry in self._waits and entry.settled(rows):
                    self._waits.discard(entry)
                    entry.done.set()

    def _read(self, ids: Sequence[str]) -> dict[str, Task]:
        self.reads += 1
        return dict(self._tasks.get_tasks(list(ids)))

    async def _pause(self, pause: float) -> None:
        if self._waiter is None:
            await anyio.sleep(pause)
            return
        if self._listen is None:
            self._listen = anyio.CapacityLimiter(1)  # one listening thread per watch
        ids = _ids(list(self._waits))
        try:
            await anyio.to_thread.run_sync(
                self._waiter.wait_for_change, ids, max(pause, SQL_SLICE), limiter=self._listen
            )
        except Exception as exc:  # the port promises not to raise; sleep instead
            log.info("change waiter failed: %s", exc)
            await anyio.sleep(pause)


def _ids(entries: list[_Wait]) -> list[str]:
    """Every sender and target of the waits, once each."""
    ids: dict[str, None] = {}
    for entry in entries:
        ids[entry.sender] = None
        ids.update(dict.fromkeys(entry.task_ids))
    return list(ids)
