# Owns: the status line of a `deliver --db` that waits on the real clock (issue 36):
# `WaitLine` is the delivery's ChangeWaiter and wraps its Clock, so it sees every round of
# a task-poll or wait-threads as the delivery makes it (the task ids still waited for,
# the pause). After `AFTER_SECONDS` of waiting it shows, on the terminal, one rich status
# line: which block waits (kind, line), for which tasks, how long at most (its own
# timeout or the delivery's --deadline, whichever ends first) and that Ctrl-C stops it.
# `wait_text` is that line as a pure function.
#
# Must never: change what a delivery does - it only sleeps as long as asked, in short
# slices (to start and refresh the line), through the wrapped clock; draw anything when
# the command was not asked to (the caller decides: a terminal, no --json).
#
# Invariants:
#   Rule 1: the block a round belongs to is found from the turn's own plan (the same
#           text, parsed by `parse_turn`): the polls and waits in execution order, each
#           round matched to the first one from the current on whose targets can hold
#           the waited ids (an `@NAME` target holds any one id); a round that is not a
#           subset of the round before, or comes after the current block's timeout,
#           starts the next block. Nothing matched: the line names the ids only.
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final

from markertools import Clock, TurnPlan

AFTER_SECONDS: Final[float] = 2.0  # a delivery waiting longer than this shows the line
SLICE_SECONDS: Final[float] = 0.25  # sleep in slices: start and refresh the line
SHOWN_IDS: Final[int] = 3
WAITING_KINDS: Final[frozenset[str]] = frozenset({"task-poll", "wait-threads"})


@dataclass(frozen=True)
class WaitBlock:
    """A poll or wait of the turn: kind, line, targets as written, timeout, interval."""

    kind: str
    line: int
    targets: tuple[str, ...]
    timeout: float
    interval: float

    def holds(self, ids: Sequence[str]) -> bool:
        """Rule 1: could these be (some of) this block's targets?"""
        literal = {t for t in self.targets if not t.startswith("@")}
        refs = sum(1 for t in self.targets if t.startswith("@"))
        return sum(1 for i in ids if i not in literal) <= refs


def waiting_blocks(plan: TurnPlan) -> list[WaitBlock]:
    """The turn's polls and waits, in execution order (the plan's order, TRN-1)."""
    blocks: list[WaitBlock] = []
    for cmd in plan.commands:
        if cmd.kind not in WAITING_KINDS:
            continue
        params: Any = cmd.params
        ids = getattr(params, "task_ids", None)
        targets = tuple(ids) if ids is not None else (str(getattr(params, "task_id", "")),)
        blocks.append(
            WaitBlock(
                cmd.kind,
                cmd.line,
                targets,
                float(getattr(params, "timeout_seconds", 0) or 0),
                float(getattr(params, "interval_seconds", 0) or 0),
            )
        )
    return blocks


