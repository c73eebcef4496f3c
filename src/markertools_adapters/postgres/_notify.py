# Owns: `PgChangeWaiter`, the ChangeWaiter port over PostgreSQL LISTEN/NOTIFY: poll and
# wait (POL-3, WAI-4) wake as soon as one of their targets changes status instead of at
# the next interval. One background thread per waiter holds one dedicated connection
# LISTENing on the channel the tasks trigger notifies (_schema Rule 4) and wakes every
# waiting thread whose targets changed.
#
# Must never: change what poll and wait report - it only decides WHEN the next read
# happens; raise out of wait_for_change (a lost connection degrades to plain timed
# waits, the clock-driven fallback); lose a change that arrives while the caller is
# reading between two waits.
#
# Invariants:
#   Rule 1: wait_for_change returns after at most `seconds` (monotonic time), earlier
#           only when a notification for one of `task_ids` (or a "something changed"
#           notification of this schema) arrived after the same thread's previous wait
#           returned (per-thread cursor into a bounded history). An early return is never
#           harmful: the caller re-reads and decides from the rows.
#   Rule 2: notifications of other schemas are ignored (the channel is database-wide).
#   Rule 3: after a lost connection is re-established, every waiter wakes once (changes
#           during the gap are unknown), and history overflow does the same.
#   Rule 4: `subscribe(callback)` hears every notification of this schema in the listener
#           thread - the task id, or None for "something changed" (a reconnect, an
#           oversized payload) - so an asyncio waiter (the approvals broker) wakes without a
#           thread of its own; a callback that raises is ignored, never stops the listener.
from __future__ import annotations

import collections
import contextlib
import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Final

from psycopg import sql

from markertools_adapters.postgres._conn import Conn, connect
from markertools_adapters.postgres._schema import NOTIFY_CHANNEL, current_schema
from markertools_adapters.postgres._text import dec

HISTORY: Final[int] = 4096  # notifications remembered for threads between two waits
POLL_SLICE: Final[float] = 0.25  # how often the listener thread checks for close()
RECONNECT_DELAY: Final[float] = 1.0


class PgChangeWaiter:
    """Early wake-up for poll / wait on a PostgreSQL store (the `ChangeWaiter` port).

    Use it only with a real clock (SystemClock): it waits in real time. Thread-safe; one
    waiter serves every delivery thread of a process. Call close() when done."""

    def __init__(self, dsn: str, *, schema: str | None = None) -> None:
        self._dsn = dsn
        self._schema_arg = schema
        self._cond = threading.Condition()
        self._seq = 0
        self._recent: collections.deque[tuple[int, str | None]] = collections.deque(maxlen=HISTORY)
        self._local = threading.local()
        self._closed = threading.Event()
        self.early_wakeups = 0  # waits that returned because a target changed
        self.full_waits = 0  # waits that lasted their whole `seconds`
        self.backend_pid: int | None = None  # the LISTEN connection's server process
        self._subscribers: dict[int, Callable[[str | None], None]] = {}
        self._next_subscriber = 0
        conn = self._listen()  # raises here, in the caller, when the server is unreachable
        self._listening = True
        self._thread = threading.Thread(
            target=self._run, args=(conn,), name="markertools-pg-listen", daemon=True
        )
        self._thread.start()

    @property
    def schema(self) -> str:
        return self._schema

    @property
    def listening(self) -> bool:
        """False while the LISTEN connection is lost (waits are then plain timed waits)."""
        with self._cond:
            return self._listening

    # ---- the port --------------------------------------------------------------------

    def wait_for_change(self, task_ids: Sequence[str], seconds: float) -> None:
        targets = frozenset(task_ids)
        span = seconds if isinstance(seconds, int | float) and not math.isnan(seconds) else 0.0
        deadline = time.monotonic() + max(0.0, min(span, 1e9))
        with self._cond:
            checked = getattr(self._local, "cursor", 0)
            changed = False
            while not (changed := self._changed_since(checked, targets)):
                checked = self._seq
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            self._local.cursor = self._seq
            if changed:
                self.early_wakeups += 1
            else:
                self.full_waits += 1

    def _changed_since(self, cursor: int, targets: frozenset[str]) -> bool:
        """Rule 1/3: a notification newer than `cursor` names a target (or everything)."""
        if self._seq <= cursor:
            return False
        if not self._recent or self._recent[0][0] > cursor + 1:
            return True  # history overflowed past the cursor: something may have changed
        for seq, task_id in reversed(self._recent):
            if seq <= cursor:
                break
            if task_id is None or task_id in targets:
                return True
        return False

    def subscribe(self, callback: Callable[[str | None], None]) -> Callable[[], None]:
        """Rule 4: call `callback(task_id)` (None: something changed) in the listener
        thread for every notification of this schema from now on; returns the function
        that unsubscribes it."""
        with self._cond:
            key = self._next_subscriber
            self._next_subscriber += 1
            self._subscribers[key] = callback

        def unsubscribe() -> None:
            with self._cond:
                self._subscribers.pop(key, None)

        return unsubscribe

    # ---- the listener thread ---------------------------------------------------------

    def _listen(self) -> Conn:
        conn = connect(self._dsn, self._schema_arg)
        try:
            self._schema = self._schema_arg or current_schema(conn)
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(NOTIFY_CHANNEL)))
            self.backend_pid = conn.info.backend_pid
        except BaseException:
            conn.close()
            raise
        return conn

    def _run(self, conn: Conn | None) -> None:
        while not self._closed.is_set():
            if conn is None:
                conn = self._reconnect()
                continue
            try:
                for note in conn.notifies(timeout=POLL_SLICE):
                    self._record(note.payload)
            except Exception:  # a lost connection (psycopg.Error) or anything unexpected
                with contextlib.suppress(Exception):
                    conn.close()
                conn = None
                with self._cond:
                    self._listening = False
        if conn is not None:
            conn.close()

    def _reconnect(self) -> Conn | None:
        if self._closed.wait(RECONNECT_DELAY):
            return None
        try:
            conn = self._listen()
        except Exception:  # still unreachable: try again after the delay
            return None
        with self._cond:
            self._listening = True
        self._record(None)  # Rule 3: the gap may have hidden changes
        return conn

    def _record(self, payload: str | None) -> None:
        task_id: str | None = None
        if payload is not None:
            try:
                data = json.loads(payload)
            except ValueError:
                return
            if not isinstance(data, dict) or data.get("schema") != self._schema:
                return  # Rule 2
            raw = data.get("id")
            task_id = dec(raw) if isinstance(raw, str) else None
        with self._cond:
            self._seq += 1
            self._recent.append((self._seq, task_id))
            self._cond.notify_all()
            subscribers = list(self._subscribers.values())
        for callback in subscribers:  # Rule 4
            with contextlib.suppress(Exception):
                callback(task_id)

    def wake(self) -> None:
        """Wake every waiting thread once (as a change of every task would): the caller
        re-reads. A worker host calls it when the set of tasks it watches grows, so a
        wait begun before a new task's claim does not sleep through that task's cancel."""
        self._record(None)

    def close(self) -> None:
        self._closed.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5 * POLL_SLICE + RECONNECT_DELAY)

    def __enter__(self) -> PgChangeWaiter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
