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
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import attrs

from markertools.plans import (
    RUN_MACHINE,
    Duplicate,
    Event,
    HostRestarted,
    Refused,
    RunState,
    Step,
    apply,
)
from markertools_adapters.planstore._files import LoggedEvent, PlanStore, PlanStoreError, Probe
from markertools_adapters.planstore._lock import HostLock


class RunJournal:
    """Durable application of events to one run (Rule 2, Rule 5). Needs the state
    directory's host lock. `submit` = pure apply, log (fsync), save (CAS)."""

    CHECKPOINT_EVERY = 64  # events between two record saves of a deferred journal

    def __init__(self, store: PlanStore, state: RunState, next_seq: int) -> None:
        self.store = store
        self._state = state
        self._next_seq = next_seq
        self._unsynced = False  # lines appended without fsync (Rule 4)
        self._unsaved = 0  # events applied since the record was last saved

    @property
    def pending_sync(self) -> bool:
        """True while an event is written but not yet durable (see `sync`)."""
        return self._unsynced or self._unsaved >= self.CHECKPOINT_EVERY

    @property
    def state(self) -> RunState:
        return self._state

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
        if state is not loaded:
            state = store.save(state, loaded.revision)
        last = max([e.seq for e in entries] + [state.log_seq])
        journal = cls(store, state, last + 1)
        return journal, journal.submit(HostRestarted(restart_event_id), now)

    def submit(self, event: Event, now: float, *, durable: bool = True) -> Step:
        """Apply one event. Duplicates are answered without writing; every other event
        is logged first (Rule 1). `durable` (the default): the line is fsynced and the
        record saved before this returns. `durable=False` (Rule 4): the line is only
        written and the record not saved; `sync()` makes every such event durable at
        once, and the caller calls it before anything acts on them. A write that fails
        raises and changes nothing in memory."""
        step = apply(self._state, event, now)
        if isinstance(step.outcome, Duplicate):
            return step
        seq = self._next_seq
        outcome = type(step.outcome).__name__.lower()
        entry = LoggedEvent(seq, now, outcome, event)
        self.store.append_event(self._state.run_id, entry, sync=durable)
        self._next_seq = seq + 1
        if not durable:
            self._unsynced = True
        if isinstance(step.outcome, Refused):
            return step
        state = attrs.evolve(step.state, log_seq=seq)
        if durable:
            self._state = self.store.save(state, self._state.revision)
            self._unsaved = 0
        else:
            self._state = state  # the record on disk stays at its revision until `sync`
            self._unsaved += 1
        return Step(self._state, step.outcome)

    def sync(self, *, checkpoint: bool = False) -> None:
        """Make every deferred event durable: one fsync of the log. The record is saved
        too (a checkpoint) when `checkpoint`, when the run finished, or every
        CHECKPOINT_EVERY events, so a reload replays a bounded tail."""
        if self._unsynced:
            self.store.sync_log(self._state.run_id)
            self._unsynced = False
        finished = self._state.status in RUN_MACHINE.terminal
        if self._unsaved and (checkpoint or finished or self._unsaved >= self.CHECKPOINT_EVERY):
            self._state = self.store.save(self._state, self._state.revision)
            self._unsaved = 0


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
