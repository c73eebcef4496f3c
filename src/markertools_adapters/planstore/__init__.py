# Owns: the on-disk state of orchestration runs (seed 004 "日志、回报和恢复"), in one
# state directory:
#   run-<id>.json   the run record, replaced atomically (temp file in the same
#                   directory, fsync, os.replace, fsync of the directory);
#   run-<id>.jsonl  the append-only event log (one JSON line per event, fsynced
#                   BEFORE the record changes: a write-ahead log);
#   host.lock       the host lock: one live host per state directory.
# and `RunJournal`, which applies events durably through the pure core
# (`markertools.plans.apply`) and reloads a run after a crash.
#
# Invariants:
#   Rule 1: a record save is compare-and-set on the record's `revision`; a writer
#           holding a stale revision is refused (StaleRevision), never merged.
#   Rule 2: an event is logged (fsynced) before the record that reflects it is
#           saved; reloading replays logged events the record had not applied yet,
#           so an acknowledged event is never lost and none is applied twice (event
#           ids de-duplicate, the replay is pure and deterministic).
#   Rule 3: a torn last log line (a crash mid-append, never acknowledged) is cut off
#           on reload; a damaged line elsewhere is an error, never skipped.
#   Rule 4: the host lock refuses a second live host. Liveness is the OS lock on the
#           file (flock) where available, else the recorded pid; a lock left by a
#           dead process is taken over; the lock never expires by time.
#   Rule 5: every reload applies `HostRestarted`: turns that were live when the host
#           stopped are paused and their instructions are never re-sent (PLN-6).
#
# Layout: `_files.py` (records, log, errors), `_lock.py` (host lock), `_journal.py`
# (durable apply and reload). This module only re-exports them.
from __future__ import annotations

from markertools_adapters.planstore._files import (
    DEFAULT_STATE_DIR,
    LOCK_NAME,
    CorruptStore,
    HostLockHeld,
    LoggedEvent,
    PlanStore,
    PlanStoreError,
    Probe,
    RunExists,
    RunNotFound,
    StaleRevision,
    check_run_id,
    make_state_dir,
)
from markertools_adapters.planstore._journal import RunJournal, host
from markertools_adapters.planstore._lock import HostLock, pid_alive

__all__ = [
    "DEFAULT_STATE_DIR",
    "LOCK_NAME",
    "CorruptStore",
    "HostLock",
    "HostLockHeld",
    "LoggedEvent",
    "PlanStore",
    "PlanStoreError",
    "Probe",
    "RunExists",
    "RunJournal",
    "RunNotFound",
    "StaleRevision",
    "check_run_id",
    "host",
    "make_state_dir",
    "pid_alive",
]
