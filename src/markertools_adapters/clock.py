# Owns: the clock and random-source adapters (DOM-5, INJ-7): the real ones (SystemClock,
# SystemRandom via `secrets`) and the controllable ones tests and world-file runs use
# (VirtualClock, whose sleep advances time instantly; SeededRandom, reproducible).
#
# Invariants:
#   Rule 1: VirtualClock never blocks: sleep(s) adds max(s, 0) to now and returns.
#   Rule 2: token_hex(n) always returns 2*n lowercase hex characters.
from __future__ import annotations

import math
import random
import secrets
import threading
import time


class SystemClock:
    """The real clock: epoch seconds from time.time(), sleeping with time.sleep()."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0 and math.isfinite(seconds):
            time.sleep(seconds)


class VirtualClock:
    """A clock that only moves when slept on (or advanced): a 300-second wait finishes at
    once. Thread-safe; `slept` lists every sleep, in order, for inspection."""

    def __init__(self, now: float = 0.0) -> None:
        self._now = float(now)
        self._lock = threading.Lock()
        self.slept: list[float] = []

    def now(self) -> float:
        with self._lock:
            return self._now

    def sleep(self, seconds: float) -> None:
        step = seconds if seconds > 0 and math.isfinite(seconds) else 0.0
        with self._lock:
            self._now += step
            self.slept.append(step)

    def advance(self, seconds: float) -> None:
        """Move time forward without recording a sleep."""
        if seconds > 0 and math.isfinite(seconds):
            with self._lock:
                self._now += seconds


class SystemRandom:
    """Unpredictable tokens from the OS (`secrets`): nonces and generated ids."""

    def token_hex(self, nbytes: int) -> str:
        return secrets.token_hex(nbytes)


class SeededRandom:
    """Reproducible tokens for tests and demos. Never use it where unpredictability matters."""

    def __init__(self, seed: int | str = 0) -> None:
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def token_hex(self, nbytes: int) -> str:
        with self._lock:
            return self._rng.randbytes(max(nbytes, 0)).hex()
