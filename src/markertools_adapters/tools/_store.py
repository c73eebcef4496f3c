# Owns: `StoreAccess`, the store work of one `tools serve` under store outages (FLT-3):
# every store call of a tool call runs in the fair pool (`_pool.FairPool`) through
# ports that note a `StoreUnavailable` they raise (`Probe`: the core turns a failing
# port into a refusal, so the server would not see it otherwise). A read (the token's
# authorisation, the wait's plan) that met the outage is tried again with capped
# backoff and jitter until it succeeds or the call's own budget is spent (`StoreDown`:
# the call is refused naming the outage); a delivery runs once, after the outage ended
# (`ready`). The outage (`_outage.Outage`) is logged once when it begins and once when
# it ends; while it lasts, calls wait for its end instead of trying the store, and
# `watchdog` probes the store (one probe at a time), and past `--store-outage-seconds`
# the outage is `fatal` (the server exits 75, EX_TEMPFAIL).
#
# Must never: retry a write (a delivery runs once; its own refusal names the error);
# retry past the call's budget; retry anything but StoreUnavailable (FLT-8); hide the
# cause; log per failed try.
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final, TypeVar

import anyio
import anyio.abc
import anyio.to_thread
import attrs

from markertools import Ports
from markertools_adapters._outage import Outage, OutageTooLong, backoff_delay
from markertools_adapters.errors import MarkertoolsError, StoreUnavailable
from markertools_adapters.tools._pool import FairPool

T = TypeVar("T")

# the fields of Ports that reach the store (the clock, randomness, executor, files and
# change waiter do not)
STORE_PORTS: Final[tuple[str, ...]] = (
    "tasks",
    "todos",
    "automations",
    "projects",
    "costs",
    "attempts",
    "audit",
    "followups",
    "permissions",
    "journal",
    "calls",
)
MIN_PROBE_PAUSE: Final[float] = 0.2  # the budget is re-checked at least this often


@attrs.define
class Probe:
    """What one attempt met: the first StoreUnavailable a store port raised."""

    failure: StoreUnavailable | None = None


class StoreDown(MarkertoolsError):
    """The store stayed unavailable through a call's whole budget."""

    def __init__(self, seconds: float, cause: str) -> None:
        super().__init__(seconds, cause)
        self.seconds = seconds
        self.cause = cause


class _Observed:
    """A port whose StoreUnavailable is noted on the probe (and raised as before)."""

    def __init__(self, inner: object, probe: Probe) -> None:
        self._inner = inner
        self._probe = probe

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr
        probe = self._probe

        def observed(*args: Any, **kwargs: Any) -> Any:
            try:
                return attr(*args, **kwargs)
            except StoreUnavailable as exc:
                if probe.failure is None:
                    probe.failure = exc
                raise

        return observed


def observed(port: T, probe: Probe) -> T:
    """`port` with its StoreUnavailable failures noted on `probe`."""
    return _Observed(port, probe)  # type: ignore[return-value]


def observed_ports(ports: Ports, probe: Probe) -> Ports:
    """`ports` whose store ports note their StoreUnavailable failures on `probe`."""
    changes: dict[str, Any] = {}
    for name in STORE_PORTS:
        port = getattr(ports, name)
        if port is not None:
            changes[name] = observed(port, probe)
    return attrs.evolve(ports, **changes)


