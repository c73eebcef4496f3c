# Owns: `RunJournal`, durable application of events to one run through the pure core
# (`markertools.plans.apply`), reloading after a crash, and the `host()` helper.
#
# Invariants:
#   Rule 1: write-ahead: an event is logged (fsynced) before the record reflecting it
#           is saved; reloading replays logged events the record had not applied yet,
#           so an acknowledged event is never lost and none is applied twice (event
#           ids de-duplicate; the replay is pure and deterministic).
#   Rule 2: every reload applies `HostRestarted`: turns that were live when the host
#           stopped are paused and their instructions are never re-sent (PLN-6).
#   Rule 3: a journal is only made while the state directory's host lock is held.
#   Rule 4: a deferred journal (`submit(durable=False)`) writes each event line at once
#           and makes them durable together in `sync()` (one fsync per batch); its
#           record is a checkpoint saved every CHECKPOINT_EVERY events, when the run
#           finishes and on close. Its owner syncs before any effect the events allow.
#   Rule 5: a write that fails changes nothing in memory: `submit` applies an event
#           only once its line is written. A checkpoint that fails is only a checkpoint
#           (the log is the truth): it is logged and tried again after another
#           CHECKPOINT_EVERY events, never in a loop. A failed fsync fails the journal:
#           its memory goes back to what the log holds durably (the unsynced lines were
#           cut off, or may be lost), and it refuses every later event and saves
#           nothing until the run is loaded again from disk.
#   Rule 6: an outage (FLT-3): a deferred line that the directory refuses for now (full,
#           read-only, an I/O error: `StateDirUnwritable.transient`, nothing of it left
#           in the log) is kept in memory, in order, and every later line queues behind
#           it; the event is applied as usual (what is live goes on) but nothing is
#           durable until `sync()` has written the queue and fsynced it. A failed fsync
#           whose lines were cut off cleanly puts them back in the queue. Its owner
#           acts on nothing meanwhile (`pending`), retries `sync()` with backoff, and
#           past its budget fails the journal (Rule 5).
from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from collections.abc import Iterator

import attrs

from markertools import Msg
from markertools.plans import (
    RUN_MACHINE,
    Duplicate,
    Event,
    Halt,
    HostRestarted,
    Refused,
    RunState,
    Step,
    apply,
)
from markertools_adapters.planstore._files import (
    LoggedEvent,
    PlanStore,
    PlanStoreError,
    Probe,
    StateDirUnwritable,
    event_line,
    raw_line,
)
from markertools_adapters.planstore._lock import HostLock

log = logging.getLogger("markertools.planstore")


