# Owns: the quota stop rule (PLN-8) as a pure verdict over the windows a quota probe
# reported. Never fetches anything; the host turns its probe's answer into
# `QuotaWindow`s (remaining percent, bucket, window length in minutes).
#
# Invariants:
#   Rule 1: no threshold (`stopAtLeftPercent` null) never stops.
#   Rule 2: with neither `bucket` nor `windowMinutes` chosen, every reported window
#           counts; otherwise only windows matching every chosen part count.
#   Rule 3: stop when a counted window has remaining percent <= the threshold; the
#           verdict names the lowest such window. A chosen window that was not
#           reported (or reported without a finite percent) is `QuotaUnobserved`,
#           never a silent pass.
from __future__ import annotations

import math

import attrs

from markertools.plans._model import QuotaPolicy


@attrs.frozen
class QuotaWindow:
    """One rate-limit window: percent left, its bucket and length when known."""

    left_percent: float
    bucket: str | None = None
    window_minutes: int | None = None


@attrs.frozen
class QuotaOk:
    """Quota verdict: below the stop threshold (or no threshold); new turns may start."""

    pass


@attrs.frozen
class QuotaStop:
    """Quota verdict: `window` is at or below `threshold` percent left; no new turn."""

    window: QuotaWindow
    threshold: float


@attrs.frozen
class QuotaUnobserved:
    """Quota verdict: the window the policy watches was never observed (unknown)."""

    bucket: str | None
    window_minutes: int | None


QuotaVerdict = QuotaOk | QuotaStop | QuotaUnobserved


def _matches(policy: QuotaPolicy, w: QuotaWindow) -> bool:
    if policy.bucket is not None and w.bucket != policy.bucket:
        return False
    return policy.window_minutes is None or w.window_minutes == policy.window_minutes


def quota_verdict(policy: QuotaPolicy, windows: tuple[QuotaWindow, ...]) -> QuotaVerdict:
    """Whether `windows` allow a new turn under `policy` (QuotaOk / QuotaStop /
    QuotaUnobserved)."""
    threshold = policy.stop_at_left_percent
    if threshold is None:
        return QuotaOk()
    counted = [w for w in windows if _matches(policy, w) and math.isfinite(w.left_percent)]
    if not counted:
        return QuotaUnobserved(policy.bucket, policy.window_minutes)
    hit = [w for w in counted if w.left_percent <= threshold]
    if not hit:
        return QuotaOk()
    return QuotaStop(min(hit, key=lambda w: w.left_percent), threshold)
