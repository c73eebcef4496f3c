# Owns: how one delivery of a worker task waits (FLT-5): `DeliveryWaiter`, the
# ChangeWaiter and Clock a task's delivery runs with. Its first wait tells the run that
# its task is now waiting (the run then gives its run slot back and may stop its idle
# app-server) and records in the store which tasks it waits for (`mark_awaited`: those are
# claimed first); it wakes early on a change (the store's own waiter - LISTEN/NOTIFY on
# PostgreSQL - else a status read per slice) and at once when the run halts it.
#
# Must never: wait longer than asked, or change what a poll reports - it only decides WHEN
# the next read happens; call into the event loop except through the run's thread-safe
# `waiting_on`.
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

from markertools import ChangeWaiter, Clock, TaskStore, summarize_error

POLL_SLICE: Final[float] = 0.25  # without a store waiter: a status read per slice


class DeliveryWaiter:
    """ChangeWaiter + Clock of one delivery of task `task_id` (see the module header)."""

    def __init__(
        self,
        task_id: str,
        *,
        tasks: TaskStore,
        clock: Clock,
        inner: ChangeWaiter | None,
        halt: threading.Event,
        waiting_on: Callable[[tuple[str, ...]], None],
        mark_awaited: Callable[[str, Sequence[str]], Any] | None,
    ) -> None:
        self._task_id = task_id
        self._tasks = tasks
        self._clock = clock
        self._inner = inner
        self._halt = halt
        self._waiting_on = waiting_on
        self._mark = mark_awaited
        self._marked: tuple[str, ...] | None = None
        self.waited = False

    # ---- what the run learns ---------------------------------------------------------------

    def _began(self, targets: tuple[str, ...]) -> None:
        if self._marked != targets and self._mark is not None and targets:
            try:
                self._mark(self._task_id, targets)
                self._marked = targets
            except Exception as exc:  # a missed mark only costs claim order
                import logging

                logging.getLogger("markertools.worker").warning(
                    "recording what task %s waits for failed: %s",
                    self._task_id,
                    summarize_error(exc),
                )
        if not self.waited:
            self.waited = True
            self._waiting_on(targets)

    # ---- ChangeWaiter ----------------------------------------------------------------------

    def wait_for_change(self, task_ids: Sequence[str], seconds: float) -> None:
        targets = tuple(i for i in task_ids if i != self._task_id)
        self._began(targets)
        end = time.monotonic() + max(0.0, float(seconds))
        if self._inner is not None:
            if not self._halt.is_set():
                self._inner.wait_for_change(task_ids, min(seconds, max(0.0, seconds)))
            return
        try:
            before = self._statuses(task_ids)
        except Exception:
            before = None
        while not self._halt.is_set():
            remaining = end - time.monotonic()
            if remaining <= 0 or self._halt.wait(min(remaining, POLL_SLICE)):
                return
            if before is not None:
                try:
                    if self._statuses(task_ids) != before:
                        return
                except Exception:
                    before = None

    def _statuses(self, task_ids: Sequence[str]) -> dict[str, str | None]:
        rows = self._tasks.get_tasks(list(task_ids))
        return {i: (rows[i].status if i in rows else None) for i in task_ids}

    # ---- Clock ---------------------------------------------------------------------------

    def now(self) -> float:
        return self._clock.now()

    def sleep(self, seconds: float) -> None:
        self._began(())
        self._halt.wait(max(0.0, float(seconds)))


__all__ = ["DeliveryWaiter"]
