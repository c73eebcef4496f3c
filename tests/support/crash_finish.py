"""A worker that SIGKILLs itself in the middle of `finish_turn` (TRN-9):

    python crash_finish.py URL SCHEMA AT

URL is a SQLite file or a postgresql:// DSN (SCHEMA: its schema, "-" for none). The
process connects as a worker does (`markertools_adapters.connect`), then finishes task
t1's turn "turn-1" (completed, requeued, a TurnCost of $0.10 and 1200 tokens) and kills
itself just before the AT-th SQL statement of that call (AT = 0: never; AT = -1: right
after the call returned, before anything else). Used by tests/adapters/test_finish_turn_crash.py."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import markertools_adapters
from markertools import TurnCost

FINISH: dict[str, Any] = {
    "outcome": "completed",
    "result_text": "split into two parts",
    "cost": TurnCost("0.10", 1200),
    "requeue": True,
}


def kill_at(at: int) -> Any:
    """A statement counter that SIGKILLs this process at statement number `at`."""
    seen = [0]

    def count(_: object = None) -> None:
        seen[0] += 1
        if seen[0] == at:
            os.kill(os.getpid(), signal.SIGKILL)

    return count, seen


def counting(store: Any, url: str, count: Any) -> Any:
    """Call `count()` before every SQL statement the store sends."""
    if url.startswith("postgresql://"):
        import psycopg

        original = psycopg.Connection.execute

        def spy(self: Any, query: Any, params: Any = None, **kw: Any) -> Any:
            count()
            return original(self, query, params, **kw)

        psycopg.Connection.execute = spy  # type: ignore[method-assign]
        return None
    return store.traced(lambda sql: count())


def main(url: str, schema: str, at: int) -> None:
    store = markertools_adapters.connect(
        url, executor="noop", schema=None if schema == "-" else schema
    )
    count, seen = kill_at(at)
    traced = counting(store, url, count)
    if traced is not None:
        with traced:
            store.finish_turn("t1", "turn-1", **FINISH)
    else:
        store.finish_turn("t1", "turn-1", **FINISH)
    if at == -1:
        os.kill(os.getpid(), signal.SIGKILL)
    print("STATEMENTS", seen[0], flush=True)
    store.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
