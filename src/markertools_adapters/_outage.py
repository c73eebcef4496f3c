# Owns: riding out a store outage (FLT-3) for the long-running commands (`worker run`,
# `tools serve`, `dots serve`): `Outage`, one store's outage state - when it started,
# its cause, the budget (`--store-outage-seconds`) - with the two log lines people read
# ("store outage began: CAUSE", "store outage ended after N s"), and the retry loops
# around a store call: capped exponential backoff with full jitter (AWS's "Exponential
# Backoff And Jitter"), sync (`retry_call`) and async (`aretry_call`, the call in a
# worker thread).
#
# Must never: retry a failure a retry cannot cure (only `StoreUnavailable` is retried,
# FLT-8); sleep past the budget; log a line per failed try (one when the outage begins,
# one when it ends); hide the cause.
#
# Invariants:
#   Rule 1: `delay(n)` is uniform in [0, min(cap, base * 2**n)] (full jitter): never
#           negative, never above `cap`.
#   Rule 2: an outage begins at the first failure after a success (or the start) and
#           ends at the next success; `OutageTooLong` is raised once the time since it
#           began passes the budget, naming the budget and the last cause.
from __future__ import annotations

import asyncio
import logging
import math
import random
import threading
import time
from collections.abc import Callable
from typing import Any, Final, TypeVar

from markertools import InvalidArgument, summarize_error
from markertools_adapters.errors import MarkertoolsError, StoreUnavailable

T = TypeVar("T")

DEFAULT_OUTAGE_SECONDS: Final[float] = 300.0
BACKOFF_BASE: Final[float] = 0.1  # seconds before the second try
BACKOFF_CAP: Final[float] = 5.0  # the longest pause between two tries
EX_TEMPFAIL: Final[int] = 75  # sysexits.h: a temporary failure, try again later

_log = logging.getLogger("markertools.outage")


class OutageTooLong(MarkertoolsError):
    """FLT-3: the store stayed unavailable longer than the outage budget."""

    def __init__(self, what: str, seconds: float, budget: float, cause: str) -> None:
        super().__init__(what, seconds, budget, cause)
        self.what = what
        self.seconds = seconds
        self.budget = budget
        self.cause = cause

    def __str__(self) -> str:
        return (
            f"{self.what} was unavailable for {_seconds_past(self.seconds, self.budget)} s,"
            " longer than the outage budget"
            f" of {self.budget:g} s (--store-outage-seconds); last error: {self.cause}"
        )


def _seconds_past(seconds: float, budget: float) -> str:
    """`seconds` in whole seconds, or in tenths rounded up when whole seconds would read
    "2 s, longer than the outage budget of 2 s"."""
    whole = f"{seconds:.0f}"
    if float(whole) > budget:
        return whole
    return f"{math.ceil(seconds * 10 - 1e-6) / 10:.1f}"


def backoff_delay(
    attempt: int,
    *,
    base: float = BACKOFF_BASE,
    cap: float = BACKOFF_CAP,
    rng: Callable[[], float] = random.random,
) -> float:
    """Rule 1: the pause before try `attempt + 1` (attempt 0 = after the first failure)."""
    ceiling = float(min(cap, base * (2.0 ** min(max(attempt, 0), 30))))
    return max(0.0, min(ceiling, ceiling * rng()))


class Outage:
    """One store's outage state (Rule 2). Thread-safe: the host's store calls run in
    worker threads."""

    def __init__(
        self,
        what: str = "the store",
        budget: float = DEFAULT_OUTAGE_SECONDS,
        *,
        log: logging.Logger = _log,
        clock: Callable[[], float] = time.monotonic,
        on_change: Callable[[bool, str], None] | None = None,
    ) -> None:
        if not budget >= 0:
            raise InvalidArgument(f"the outage budget must be >= 0 seconds; got {budget!r}")
        self.what = what
        self.budget = float(budget)
        self._log = log
        self._clock = clock
        self._on_change = on_change
        self._lock = threading.Lock()
        self.began: float | None = None  # clock time the current outage began
        self.cause: str | None = None
        self.outages = 0  # how many began so far

    @property
    def active(self) -> bool:
        return self.began is not None

    def seconds(self) -> float:
        """How long the current outage lasts so far (0 when none)."""
        began = self.began
        return 0.0 if began is None else max(0.0, self._clock() - began)

    def failed(self, exc: BaseException) -> None:
        """A store call failed with `exc` (retryable): begin an outage or go on with it;
        OutageTooLong once it lasts longer than the budget."""
        cause = summarize_error(exc)
        began = False
        with self._lock:
            self.cause = cause
            if self.began is None:
                self.began = self._clock()
                self.outages += 1
                began = True
            lasted = self._clock() - self.began
        if began:
            self._log.warning("%s outage began: %s", self.what, cause)
            if self._on_change is not None:
                self._on_change(True, cause)
        if lasted > self.budget:
            raise OutageTooLong(self.what, lasted, self.budget, cause)

    def ok(self) -> None:
        """A store call succeeded: the outage, if any, ended."""
        if self.began is None:  # the common case, without the lock
            return
        with self._lock:
            began, cause = self.began, self.cause
            self.began = None
        if began is None:
            return
        lasted = self._clock() - began
        self._log.warning(
            "%s outage ended after %.1f s (it began with: %s)", self.what, lasted, cause
        )
        if self._on_change is not None:
            self._on_change(False, cause or "")

    def remaining(self) -> float:
        return max(0.0, self.budget - self.seconds())


def retry_call(
    outage: Outage,
    fn: Callable[..., T],
    *args: Any,
    stop: threading.Event | None = None,
    sleep: Callable[[float], Any] | None = None,
    **kwargs: Any,
) -> T:
    """`fn(*args, **kwargs)`, retried on StoreUnavailable with capped backoff and jitter
    until it succeeds or the outage outlasts its budget (OutageTooLong). Any other
    exception propagates at once. `stop` set: the last StoreUnavailable propagates."""
    attempt = 0
    while True:
        try:
            result = fn(*args, **kwargs)
        except StoreUnavailable as exc:
            outage.failed(exc)  # raises OutageTooLong past the budget
            if stop is not None and stop.is_set():
                raise
            pause = min(backoff_delay(attempt), outage.remaining())
            attempt += 1
            if stop is not None:
                if stop.wait(pause):
                    raise
            elif sleep is not None:
                sleep(pause)
            else:
                time.sleep(pause)
            continue
        outage.ok()
        return result


async def aretry_call(outage: Outage, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`retry_call` for asyncio: each try in a worker thread, the pauses awaited (a
    cancel ends the wait at once)."""
    attempt = 0
    while True:
        try:
            result = await asyncio.to_thread(fn, *args, **kwargs)
        except StoreUnavailable as exc:
            outage.failed(exc)
            await asyncio.sleep(min(backoff_delay(attempt), outage.remaining()))
            attempt += 1
            continue
        outage.ok()
        return result


__all__ = [
    "BACKOFF_CAP",
    "DEFAULT_OUTAGE_SECONDS",
    "EX_TEMPFAIL",
    "Outage",
    "OutageTooLong",
    "aretry_call",
    "backoff_delay",
    "retry_call",
]
