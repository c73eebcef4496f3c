"""Loaded by Python at start-up when this directory is on PYTHONPATH (tests/worker's
kill -9 at every store write, FLT-2): counts the store's write transactions made during
the FIRST delivery of task $MARKERTOOLS_TEST_KILL_SENDER in this process and SIGKILLs the
process at write $MARKERTOOLS_TEST_KILL_AT (before it does anything; a negative number:
right after it committed). With $MARKERTOOLS_TEST_KILL_COUNT_FILE the number of such
writes is written there when the process exits (the clean run that says how many kill
points there are). A write transaction is an outermost `write()`, `atomic()` or `run()`
of the SQLite connection or the PostgreSQL pool (nested ones are savepoints of it)."""

from __future__ import annotations

import atexit
import functools
import os
import signal
import threading
from typing import Any

SENDER = os.environ.get("MARKERTOOLS_TEST_KILL_SENDER")
AT = int(os.environ.get("MARKERTOOLS_TEST_KILL_AT", "0") or 0)
COUNT_FILE = os.environ.get("MARKERTOOLS_TEST_KILL_COUNT_FILE")

_local = threading.local()
_state = {"writes": 0, "delivered": False}


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _counting() -> bool:
    return bool(getattr(_local, "counting", False)) and getattr(_local, "depth", 0) == 0


def _wrap_cm(cls: Any, name: str) -> None:
    original = getattr(cls, name)

    @functools.wraps(original)
    def wrapped(self: Any, *args: Any, **kw: Any) -> Any:
        import contextlib

        @contextlib.contextmanager
        def guarded() -> Any:
            counted = _counting()
            if counted:
                _state["writes"] += 1
                if _state["writes"] == AT:
                    _kill()
            _local.depth = getattr(_local, "depth", 0) + 1
            try:
                with original(self, *args, **kw) as value:
                    yield value
            finally:
                _local.depth -= 1
            if counted and _state["writes"] == -AT:
                _kill()

        return guarded()

    setattr(cls, name, wrapped)


def _wrap_call(cls: Any, name: str) -> None:
    original = getattr(cls, name)

    @functools.wraps(original)
    def wrapped(self: Any, *args: Any, **kw: Any) -> Any:
        counted = _counting()
        if counted:
            _state["writes"] += 1
            if _state["writes"] == AT:
                _kill()
        _local.depth = getattr(_local, "depth", 0) + 1
        try:
            result = original(self, *args, **kw)
        finally:
            _local.depth -= 1
        if counted and _state["writes"] == -AT:
            _kill()
        return result

    setattr(cls, name, wrapped)


def _install() -> None:
    import markertools.deliver.loop as loop

    original = loop.deliver_turn

    @functools.wraps(original)
    def deliver_turn(turn: Any, *args: Any, **kw: Any) -> Any:
        sender = kw.get("sender")
        sender_id = sender if isinstance(sender, str) else getattr(sender, "id", None)
        first = sender_id == SENDER and not _state["delivered"]
        if first:
            _state["delivered"] = True
            _local.counting = True
        try:
            return original(turn, *args, **kw)
        finally:
            if first:
                _local.counting = False

    loop.deliver_turn = deliver_turn
    from markertools_adapters.sqlite._conn import Connection

    for name in ("write", "atomic"):
        _wrap_cm(Connection, name)
    _wrap_call(Connection, "run")
    try:
        from markertools_adapters.postgres._conn import Database
    except ImportError:
        return
    for name in ("write", "atomic"):
        _wrap_cm(Database, name)
    _wrap_call(Database, "run")


if SENDER:
    _install()
    if COUNT_FILE:
        atexit.register(lambda: open(COUNT_FILE, "w").write(str(_state["writes"])))  # noqa: SIM115
