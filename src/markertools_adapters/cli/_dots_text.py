# Owns: a run as lines of text for a person (`dots status`, the live view of `dots run`
# and its final print): state and turns, the pause's own words, the quota as it is
# known ("unknown" whenever the watched window was not reported), pending notices,
# each worker, and the newest alerts. Pure: a `RunView` and the time in, lines out.
#
# Every text that came from a plan, an agent or Codex (names, replies, alerts) is shown
# through `dots._visible`: its invisible characters escaped. Columns are as wide as
# their widest entry, so a long state ("not finished (run cancelled)") never pushes
# its row out of line.
#
# Must never: show a finished run's unfinished roles as still queued or paused, a
# stale quota as if it were current, or a count nobody can read (pending notices
# say which).
from __future__ import annotations

import time
from typing import Final

from markertools_adapters.dots._views import QuotaView, RunView
from markertools_adapters.dots._visible import visible

ALERTS_SHOWN: Final[int] = 3  # the newest alerts a status shows, one line each


def one_line(text: object, limit: int = 1000) -> str:
    """`text` on one line for a person: runs of white space as one space, invisible
    characters escaped (`_visible`), at most `limit` characters (then "…")."""
    line = visible(" ".join(str(text).split()))
    return line if len(line) <= limit else line[: limit - 1] + "…"


NOTICE_WORDS: Final[dict[str, str]] = {
    "decision": "a decision",
    "reminder": "a decision reminder",
    "paused": "the pause",
    "completed": "the completion",
    "cancelled": "the cancellation",
}


def notices_line(view: RunView) -> str | None:
    """The run's outbox for a person: how many notices wait and what they are, or None
    when none waits."""
    if not view.pending_notices:
        return None
    kinds = [NOTICE_WORDS.get(k, k) for k in view.pending_notice_kinds]
    what = f" ({', '.join(dict.fromkeys(kinds))})" if kinds else ""
    return f"  notices pending: {view.pending_notices}{what}, not delivered yet"


def clock(at: float, now: float) -> str:
    """A time of this run for a person: the time of day today, else date and time."""
    when, today = time.localtime(at), time.localtime(now)
    same_day = when[:3] == today[:3]
    return time.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M", when)


def quota_line(quota: QuotaView, now: float) -> str:
    """The quota as a person reads it: "unknown" whenever the window the plan watches
    was not reported, with what the last report did hold and since when."""
    parts = []
    for w in quota.windows:
        text = f"{w.left_percent:.0f}% left"
        if w.window_minutes is not None:
            text += f" of the {w.window_minutes}-min window"
        parts.append(text + (f" (bucket {w.bucket})" if w.bucket else ""))
    seen = ", ".join(parts)
    if quota.unknown:
        what = ", ".join(
            p
            for p in (
                f"bucket {quota.watch_bucket}" if quota.watch_bucket else None,
                f"{quota.watch_window_minutes}-min window" if quota.watch_window_minutes else None,
            )
            if p
        )
        since = quota.unknown_since
        text = "unknown" + (f" since {clock(since, now)}" if since is not None else "")
        text += f": the window the plan watches{f' ({what})' if what else ''} was not reported"
        return text + (f"; the last report had {seen}" if seen else "; nothing reported yet")
    if not seen:
        return "not reported yet"
    stop = quota.stop_at_left_percent
    return seen + (f"; the run pauses at {stop:g}% left" if stop is not None else "")


def status_lines(view: RunView, now: float | None = None) -> list[str]:
    """A run as text: `dots status`, the live view of `dots run` and its final print."""
    now = time.time() if now is None else now
    out = [f"run {visible(view.run_id)}: {view.state} ({view.turns_used}/{view.max_turns} turns)"]
    if view.state == "paused":
        reason = view.pause_detail or view.pause_reason or "not recorded"
        out.append(f"  paused: {one_line(reason)}")
    out.append(f"  quota: {quota_line(view.quota, now)}")
    notices = notices_line(view)
    if notices is not None:
        out.append(notices)
    rows = []
    for w in view.workers:
        state = w.state
        if view.finished and state != "completed":
            state = f"not finished (run {view.state})"
        rows.append((one_line(w.name, 60), state, w.turns, one_line(w.last_reply_head or "", 200)))
    name_width = max([12, *(len(r[0]) for r in rows)])
    state_width = max([18, *(len(r[1]) for r in rows)])
    for name, state, turns, reply in rows:
        out.append(f"  {name:<{name_width}} {state:<{state_width}} turns {turns:<3} {reply}".rstrip())
    for alert in view.alerts[-ALERTS_SHOWN:]:
        out.append(f"  alert {clock(alert.at, now)}: {one_line(alert.message)}")
    return out
