# Owns: how one tool call waits (TOL-6): `CallWaiter`, the ChangeWaiter a task_poll or
# wait_threads call runs with - it wakes early when a waited task's status changes
# (through the store's own waiter, LISTEN/NOTIFY on PostgreSQL, plus a status read per
# slice, which is how SQLite and the memory store wake) and at once when the call's stop
# event is set (the request was cancelled, `notifications/cancelled`); `StopClock`, the
# clock whose sleep the stop event ends too (delivery falls back to sleeping once a
# waiter's round budget is spent).
#
# Must never: wait longer than asked, or change what a poll reports - it only decides
# WHEN the next read happens (an early return is harmless: the caller re-reads).
from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Final

from markertools import ChangeWaiter, Clock, TaskStore

SQL_SLICE: Final[float] = 0.25  # with the store's waiter: it wakes us; a read per slice
POLL_SLICE: Final[float] = 0.025  # without one (SQLite, memory): a status read per slice


class CallWaiter:
    """The ChangeWaiter of one call (see the module header)."""

    def __init__(self, tasks: TaskStore, stop: threading.Event, inner: ChangeWaiter | None) -> None:
        self._tasks = tasks
        self._stop = stop
        self._inner = inner

    def _statuses(self, task_ids: Sequence[str]) -> dict[str, str | None]:
        rows = self._tasks.get_tasks(list(task_ids))
        return {i: (rows[i].status if i in rows else None) for i in task_ids}

    def wait_for_change(self, task_ids: Sequence[str], seconds: float) -> None:
        end = time.monotonic() + max(0.0, float(seconds))
        try:
            before = self._statuses(task_ids)
        except Exception:  # a failing read: wait plainly; the caller's read reports it
            before = None
        while not self._stop.is_set():
            remaining = end - time.monotonic()
            if remaining <= 0:
                return
            if self._inner is not None:
                self._inner.wait_for_change(task_ids, min(remaining, SQL_SLICE))
            elif self._stop.wait(min(remaining, POLL_SLICE)):
                return
            if before is not None:
                try:
                    if self._statuses(task_ids) != before:
                        return
                except Exception:
                    before = None


class StopClock:
    """The real clock whose sleep ends early when the call's stop event is set."""

    def __init__(self, inner: Clock, stop: threading.Event) -> None:
        self._inner = inner
        self._stop = stop

    def now(self) -> float:
        return self._inner.now()

    def sleep(self, seconds: float) -> None:
        self._stop.wait(max(0.0, float(seconds)))
