# Owns: what a worker host tells its watchers (WRK-10): `HostEvent` (one of EVENT_KINDS,
# with the task, the time and its details), `JsonLines` (`--json-log`: one JSON object
# per line on a stream) and `RunningView` (the live table a terminal shows: every task
# the host ran, the running ones and how the others ended). Both are sinks: a callable
# taking a HostEvent.
#
# Must never: raise into the host (a sink that fails is the watcher's problem: a closed
# stream stops the log, never the tasks).
from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, Final

EVENT_KINDS: Final[tuple[str, ...]] = (
    "claimed",
    "turn_started",
    "turn_ended",
    "delivered",
    "cancelled",
    "requeued",
    "lease_expired",
    "finished",
    "lease_lost",  # FLT-1: the run stood down (another claim holds its task)
    "waiting",  # FLT-5: its delivery waits outside the run slots
    "parked",  # FLT-5: its idle app-server was stopped while it waits
    "outage_began",  # FLT-3
    "outage_ended",
    "approval_requested",  # APR-4: an agent's request, stored (details: the request)
    "approval_answered",  # APR-4: answered by a rule, a person, an ancestor, or expired
)


@dataclass(frozen=True)
class HostEvent:
    """`kind` (EVENT_KINDS), the task, the epoch time and the event's own fields."""

    kind: str
    task_id: str
    at: float = field(default_factory=time.time)
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"event": self.kind, "task_id": self.task_id, "at": self.at, **self.details}


EventSink = Callable[[HostEvent], None]


class JsonLines:
    """`--json-log`: one JSON line per event, flushed at once."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def __call__(self, event: HostEvent) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.stream.write(json.dumps(event.to_json(), ensure_ascii=False) + "\n")
            self.stream.flush()


@dataclass
class RunningRow:
    task_id: str
    turn: int = 0
    state: str = "claimed"
    since: float = field(default_factory=time.time)
    ended: float | None = None  # when the host let go of the task (finished, ...)


# the host let go of the task: its row stays, showing how it ended
_LET_GO: Final[frozenset[str]] = frozenset({"finished", "cancelled", "requeued", "lease_lost"})


class RunningView:
    """Every task the host ran, kept from the events - running ones with their turn and
    state, the others with how they ended (finished: the task's status; cancelled,
    requeued) - so the last picture shows what the run did; `table()` is a rich
    renderable whose title never wraps."""

    def __init__(self, host: str, label: Callable[[str], str] | None = None) -> None:
        self.host = host
        self.label = label  # task id -> what the task column shows (default: the id)
        self.rows: dict[str, RunningRow] = {}

    def __call__(self, event: HostEvent) -> None:
        row = self.rows.get(event.task_id)
        if event.kind == "claimed" and (row is None or row.ended is not None):
            self.rows.pop(event.task_id, None)  # claimed again (requeued): a new row, last
            row = self.rows[event.task_id] = RunningRow(event.task_id, since=event.at)
        if row is None:  # not a task of this host (another host's expired lease)
            return
        if event.kind == "turn_started":
            row.turn = int(event.details.get("turn", row.turn + 1))
            row.state = "turn running"
        elif event.kind in ("turn_ended", "delivered"):
            row.state = event.kind.replace("_", " ")
        elif event.kind == "approval_requested" and event.details.get("status") == "pending":
            row.state = f"awaiting approval {event.details.get('id', '')}".strip()
        elif event.kind == "approval_answered":
            row.state = f"approval {event.details.get('status', 'answered')}"
        elif event.kind in _LET_GO and row.ended is None:
            status = event.details.get("status") if event.kind == "finished" else None
            row.state = str(status or event.kind)
            row.ended = event.at

    @property
    def running(self) -> int:
        """Tasks the host runs now."""
        return sum(1 for row in self.rows.values() if row.ended is None)

    @property
    def done(self) -> int:
        """Tasks the host let go of (finished, cancelled, requeued)."""
        return len(self.rows) - self.running

    async def follow(self, run: Coroutine[Any, Any, int], live: Any, period: float) -> int:
        """Await the host's `run()` as a task of one TaskGroup (cancelled with its
        caller, its exception raised as itself) while `live` shows `table()` every
        `period` seconds; the last picture is drawn after the run ended."""
        try:
            async with asyncio.TaskGroup() as group:
                task = group.create_task(run)
                while not task.done():
                    live.update(self.table())
                    await asyncio.wait({task}, timeout=period)
        except BaseExceptionGroup as failed:
            raise failed.exceptions[0] from None
        live.update(self.table())
        return int(task.result())

    def table(self) -> Any:
        from rich.table import Table

        title = f"markertools worker {self.host}: {self.running} running, {self.done} done"
        table = Table(title=title, min_width=len(title) + 4)
        for column in ("task", "turn", "state", "elapsed s"):
            table.add_column(column)
        now = time.time()
        for row in self.rows.values():
            elapsed = (row.ended if row.ended is not None else now) - row.since
            shown = row.task_id if self.label is None else self.label(row.task_id)
            table.add_row(shown, str(row.turn), row.state, f"{max(elapsed, 0):.0f}")
        return table


class Tally:
    """How each task this host claimed ended, from the events (the last word wins): the
    one summary line `worker run` prints when it stops (`line()`)."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.ended: dict[str, str] = {}  # task id -> completed / failed / ... / running

    def __call__(self, event: HostEvent) -> None:
        if event.kind == "claimed":
            self.ended[event.task_id] = "running"
        elif event.task_id not in self.ended:
            return  # another host's task (an expired lease this host requeued)
        elif event.kind == "finished":
            self.ended[event.task_id] = str(event.details.get("status") or "finished")
        elif event.kind in ("cancelled", "requeued", "lease_lost"):
            self.ended[event.task_id] = event.kind

    def line(self, why: str) -> str:
        """`markertools worker h1 stopped (Ctrl-C): ran 3 tasks - 1 completed, 2 requeued
        for the next host (t-a, t-b)`."""
        counts: dict[str, list[str]] = {}
        for task_id, how in self.ended.items():
            counts.setdefault(how, []).append(task_id)
        if not self.ended:
            return f"markertools worker {self.host} stopped ({why}): ran no task"
        order = (
            "completed",
            "failed",
            "interrupted",
            "cancelled",
            "requeued",
            "lease_lost",
            "running",
        )
        parts = []
        for how in sorted(counts, key=lambda h: (order.index(h) if h in order else 99, h)):
            ids = counts[how]
            text = {
                "requeued": "requeued for the next host",
                "lease_lost": "taken over by another host",
                "running": "left running",
            }.get(how, how)
            shown = (
                f" ({', '.join(sorted(ids)[:8])}{', ...' if len(ids) > 8 else ''})"
                if how in ("requeued", "lease_lost", "running", "failed", "interrupted")
                else ""
            )
            parts.append(f"{len(ids)} {text}{shown}")
        n = len(self.ended)
        return f"markertools worker {self.host} stopped ({why}): ran {n} task{'s' if n != 1 else ''} - {', '.join(parts)}"
