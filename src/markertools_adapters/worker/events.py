# Owns: what a worker host tells its watchers (WRK-10): `HostEvent` (one of EVENT_KINDS,
# with the task, the time and its details), `JsonLines` (`--json-log`: one JSON object
# per line on a stream) and `RunningView` (the live table of running tasks a terminal
# shows). Both are sinks: a callable taking a HostEvent.
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


class RunningView:
    """The running tasks, kept from the events; `table()` is a rich renderable."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.rows: dict[str, RunningRow] = {}
        self.done = 0

    def __call__(self, event: HostEvent) -> None:
        row = self.rows.setdefault(event.task_id, RunningRow(event.task_id))
        if event.kind == "turn_started":
            row.turn = int(event.details.get("turn", row.turn + 1))
            row.state = "turn running"
        elif event.kind in ("turn_ended", "delivered"):
            row.state = event.kind.replace("_", " ")
        elif event.kind in ("finished", "cancelled", "requeued"):
            self.rows.pop(event.task_id, None)
            self.done += 1

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

        table = Table(title=f"markertools worker {self.host}: {self.done} finished")
        for column in ("task", "turn", "state", "elapsed s"):
            table.add_column(column)
        now = time.time()
        for row in self.rows.values():
            table.add_row(row.task_id, str(row.turn), row.state, f"{now - row.since:.0f}")
        return table
