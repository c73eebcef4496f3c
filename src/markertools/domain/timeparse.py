# Owns: reading a point in time written by an agent (AUT-2 `first_run_at`, and any
# other field that takes one): epoch seconds or milliseconds, or an ISO 8601 string
# in the forms a person writes. Returns epoch seconds (float, UTC) or a reason.
#
# Accepted strings (ASCII digits only):
#   YYYY-MM-DD                                  midnight, default zone
#   YYYY-MM-DD(T| )HH:MM[:SS[.fraction]][offset] offset = Z or +HH:MM / -HH:MM;
#                                               without an offset: the default zone
# The default zone (AUT-2) is a setting: Asia/Shanghai unless an embedding codebase
# chooses another IANA zone with `set_default_time_zone(name)` (process-wide) or
# `default_time_zone(name)` (a context manager, this thread / task only: a contextvar).
# Everything else that `datetime.fromisoformat` would let through is refused: any
# other separator character, week dates (2026-W44-5), ordinal dates (2026-303),
# compact forms (20261030T0900), hour-only times, offsets without a colon, lowercase
# designators, surrounding whitespace, non-ASCII digits.
#
# Must never: consult the host's time zone (no naive `timestamp()`, no `time.mktime`,
# no `TZ`), raise on any input, or decide whether a time is in the past (delivery
# knows "now"; parsing does not).
#
# Invariants:
#   Rule 1: the same input gives the same instant on every host and under every TZ.
#   Rule 2: epoch numbers >= 1e11 are milliseconds (divided by 1000).
#   Rule 3: the default zone only ever names a zone the IANA database has (checked when
#           it is set); Asia/Shanghai falls back to UTC+08:00 (its offset since 1991)
#           where no database is installed.
from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import TYPE_CHECKING, Final

from markertools._root import InvalidArgument

MS_THRESHOLD: Final[float] = 1e11  # epoch values at or above this are milliseconds


if TYPE_CHECKING:  # datetime and zoneinfo load on the first time string (import cost)
    from datetime import timezone
    from zoneinfo import ZoneInfo

NAIVE_ZONE_NAME: Final[str] = "Asia/Shanghai"  # the default of the default zone (AUT-2)
_PROCESS_ZONE: list[str] = [NAIVE_ZONE_NAME]  # set_default_time_zone
_CONTEXT_ZONE: ContextVar[str | None] = ContextVar("markertools_default_time_zone", default=None)

_ISO = re.compile(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})"
    r"(?:[T ](?P<h>[0-9]{2}):(?P<mi>[0-9]{2})"
    r"(?::(?P<s>[0-9]{2})(?:\.(?P<f>[0-9]{1,9}))?)?"
    r"(?P<tz>Z|[+-][0-9]{2}:[0-9]{2})?)?"
)


def default_time_zone_name() -> str:
    """The IANA name of the zone a time without an offset is read in (AUT-2)."""
    return _CONTEXT_ZONE.get() or _PROCESS_ZONE[0]


def set_default_time_zone(name: str) -> None:
    """Read times without an offset in the IANA zone `name` from now on, process-wide
    (default: Asia/Shanghai). A `default_time_zone(...)` block still wins inside it.

    Raises:
        ValueError: `name` is not a zone of the IANA database.
    """
    _zone(_checked(name))
    _PROCESS_ZONE[0] = name


@contextmanager
def default_time_zone(name: str) -> Iterator[None]:
    """Within the block (this thread or asyncio task only), read times without an
    offset in the IANA zone `name`.

    Raises:
        ValueError: `name` is not a zone of the IANA database.
    """
    _zone(_checked(name))
    token = _CONTEXT_ZONE.set(name)
    try:
        yield
    finally:
        _CONTEXT_ZONE.reset(token)


def _checked(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument(
            f"time zone must be an IANA zone name such as 'Europe/Berlin', not {name!r}"
        )
    return name


def naive_zone() -> ZoneInfo | timezone:
    """The default zone (see `default_time_zone_name`) as a tzinfo."""
    return _zone(default_time_zone_name())


@lru_cache(maxsize=32)
def _zone(name: str) -> ZoneInfo | timezone:
    """Rule 3: the zone from the IANA database (the `tzdata` package ships it where the
    system has none)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        if name == NAIVE_ZONE_NAME:
            from datetime import timedelta, timezone

            return timezone(timedelta(hours=8), NAIVE_ZONE_NAME)
        raise InvalidArgument(f"unknown time zone {name!r} (not in the IANA database)") from exc


def epoch_from_number(value: float) -> float | None:
    """Rule 2; None for a non-finite value."""
    if not math.isfinite(value):
        return None
    seconds = float(value)
    return seconds / 1000.0 if seconds >= MS_THRESHOLD else seconds


def parse_iso(text: str) -> float | None:
    """Epoch seconds for an accepted ISO 8601 string, else None (never raises)."""
    if len(text) > 40:
        return None
    match = _ISO.fullmatch(text)
    if match is None:
        return None
    g = match.groupdict()
    from datetime import UTC, datetime, timedelta, timezone

    try:
        if g["tz"] is None:
            zone: timezone | ZoneInfo = naive_zone()
        elif g["tz"] == "Z":
            zone = UTC
        else:
            sign = -1 if g["tz"][0] == "-" else 1
            hours, minutes = int(g["tz"][1:3]), int(g["tz"][4:6])
            if hours > 23 or minutes > 59:
                return None
            zone = timezone(sign * timedelta(hours=hours, minutes=minutes))
        fraction = (g["f"] or "").ljust(6, "0")[:6]
        moment = datetime(
            int(g["y"]),
            int(g["mo"]),
            int(g["d"]),
            int(g["h"] or 0),
            int(g["mi"] or 0),
            int(g["s"] or 0),
            int(fraction),
            tzinfo=zone,
        )
        return moment.timestamp()
    except (ValueError, OverflowError):
        return None
