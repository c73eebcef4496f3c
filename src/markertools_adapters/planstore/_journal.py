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
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import attrs

from markertools.plans import Duplicate, Event, HostRestarted, Refused, RunState, Step, apply
from markertools_adapters.planstore._files import LoggedEvent, PlanStore, PlanStoreError, Probe
from markertools_adapters.planstore._lock import HostLock


class RunJournal:
    """Durable application of events to one run (Rule 2, Rule 5). Needs the state
    directory's host lock. `submit` = pure apply, log (fsync), save (CAS)."""

    def __init__(self, store: PlanStore, state: RunState, next_seq: int) -> None:
        self.store = store
        self._state = state
        self._next_seq = next_seq

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

    def submit(self, event: Event, now: float) -> Step:
        """Apply one event durably. Duplicates are answered without writing; every
        other event is logged first, then the record is saved when it changed."""
        step = apply(self._state, event, now)
        if isinstance(step.outcome, Duplicate):
            return step
        seq = self._next_seq
        outcome = type(step.outcome).__name__.lower()
        self.store.append_event(self._state.run_id, LoggedEvent(seq, now, outcome, event))
        self._next_seq = seq + 1
        if isinstance(step.outcome, Refused):
            return step
        saved = self.store.save(attrs.evolve(step.state, log_seq=seq), self._state.revision)
        self._state = saved
        return Step(saved, step.outcome)


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
