# Owns: `FairPool`, the store work of one `tools serve` (TOL-11): every store call of a
# tool call (authorising its token, planning its wait, delivering it) and every read of
# the shared status watch runs in at most `size` worker threads, and the work that has
# to queue for one is served start-time fair by key (a token): work of a key with
# nothing queued goes before the backlog of keys with much queued, so a burst of one
# task's (or many tasks') calls delays another task's call by about one job, not by the
# burst. `run_stoppable` runs a delivery that can be told to stop: on cancellation the
# stop event is set and the thread is waited for (it ends at once), never abandoned, so
# the threads in use never exceed the bound.
#
# Must never: run more than `size` jobs at once; leave a job's slot taken after its job
# ended, was cancelled while queued, or raised; abandon a running thread.
#
# Invariants:
#   Rule 1: a job's tag is max(virtual time, its key's last tag + 1); the queue is served
#           lowest tag first (ties: arrival order); virtual time is the tag of the job
#           last started.
from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar

import anyio
import anyio.to_thread
import attrs

from markertools import InvalidArgument

T = TypeVar("T")

DEFAULT_POOL_SIZE: Final[int] = 8
_PRUNE_KEYS: Final[int] = 10_000  # keys remembered before the stale ones are dropped


@attrs.define(eq=False)
class _Ticket:
    event: anyio.Event
    granted: bool = False
    cancelled: bool = False


class FairPool:
    """At most `size` store jobs at once, queued ones served fairly by key (Rule 1)."""

    def __init__(self, size: int = DEFAULT_POOL_SIZE) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InvalidArgument(f"size must be an integer >= 1; got {size!r}")
        self.size = size
        self.busy = 0  # jobs running (tests, bench)
        self._queue: list[tuple[float, int, _Ticket]] = []
        self._seq = itertools.count()
        self._virtual = 0.0
        self._last: dict[str, float] = {}
        self._limiter: anyio.CapacityLimiter | None = None  # made in the event loop

    @property
    def queued(self) -> int:
        return sum(1 for _, _, t in self._queue if not t.cancelled)

    async def run(self, key: str, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in a worker thread once the key's turn comes. A cancellation while
        the job runs is delivered when it returns (store calls are short)."""
        await self._acquire(key)
        try:
            return await anyio.to_thread.run_sync(fn, *args, limiter=self._threads())
        finally:
            self._release()

    async def run_stoppable(self, key: str, fn: Callable[[], T], stop: threading.Event) -> T:
        """`fn()` in a worker thread; a cancellation sets `stop` at once and waits for the
        thread (which `stop` ends) before it is raised."""
        await self._acquire(key)
        outcome: list[T] = []
        failure: list[BaseException] = []
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(_set_when_cancelled, stop)
                try:
                    outcome.append(await anyio.to_thread.run_sync(fn, limiter=self._threads()))
                except Exception as exc:  # raised below, not as an exception group
                    failure.append(exc)
                group.cancel_scope.cancel()
        finally:
            self._release()
        if failure:
            raise failure[0]
        return outcome[0]

    def _threads(self) -> anyio.CapacityLimiter:
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.size)
        return self._limiter

    async def _acquire(self, key: str) -> None:
        tag = max(self._virtual, self._last.get(key, 0.0))
        self._last[key] = tag + 1.0
        if len(self._last) > _PRUNE_KEYS:
            self._last = {k: v for k, v in self._last.items() if v > self._virtual}
        if self.busy < self.size and not self._queue:
            self.busy += 1
            self._virtual = tag
            return
        ticket = _Ticket(anyio.Event())
        heapq.heappush(self._queue, (tag, next(self._seq), ticket))
        try:
            await ticket.event.wait()
        except BaseException:
            if ticket.granted:  # handed the slot as it was cancelled: hand it on
                self._release()
            else:
                ticket.cancelled = True
            raise

    def _release(self) -> None:
        while self._queue:
            tag, _, ticket = heapq.heappop(self._queue)
            if ticket.cancelled:
                continue
            ticket.granted = True  # the slot passes on: `busy` stays
            self._virtual = tag
            ticket.event.set()
            return
        self.busy -= 1


async def _set_when_cancelled(stop: threading.Event) -> None:
    try:
        await anyio.sleep_forever()
    finally:
        stop.set()
