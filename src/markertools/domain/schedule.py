# Owns: the automation schedule (docs/rules.md SCH) as pure functions over an `Automation` row:
# when it runs next (`next_run_at`), whether it is due (`is_due`), what a successful
# claim writes (`apply_claim`), and the Asia/Shanghai clock text used in automation
# names and reasons (AUT-2/3). Never reads a clock or storage: `now` is an argument.
#
# Invariants:
#   Rule 1 (SCH-1): a never-run automation's next run is `first_run_at`, or `created_at`
#           when that is absent.
#   Rule 2 (SCH-2): after a run claimed at time t for slot s, the next slot is the first
#           s + k*interval (k >= 1) later than t: missed slots are skipped, not replayed.
#   Rule 3 (SCH-3): a `run_once` automation that has run has no next run: never due.
#   Rule 4: only `status == "active"` automations are due; a row whose schedule cannot be
#           computed (interval < 1, non-finite times, float precision exhausted) is never
#           due again rather than due in a tight loop (fail closed).
#   Rule 5 (SCH-4/5): `apply_claim` is the only definition of a claim; storage adapters
#           apply it compare-and-set and their due queries agree with `is_due`.
from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone
from typing import Final

import attrs

from markertools.domain.model import Automation

# Asia/Shanghai has kept UTC+08:00 without daylight saving since 1991; a fixed offset keeps
# this module free of tz-database I/O and is exact for every time an automation runs at.
SHANGHAI: Final[timezone] = timezone(timedelta(hours=8), "Asia/Shanghai")
_EPOCH: Final[datetime] = datetime(1970, 1, 1, tzinfo=UTC)
_CORRECTION_STEPS: Final[int] = 4


def has_run(a: Automation) -> bool:
    """True once any run was claimed (a row may carry only some of the run fields)."""
    return a.run_count > 0 or a.last_run_at is not None or a.last_slot_at is not None


def _finite(*values: float) -> bool:
    return all(isinstance(v, int | float) and math.isfinite(v) for v in values)


def next_slot_after(slot: float, t: float, interval: int) -> float | None:
    """SCH-2: the first `slot + k*interval` (k >= 1) strictly later than `t`.

    None when it cannot be computed: interval < 1, non-finite inputs, or times so large
    that adding the interval no longer changes them."""
    if not _finite(slot, t) or not isinstance(interval, int) or interval < 1:
        return None
    try:
        k = 1 if t < slot else math.floor((t - slot) / interval) + 1
        nxt = slot + k * interval
    except (OverflowError, ValueError):  # times near the float limit: never due again
        return None
    # The division may round either way; correct k by a step or two in float arithmetic.
    for _ in range(_CORRECTION_STEPS):
        if nxt <= t:
            k += 1
            nxt = slot + k * interval
        elif k > 1 and slot + (k - 1) * interval > t:
            k -= 1
            nxt = slot + k * interval
        else:
            return nxt if math.isfinite(nxt) else None
    return None


def next_run_at(a: Automation) -> float | None:
    """The automation's next slot (SCH-1..3), ignoring its status; None = never again."""
    if not has_run(a):
        first = a.first_run_at if a.first_run_at is not None else a.created_at
        return first if _finite(first) else None
    if a.run_once:
        return None
    base = a.first_run_at if a.first_run_at is not None else a.created_at
    t = a.last_run_at
    if t is None:
        t = a.last_slot_at if a.last_slot_at is not None else base
    slot = a.last_slot_at if a.last_slot_at is not None else t
    return next_slot_after(slot, t, a.interval_seconds)


def is_due(a: Automation, now: float) -> bool:
    """SCH-1..3: an active automation whose next slot is at or before `now`."""
    if a.status != "active":
        return False
    nxt = next_run_at(a)
    return nxt is not None and _finite(now) and nxt <= now


def apply_claim(a: Automation, slot: float, now: float) -> Automation | None:
    """SCH-4: the row after claiming `slot` at `now`, or None when the automation is not
    due at `now` for exactly that slot (already claimed, not yet due, inactive, spent)."""
    if not is_due(a, now) or next_run_at(a) != slot:
        return None
    return attrs.evolve(a, last_run_at=now, last_slot_at=slot, run_count=a.run_count + 1)


def shanghai_datetime(epoch: float) -> datetime | None:
    """`epoch` as an aware Asia/Shanghai datetime; None when out of datetime's range."""
    if not _finite(epoch):
        return None
    try:
        return (_EPOCH + timedelta(seconds=epoch)).astimezone(SHANGHAI)
    except (OverflowError, ValueError):
        return None


def shanghai_stamp(epoch: float) -> str:
    """YYYYMMDDHHMMSS in Asia/Shanghai (AUT-3 automatic names)."""
    dt = shanghai_datetime(epoch)
    return dt.strftime("%Y%m%d%H%M%S") if dt is not None else "00000000000000"


def shanghai_iso(epoch: float) -> str:
    """ISO 8601 with the +08:00 offset, to the second; the raw number when out of range.
    The one formatter of every time a report, a reason or the CLI shows a person."""
    dt = shanghai_datetime(epoch)
    if dt is None:
        return repr(epoch)
    return dt.replace(microsecond=0).isoformat()


def whole_seconds(epoch: float) -> int | float:
    """`epoch` to the second (rounded down, as `shanghai_iso` shows it), for the epoch
    seconds a reason gives next to the ISO time; the raw number when not finite."""
    return math.floor(epoch) if _finite(epoch) else epoch
