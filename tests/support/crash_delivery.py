"""A delivery in a process of its own that SIGKILLs itself at its AT-th store write:

    python crash_delivery.py DB AT TURN_FILE

(AT = 0: no kill). The store is the SQLite file DB; the turn is delivered as sender t-s
with turn id "turn-1" (tests/adapters/sqlite/test_sqlite_crash_redeliver.py)."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from markertools import deliver_turn
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.sqlite import open_store
from markertools_adapters.wiring import store_ports

WRITES = ("insert_task", "insert_todo", "transition_task", "record_audit", "enqueue_followup", "record_block")


class Killing:
    def __init__(self, store: Any, at: int) -> None:
        self.store, self.at, self.calls = store, at, 0

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.store, name)
        if name not in WRITES:
            return value

        def counted(*args: Any, **kw: Any) -> Any:
            self.calls += 1
            if self.calls == self.at:
                os.kill(os.getpid(), signal.SIGKILL)
            result = value(*args, **kw)
            if self.calls + 1 == -self.at:  # negative AT: kill right after the call
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        return counted


def main(db: str, at: int, turn_file: str) -> None:
    with open(turn_file, encoding="utf-8") as fh:
        turn = fh.read()
    store = open_store(db)
    ports = store_ports(
        Killing(store, at),
        clock=VirtualClock(1_800_000_000.0),
        random=SeededRandom(7),
        executor=NoopExecutor(),
    )
    report = deliver_turn(turn, sender="t-s", outcome="completed", ports=ports, turn_id="turn-1")
    print("DELIVERED", report.report_queued, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
