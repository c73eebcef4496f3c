# Owns: how `tools serve` keeps its log bounded (TOL-11): `RateLimitedLog`, its
# refusals at most one line per period (the first of a period as it happened, with how
# many more came in the period before), so a flood of forged tokens or foreign Host
# headers costs a bounded number of lines; and `RateLimitFilter`, the same bound on the
# records of the libraries under it (the MCP SDK, uvicorn, the PostgreSQL pool), whose
# lines a client or an outage can provoke (a notification into a session it just ended,
# a malformed request, a failed reconnect), each one line.
#
# Must never: log more than one line per period per source, or drop the count of what
# it held back.
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Final

DEFAULT_PERIOD: Final[float] = 10.0


class RateLimitedLog:
    """`note(line)`: logged as a warning unless a line was logged less than `period`
    seconds ago; then counted, and the count goes with the next line logged."""

    def __init__(
        self,
        log: logging.Logger,
        period: float = DEFAULT_PERIOD,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = log
        self.period = period
        self._clock = clock
        self._last: float | None = None
        self.held = 0  # lines held back since the last one logged
        self.noted = 0  # every line noted (tests, bench)
        self.logged = 0  # lines logged

    def note(self, line: str) -> None:
        self.noted += 1
        now = self._clock()
        if self._last is not None and now - self._last < self.period:
            self.held += 1
            return
        if self.held:
            line = f"{line} ({self.held} more like it in the {self.period:g} s before)"
        self._log.warning("%s", line)
        self._last = now
        self.held = 0
        self.logged += 1


class RateLimitFilter(logging.Filter):
    """On a handler: records of the loggers under `prefixes` pass at most once per
    `period` per (logger, message template), the next one passing carrying the count
    of those held back; every other record passes."""

    def __init__(
        self,
        prefixes: Sequence[str],
        period: float = DEFAULT_PERIOD,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.prefixes = tuple(prefixes)
        self.period = period
        self._clock = clock
        self._last: dict[tuple[str, str], float] = {}
        self._held: dict[tuple[str, str], int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        name = record.name
        if not any(name == p or name.startswith(p + ".") for p in self.prefixes):
            return True
        key = (name, str(record.msg)[:200])
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last < self.period:
            self._held[key] = self._held.get(key, 0) + 1
            return False
        if len(self._last) > 1000:  # bounded, whatever the variety of messages
            self._last.clear()
            self._held.clear()
        held = self._held.pop(key, 0)
        self._last[key] = now
        if held:
            record.msg = f"{record.msg} ({held} more like it in the {self.period:g} s before)"
        record.exc_info = None  # one line: no traceback of a library's own error
        record.exc_text = None
        text = record.getMessage()
        if "\n" in text:
            record.msg, record.args = " ".join(text.split()), None
        return True
