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
#   Rule 6: nothing in the directory is opened through a link or when it is not a
#           regular file; what cannot be used is moved to `quarantine/`, never deleted.
#   Rule 7: a failed write leaves nothing behind that a reload would replay (a failed
#           append or fsync is cut off again), and changes nothing in memory.
#
# Layout: `_files.py` (records, log, errors), `_lock.py` (host lock), `_journal.py`
# (durable apply and reload), `_quarantine.py` (files set aside). This module only
# re-exports them.
from __future__ import annotations

from markertools_adapters.planstore._files import (
    DEFAULT_STATE_DIR,
    LOCK_NAME,
    MAX_LINE_BYTES,
    MAX_RECORD_BYTES,
    CorruptStore,
    HostLockHeld,
    LoggedEvent,
    PlanStore,
    PlanStoreError,
    Probe,
    RunExists,
    RunNotFound,
    StaleRevision,
    StateDirUnwritable,
    check_run_id,
    make_state_dir,
)
from markertools_adapters.planstore._journal import RunJournal, host
from markertools_adapters.planstore._lock import HostLock, pid_alive
from markertools_adapters.planstore._quarantine import (
    QUARANTINE_DIR,
    Quarantined,
    quarantine,
    quarantined,
)

__all__ = [
    "DEFAULT_STATE_DIR",
    "LOCK_NAME",
    "MAX_LINE_BYTES",
    "MAX_RECORD_BYTES",
    "QUARANTINE_DIR",
    "CorruptStore",
    "HostLock",
    "HostLockHeld",
    "LoggedEvent",
    "PlanStore",
    "PlanStoreError",
    "Probe",
    "Quarantined",
    "RunExists",
    "RunJournal",
    "RunNotFound",
    "StaleRevision",
    "StateDirUnwritable",
    "check_run_id",
    "host",
    "make_state_dir",
    "pid_alive",
    "quarantine",
    "quarantined",
]