class StoreAccess:
    """The store work of a server (see the module header)."""

    def __init__(self, pool: FairPool, outage: Outage) -> None:
        self.pool = pool
        self.outage = outage
        self.fatal: OutageTooLong | None = None
        self._fatal_event: anyio.Event | None = None
        self._began: anyio.Event | None = None
        self._ended: anyio.Event | None = None  # set when the current outage ends
        self._watched = False  # a watchdog probes while an outage lasts
        self._last: BaseException | None = None  # the outage's latest failure

    def failed(self, exc: BaseException) -> None:
        """A store call met `exc` (StoreUnavailable): the outage begins or goes on."""
        try:
            self.outage.failed(exc)
        except OutageTooLong as too_long:
            if self.fatal is None:
                self.fatal = too_long
            if self._fatal_event is not None:
                self._fatal_event.set()
        self._last = exc
        if self._ended is None:
            self._ended = anyio.Event()
        if self._began is not None:
            self._began.set()

    def ok(self) -> None:
        """A store call succeeded: the outage, if any, ended."""
        if not self.outage.active:
            return
        self.outage.ok()
        ended, self._ended = self._ended, None
        if ended is not None:
            ended.set()

    async def back(self, until: float) -> bool:
        """During an outage a watchdog probes: wait for its end (at most until `until`,
        monotonic time); True when the store is not known to be down."""
        ended = self._ended
        if not self.outage.active or not self._watched or ended is None:
            return not self.outage.active or not self._watched
        with anyio.move_on_after(max(0.0, until - time.monotonic())):
            await ended.wait()
        return not self.outage.active

    def down(self) -> StoreDown:
        return StoreDown(self.outage.seconds(), self.outage.cause or "unknown")

    async def read(self, key: str, until: float, fn: Callable[[Probe], T]) -> T:
        """`fn(probe)` in the pool, again after a pause while an attempt met the outage
        and the budget (`until`, monotonic time) lasts; StoreDown when it is spent. Any
        other exception propagates."""
        attempt = 0
        while True:
            if not await self.back(until):  # the watchdog tries for everyone meanwhile
                raise self.down()
            probe = Probe()
            try:
                result = await self.pool.run(key, fn, probe)
            except StoreUnavailable as exc:
                probe.failure = exc
            if probe.failure is None:
                self.ok()
                return result
            self.failed(probe.failure)
            pause = min(backoff_delay(attempt), until - time.monotonic())
            if pause <= 0 or self.fatal is not None:
                raise self.down()
            attempt += 1
            if not self._watched:
                await anyio.sleep(pause)

    async def ready(self, key: str, until: float, probe_fn: Callable[[Probe], object]) -> None:
        """Return at once without an outage; during one, once a probe succeeds (StoreDown
        when the budget is spent first)."""
        if self.outage.active:
            await self.read(key, until, probe_fn)

    def settle(self, probe: Probe) -> None:
        """After a delivery (run once): note what its ports met."""
        if probe.failure is not None:
            self.failed(probe.failure)
        else:
            self.ok()

    def stopping(self) -> anyio.Event:
        """Set once the outage outlasted its budget (`fatal`); make it in the event loop
        that serves."""
        if self._fatal_event is None:
            self._fatal_event = anyio.Event()
            if self.fatal is not None:
                self._fatal_event.set()
        return self._fatal_event

    async def watchdog(self, probe_fn: Callable[[Probe], object]) -> None:
        """While an outage lasts, probe the store (one probe at a time, in a thread of its
        own: a probe may block as long as the driver's pool timeout) and re-check the
        budget every pause: the end is logged when a probe succeeds, `fatal` set once
        the outage outlasts the budget. Runs until cancelled."""
        self._watched = True
        try:
            async with anyio.create_task_group() as group:
                while True:
                    self._began = anyio.Event()
                    if not self.outage.active:
                        await self._began.wait()
                    await self._ride_out(group, probe_fn)
                    if self.fatal is not None:
                        await anyio.sleep_forever()  # the server is stopping
        finally:
            self._watched = False

    async def _ride_out(
        self, group: anyio.abc.TaskGroup, probe_fn: Callable[[Probe], object]
    ) -> None:
        attempt = 0
        running: _ProbeRun | None = None
        while self.outage.active and self.fatal is None:
            if running is None:
                running = _ProbeRun(Probe())
                group.start_soon(_probe, probe_fn, running)
            pause = min(backoff_delay(attempt), max(0.0, self.outage.remaining()) + 0.05)
            attempt += 1
            await anyio.sleep(max(pause, MIN_PROBE_PAUSE))
            if running.done:
                self.settle(running.probe)
                running = None
            elif self._last is not None:  # still down: the budget is checked again
                self.failed(self._last)


@attrs.define
class _ProbeRun:
    probe: Probe
    done: bool = False


async def _probe(probe_fn: Callable[[Probe], object], run: _ProbeRun) -> None:
    def attempt() -> None:
        try:
            probe_fn(run.probe)
        except StoreUnavailable as exc:
            run.probe.failure = exc
        except Exception:  # not an outage (FLT-8): the next call meets it and says so
            run.probe.failure = None

    try:
        # its own thread, given up at shutdown: a probe blocks at most the pool's timeout
        await anyio.to_thread.run_sync(attempt, abandon_on_cancel=True)
    finally:
        run.done = True