def clock_text(seconds: float) -> str:
    """ "9:58", "1:02:03"; at least "0:00"."""
    total = max(0, math.ceil(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _ids_text(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:SHOWN_IDS])
    return shown + (f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else "")


def wait_text(
    block: WaitBlock | None,
    ids: Sequence[str],
    *,
    now: float,
    block_started: float,
    deadline_at: float | None,
    deadline: float | None,
) -> str:
    """The status line: what waits, for what, how long at most, and how to stop it:
    `deliver is waiting: task-poll (line 24) for t-1 to finish, checked every 60 s ·
    at most 9:58 more (--deadline 600 s) · Ctrl-C stops`."""
    ends: list[tuple[float, str]] = []
    if block is not None:
        ends.append((block_started + block.timeout, f"its timeout, {block.timeout:g} s"))
    if deadline_at is not None and deadline is not None:
        ends.append((deadline_at, f"--deadline {deadline:g} s"))
    what = f"{block.kind} (line {block.line})" if block is not None else "a poll or wait"
    parts = [f"deliver is waiting: {what} for {_ids_text(list(ids)) or 'its tasks'} to finish"]
    if block is not None and block.interval:
        parts[0] += f", checked every {block.interval:g} s"
    if ends:
        end, why = min(ends)
        parts.append(f"at most {clock_text(end - now)} more ({why})")
    parts.append("Ctrl-C stops")
    return " · ".join(parts)


class _WatchedClock:
    """The delivery's clock: the real one, whose sleeps go through the line's slices."""

    def __init__(self, line: WaitLine) -> None:
        self._line = line

    def now(self) -> float:
        return self._line.clock.now()

    def sleep(self, seconds: float) -> None:
        self._line.sleep(seconds)


class WaitLine:
    """A ChangeWaiter plus a wrapped clock (`self.watched`) for one delivery; shows the
    status line through `show` (text -> None; None ends it) once it has waited
    `after` seconds. Use it as a context manager around the delivery: leaving it ends
    the line (Ctrl-C included), before anything else is printed."""

    def __init__(
        self,
        plan: TurnPlan,
        sender: str,
        clock: Clock,
        *,
        deadline: float | None,
        show: Callable[[str | None], None],
        after: float = AFTER_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock
        self.watched: Clock = _WatchedClock(self)
        self._blocks = waiting_blocks(plan)
        self._sender = sender
        self._deadline = deadline
        self._show = show
        self._after = after
        self._monotonic = monotonic
        self._started = clock.now()  # the delivery starts now (its deadline counts from here)
        self._cursor = -1
        self._block_started = self._started
        self._ids: tuple[str, ...] = ()
        self._first_wait: float | None = None
        self._showing = False

    # ---- what the delivery calls ---------------------------------------------------

    def wait_for_change(self, task_ids: Sequence[str], seconds: float) -> None:
        """ChangeWaiter: one round of a poll or wait - note it, then sleep `seconds`."""
        self._round([i for i in task_ids if i != self._sender])
        self.sleep(seconds)

    def sleep(self, seconds: float) -> None:
        """Sleep `seconds` on the real clock, in slices that start and refresh the line."""
        if self._first_wait is None:
            self._first_wait = self._monotonic()
        end = self._monotonic() + max(0.0, float(seconds))
        while (left := end - self._monotonic()) > 0:
            self._refresh()
            self.clock.sleep(min(left, SLICE_SECONDS))
        self._refresh()

    # ---- the line ------------------------------------------------------------------

    def _round(self, ids: Sequence[str]) -> None:
        """Rule 1: which block this round belongs to."""
        now = self.clock.now()
        current = self._blocks[self._cursor] if 0 <= self._cursor < len(self._blocks) else None
        same = (
            current is not None
            and set(ids) <= set(self._ids)
            and current.holds(ids)
            and now <= self._block_started + current.timeout
        )
        if not same:
            self._cursor = next(
                (
                    n
                    for n in range(self._cursor + 1, len(self._blocks))
                    if self._blocks[n].holds(ids)
                ),
                len(self._blocks),
            )
            self._block_started = now
        self._ids = tuple(ids)

    def text(self) -> str:
        block = self._blocks[self._cursor] if 0 <= self._cursor < len(self._blocks) else None
        deadline_at = None if self._deadline is None else self._started + self._deadline
        return wait_text(
            block,
            self._ids,
            now=self.clock.now(),
            block_started=self._block_started,
            deadline_at=deadline_at,
            deadline=self._deadline,
        )

    def _refresh(self) -> None:
        if not self._showing:
            if self._first_wait is None or self._monotonic() - self._first_wait < self._after:
                return
            self._showing = True
        self._show(self.text())

    def __enter__(self) -> WaitLine:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._showing:
            self._showing = False
            self._show(None)


def rich_status(console: Any) -> Callable[[str | None], None]:
    """`WaitLine.show` on a rich console: a transient status line with a spinner."""
    from rich.status import Status
    from rich.text import Text

    holder: list[Status] = []

    def show(text: str | None) -> None:
        if text is None:
            if holder:
                holder.pop().stop()
            return
        if not holder:
            status = Status(Text(text), console=console, spinner="dots")
            status.start()
            holder.append(status)
        else:
            holder[0].update(Text(text))

    return show


__all__ = ["AFTER_SECONDS", "WaitBlock", "WaitLine", "clock_text", "rich_status", "wait_text"]
