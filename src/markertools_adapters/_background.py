# Owns: `Background`, the one owner of a component's background work (the supervisor,
# the app-server client, the worker host, the tools server): an `asyncio.TaskGroup`
# run by a single runner task, and a guard around every child that turns an
# unexpected exception into a logged fault handed to the component (which raises an
# alert and stops cleanly), never a lost task.
#
# Must never: let a child's exception vanish ("Task exception was never retrieved"),
# let one failing child cancel its siblings, or leave a child running after `close()`.
#
# Invariants:
#   Rule 1: every child is a task of the runner's TaskGroup; `close()` cancels them all
#           and returns only once each has finished.
#   Rule 2: a child that raises (anything but cancellation) is logged with its
#           traceback and reported once to `on_fault(name, exc)`; the group and the
#           other children carry on.
#   Rule 3: a fault handler that itself raises is logged, never propagated.
#   Rule 4: `spawn` after `close()` (a late callback) closes the coroutine unrun and
#           says so in the log; it never raises into the caller.
from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

FaultHandler = Callable[[str, BaseException], None]

_log = logging.getLogger("markertools.background")


class Background:
    """`bg = Background("supervisor", on_fault=...)`; `await bg.start()`;
    `bg.spawn(coro, name="deliver notice")`; `await bg.close()`."""

    def __init__(
        self, owner: str, *, on_fault: FaultHandler | None = None, log: logging.Logger | None = None
    ) -> None:
        self.owner = owner
        self.on_fault = on_fault
        self.log = log or _log
        self._group: asyncio.TaskGroup | None = None
        self._runner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._ready: asyncio.Event | None = None
        self._children: set[asyncio.Task[Any]] = set()
        self._closed = False
        self.faults = 0

    @property
    def running(self) -> bool:
        return self._group is not None and not self._closed

    async def start(self) -> None:
        """Start the runner task that owns the TaskGroup (idempotent)."""
        if self._runner is not None:
            return
        self._closed = False
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._runner = asyncio.get_running_loop().create_task(
            self._run(), name=f"{self.owner}: background"
        )
        await self._ready.wait()

    async def _run(self) -> None:
        assert self._stop is not None and self._ready is not None
        async with asyncio.TaskGroup() as group:
            self._group = group
            self._ready.set()
            await self._stop.wait()
            for task in list(self._children):
                task.cancel()
        self._group = None

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any] | None:
        """Run `coro` as a guarded child (Rule 2). Returns its task, or None when the
        owner is closed or not started (the coroutine is closed unrun, Rule 4)."""
        group = self._group
        if group is None or self._closed:
            coro.close()
            self.log.debug("%s: %s not started: background work is closed", self.owner, name)
            return None
        guarded = self._guard(coro, name)
        try:
            task = group.create_task(guarded, name=f"{self.owner}: {name}")
        except RuntimeError:  # the group is shutting down (Rule 4)
            guarded.close()
            coro.close()
            return None
        self._children.add(task)
        task.add_done_callback(self._children.discard)
        return task

    async def _guard(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.faults += 1
            self.log.error("%s: %s failed", self.owner, name, exc_info=exc)
            self.fault(name, exc)

    def fault(self, name: str, exc: BaseException) -> None:
        """Hand a fault to the owner's handler (Rule 3: a failing handler is logged).
        Also for faults of synchronous callbacks the owner guards itself."""
        if self.on_fault is None:
            return
        try:
            self.on_fault(name, exc)
        except Exception:
            self.log.exception("%s: the fault handler for %s failed", self.owner, name)

    async def close(self) -> None:
        """Cancel every child and wait for all of them (Rule 1)."""
        self._closed = True
        runner, self._runner = self._runner, None
        if runner is None:
            return
        assert self._stop is not None
        self._stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await runner

    async def wait_idle(self) -> None:
        """Wait until no child is running (tests, orderly shutdowns)."""
        while self._children:
            await asyncio.gather(*list(self._children), return_exceptions=True)
