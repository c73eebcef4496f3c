# Owns: the small text helpers both page models share: cutting a text to a head of at
# most N code points (DOM-4) and formatting times and amounts for a person.
#
# Must never: do I/O or read a clock (times arrive as arguments); produce markup (every
# text here is plain data that the render step escapes, VEW-3).
from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Final

ELLIPSIS: Final[str] = "…"


def cut(text: object, limit: int) -> str:
    """`text` (None: "") cut to at most `limit` code points, "…" marking a cut."""
    if text is None:
        return ""
    value = text if isinstance(text, str) else str(text)
    if len(value) <= limit:
        return value
    return value[: max(limit - 1, 0)] + ELLIPSIS


def first_line(text: object, limit: int) -> str:
    """The first non-blank line of `text`, stripped and cut to `limit` code points."""
    if not isinstance(text, str):
        return ""
    for line in text.splitlines():
        if line.strip():
            return cut(line.strip(), limit)
    return ""


def utc(at: float | None) -> str:
    """`at` (epoch seconds) as "2026-12-29 01:00:00 UTC"; "" for None or a value that is
    not a finite time."""
    if at is None or not math.isfinite(at):
        return ""
    try:
        return datetime.fromtimestamp(at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return ""


def span(seconds: float) -> str:
    """A duration for an axis label or a bar: "0s", "45s", "2m", "1m30s", "2h5m"."""
    total = round(max(seconds, 0.0))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{secs}s" if secs else f"{minutes}m"
    return f"{secs}s"


def usd(amount: float | None) -> str:
    """ "$1.23" (None: "unpriced"; tiny amounts keep 4 decimals)."""
    if amount is None or not math.isfinite(amount):
        return "unpriced"
    return f"${amount:,.4f}" if 0 < abs(amount) < 0.01 else f"${amount:,.2f}"