class RunJournal:
    """Durable application of events to one run (Rule 2, Rule 5). Needs the state
    directory's host lock. `submit` = pure apply, log (fsync), save (CAS)."""

    CHECKPOINT_EVERY = 64  # events between two record saves of a deferred journal

    def __init__(self, store: PlanStore, state: RunState, next_seq: int) -> None:
        self.store = store
        self._state = state
        self._synced_state = state  # the state as far as the log is known durable
        self._next_seq = next_seq
        self._unsynced = False  # lines appended without fsync (Rule 4)
        self._unsaved = 0  # events applied since the record was last saved
        self._checkpoint_at = self.CHECKPOINT_EVERY  # after a failed save: when to try again
        self._failed: str | None = None
        self._halted = False  # the in-memory pause of `fail` is applied
        self.checkpoint_error: str | None = None  # why the last checkpoint failed
        self._queued: list[bytes] = []  # lines the directory refused for now (Rule 6)
        self._written: list[bytes] = []  # lines written since the last good fsync
        self.outage: StateDirUnwritable | None = None  # why lines are queued (Rule 6)

    @property
    def pending(self) -> bool:
        """True while lines wait in memory for the directory to take them (Rule 6):
        nothing may act on this run's events until `sync()` succeeds."""
        return bool(self._queued) or self.outage is not None

    def _write(self, data: bytes, *, queue: bool) -> None:
        """Write one deferred line (Rule 6): behind the queue when there is one, else at
        once; a transient refusal queues it when `queue`, behind an `outage` record (the
        log says there was one, and why). Without `queue` (a caller's event: the call is
        refused, never applied later) a transient refusal raises, and only the record is
        queued: the run waits out the outage all the same."""
        if self.pending and not queue:
            raise self.outage or StateDirUnwritable("the state directory refuses writes")
        if self._queued:
            self._queued.append(data)
            return
        try:
            self.store.append_line(self._state.run_id, data)
        except StateDirUnwritable as exc:
            if not exc.transient:
                raise
            self.outage = exc
            # the log will say there was an outage, and why, before what waited for it
            self._queued.append(raw_line("outage", time.time(), {"cause": str(exc)}))
            if not queue:
                raise
            self._queued.append(data)
            return
        self._written.append(data)

    def append_raw(self, kind: str, at: float, body: object) -> None:
        """A record that is not an event (DOT-2: a notification, a tuning change),
        queued behind an outage like an event line (Rule 6)."""
        self._refuse_if_failed()
        self._write(raw_line(kind, at, body), queue=True)
        self._unsynced = True

    @property
    def pending_sync(self) -> bool:
        """True while an event is written but not yet durable (see `sync`)."""
        return self._failed is None and (self._unsynced or self._unsaved >= self.CHECKPOINT_EVERY)

    @property
    def state(self) -> RunState:
        return self._state

    @property
    def failed(self) -> str | None:
        """Why this journal refuses every event (Rule 5), or None while it works."""
        return self._failed

    def fail(self, reason: str, detail: Msg | None = None, now: float = 0.0) -> None:
        """Stop this journal (Rule 5): every later `submit` and `sync` is refused with
        `reason`, and nothing is saved. With `detail`, the run is also paused in memory
        only (`Halt` applied, never logged) so a status says why; a reload from disk
        shows the run as its log holds it."""
        if self._failed is None:
            self._failed = reason
        if detail is not None and not self._halted:  # once, also after a failed `sync`
            self._halted = True
            halt = Halt(uuid.uuid4().hex, "internal-error", detail)
            self._state = apply(self._state, halt, now).state

    def _refuse_if_failed(self) -> None:
        if self._failed is not None:
            raise StateDirUnwritable(self._failed, undone=True)

    @staticmethod
    def _check_lock(store: PlanStore, lock: HostLock) -> None:
        if not lock.held or lock.root.resolve() != store.root.resolve():
            raise PlanStoreError(f"the host lock of {store.root} must be held")

    @classmethod
    def create(cls, store: PlanStore, lock: HostLock, state: RunState) -> RunJournal:
        cls._check_lock(store, lock)
        return cls(store, store.create(state), 1)

    @classmethod
    def open(
        cls, store: PlanStore, lock: HostLock, run_id: str, *, now: float, restart_event_id: str
    ) -> tuple[RunJournal, Step]:
        """Reload a run: replay logged events the record lacks, then apply
        `HostRestarted(restart_event_id)` (unique per reload). Returns the journal and
        the restart step (its outcome names the turns that were paused)."""
        cls._check_lock(store, lock)
        store.remove_temp_files()
        loaded = store.load(run_id)
        entries = store.read_events(run_id, repair=True)
        state = loaded
        for entry in entries:
            if entry.seq > state.log_seq:
                step = apply(state, entry.event, entry.at)
                state = attrs.evolve(step.state, log_seq=entry.seq)
        replayed = state is not loaded
        last = max([e.seq for e in entries] + [state.log_seq])
        journal = cls(store, loaded, last + 1)
        journal._state = journal._synced_state = state
        if replayed:
            journal._unsaved = 1
            journal._checkpoint(force=True)
        return journal, journal.submit(HostRestarted(restart_event_id), now)

    def submit(
        self, event: Event, now: float, *, durable: bool = True, queue: bool = True
    ) -> Step:
        """Apply one event. Duplicates are answered without writing; every other event
        is logged first (Rule 1). `durable` (the default): the line is fsynced and the
        record saved before this returns. `durable=False` (Rule 4): the line is only
        written and the record not saved; `sync()` makes every such event durable at
        once, and the caller calls it before anything acts on them. A write that fails
        raises (StateDirUnwritable) and changes nothing in memory (Rule 5); a journal
        that failed refuses every event. With `durable`, once the line is fsynced the
        event counts even when the record cannot be saved (a checkpoint, Rule 5)."""
        self._refuse_if_failed()
        step = apply(self._state, event, now)
        if isinstance(step.outcome, Duplicate):
            return step
        seq = self._next_seq
        outcome = type(step.outcome).__name__.lower()
        entry = LoggedEvent(seq, now, outcome, event)
        try:
            if durable:
                self.store.append_event(self._state.run_id, entry, sync=True)
                self._written.clear()
            else:
                self._write(event_line(entry), queue=queue)
        except StateDirUnwritable as exc:
            if exc.lost:  # the fsync took earlier deferred lines with it
                self._lose_unsynced(str(exc))
            raise
        self._next_seq = seq + 1
        self._unsynced = not durable  # a durable line's fsync covered every earlier one
        refused = isinstance(step.outcome, Refused)
        if not refused:
            self._state = attrs.evolve(step.state, log_seq=seq)
            self._unsaved += 1
        if durable:
            self._synced_state = self._state
            if not refused:
                self._checkpoint(force=True)
        return step if refused else Step(self._state, step.outcome)

    def _lose_unsynced(self, reason: str) -> None:
        """A failed fsync: memory goes back to what the log holds durably (the unsynced
        lines were cut off, or may be lost), and the journal fails (Rule 5)."""
        self._state = self._synced_state
        self._unsynced = False
        self.fail(reason)

    def sync(self, *, checkpoint: bool = False) -> None:
        """Make every deferred event durable: one fsync of the log. The record is saved
        too (a checkpoint) when `checkpoint`, when the run finished, or every
        CHECKPOINT_EVERY events, so a reload replays a bounded tail. A failed fsync
        fails the journal and raises (Rule 5); a failed checkpoint does not."""
        self._refuse_if_failed()
        flushed = bool(self._queued)
        while self._queued:  # Rule 6: the lines the directory refused, in order
            try:
                self.store.append_line(self._state.run_id, self._queued[0])
            except StateDirUnwritable as exc:
                if exc.transient:
                    self.outage = exc
                raise
            self._written.append(self._queued.pop(0))
        if self._unsynced or flushed:
            try:
                self.store.sync_log(self._state.run_id)
            except StateDirUnwritable as exc:
                if exc.transient:  # cut off cleanly: written again once it takes them
                    self.outage = exc
                    self._queued[:0] = self._written
                    self._written = []
                    raise
                self._lose_unsynced(str(exc))
                raise
            self._unsynced = False
            self._written = []
            self._synced_state = self._state
        self.outage = None  # every line is written and durable: the outage is over
        finished = self._state.status in RUN_MACHINE.terminal
        if self._unsaved and (checkpoint or finished or self._unsaved >= self.CHECKPOINT_EVERY):
            self._checkpoint(force=checkpoint)

    def _checkpoint(self, *, force: bool) -> None:
        """Save the record (every event in it is durable in the log already). A failure
        is logged and the next try waits for CHECKPOINT_EVERY more events (Rule 5)."""
        if not force and self.checkpoint_error is not None and self._unsaved < self._checkpoint_at:
            return  # the last one failed: wait for CHECKPOINT_EVERY more events
        try:
            self._state = self._synced_state = self.store.save(self._state, self._state.revision)
        except PlanStoreError as exc:
            self._checkpoint_at = self._unsaved + self.CHECKPOINT_EVERY
            if self.checkpoint_error != str(exc):
                log.warning(
                    "run %s: the record could not be saved (%s); its log holds every event, "
                    "the save is tried again after %d more events",
                    self._state.run_id,
                    exc,
                    self.CHECKPOINT_EVERY,
                )
            self.checkpoint_error = str(exc)
            return
        self._unsaved = 0
        self._checkpoint_at = self.CHECKPOINT_EVERY
        self.checkpoint_error = None


@contextlib.contextmanager
def host(
    root: str | os.PathLike[str], *, probe: Probe | None = None
) -> Iterator[tuple[PlanStore, HostLock]]:
    """`with host(dir) as (store, lock): ...` - the store of a state directory with its
    host lock held for the duration."""
    lock = HostLock.acquire(root)
    try:
        yield PlanStore(root, probe=probe), lock
    finally:
        lock.release()
