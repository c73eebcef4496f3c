# Owns: `RunBook`, the runs of one state directory as the supervisor holds them: their
# journals (events applied through the pure core, written at once and made durable in
# batches before any effect they allow), reloading them (a damaged run is quarantined),
# creating and abandoning a run, and stopping a run whose journal cannot be written.
# `SupervisorCore` (lifecycle, tick, launching, workers) is built on it.
#
# Invariants:
#   Rule 1: a run changes only through `submit` (DOT-1); `durable()` makes every event
#           submitted so far durable, one fsync per run with news; an effect or a
#           call's answer comes only after it.
#   Rule 2: a run whose journal cannot be written is stopped once (paused in memory
#           with an alert, its workers ended) and every later change of it is refused
#           with a DotsError on `runId`; nothing is retried in a loop.
#   Rule 3: a run whose files cannot be used is moved to `quarantine/`, never deleted,
#           and the other runs load.
#   Rule 4: a store outage (FLT-3): a write the state directory refuses for now (full,
#           read-only, an I/O error) does not stop the run. Its lines wait in memory
#           (`RunJournal` Rule 6), live turns go on, and one task (`_ride_out`, owned by
#           `Background`) retries with capped exponential backoff and full jitter
#           (`_outage`); meanwhile nothing is launched, no notice goes out, no effect
#           happens and a call that would change the run is refused ("retry"). The
#           outage is logged when it begins and when it ends, with its cause. Past
#           `--store-outage-seconds` the runs whose lines still wait stop as in Rule 2
#           and `store_gave_up` is set (`dots serve` then exits 75).
from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from markertools import Msg, msg
from markertools.plans import Applied, Dropped, Event, Halt, RunState, Step
from markertools_adapters._background import Background
from markertools_adapters._outage import (
    DEFAULT_OUTAGE_SECONDS,
    Outage,
    OutageTooLong,
    backoff_delay,
)
from markertools_adapters.dots._inspect import summary
from markertools_adapters.dots._ports import DotsError
from markertools_adapters.dots._runslot import RunSlot, new_id
from markertools_adapters.planstore import (
    CorruptStore,
    HostLock,
    PlanStore,
    PlanStoreError,
    Quarantined,
    RunJournal,
    RunNotFound,
    StateDirUnwritable,
    quarantine,
)

log = logging.getLogger("markertools.dots")


class RunBook:
    """The runs and their journals (see the module)."""

    background: Background  # the owner of background work (set by the supervisor)

    def __init__(
        self,
        root: Path,
        clock: Callable[[], float],
        locale: str,
        store_outage_seconds: float = DEFAULT_OUTAGE_SECONDS,
    ) -> None:
        self.root = root
        self.clock = clock
        self.locale = locale
        self.store: PlanStore | None = None
        self.lock: HostLock | None = None
        self.runs: dict[str, RunSlot] = {}
        self.quarantined: list[Quarantined] = []  # the state directory's quarantine
        self._stopped: set[str] = set()  # runs stopped because their journal failed
        self.restart_steps: dict[str, Step] = {}
        self._changed = asyncio.Event()
        self._wake = asyncio.Event()
        self._dirty: set[str] = set()
        self._flush_scheduled = False
        # Rule 4: the state directory's outage, the task riding it out, and the end of it
        self.outage = Outage(f"state directory {root}", store_outage_seconds, log=log)
        self._riding = False
        self._store_back = asyncio.Event()
        self.store_gave_up = asyncio.Event()  # an outage outlasted its budget

    def _reload(self, store: PlanStore, lock: HostLock, run_id: str) -> None:
        """Load one run, or quarantine its files when they cannot be used (Rule 7).
        Raises PlanStoreError when the directory itself fails (nothing can be moved,
        the restart cannot be recorded)."""
        try:
            journal, step = RunJournal.open(
                store, lock, run_id, now=self.clock(), restart_event_id=new_id()
            )
        except RunNotFound:
            return  # gone since the listing
        except CorruptStore as exc:
            store.close_log(run_id)  # no descriptor of its log stays open while it moves
            damaged = exc.path or store.record_path(run_id)
            reason = str(exc).removeprefix(f"{damaged}: ")
            owner = store.owner_hint(run_id)  # the record may still name it
            found = quarantine(
                store.root,
                [store.record_path(run_id).name, store.log_path(run_id).name],
                file=damaged.name,
                reason=reason,
                now=self.clock(),
                owner=owner,
                run_id=run_id,
            )
            log.warning("quarantined %s: %s (moved to %s)", found.file, reason, found.moved_to)
            return
        self.runs[run_id] = RunSlot(journal)
        self.restart_steps[run_id] = step

    def quarantined_of(self, owner: str) -> list[Quarantined]:
        """The quarantined runs that named `owner` (what that conversation may see)."""
        return [q for q in self.quarantined if q.owner is not None and q.owner == owner]

    def submit(self, run: RunSlot, event: Event, *, call: bool = False) -> Step:
        """Apply one event through the run's journal (Rule 1); raises a DotsError on
        `runId` when the journal cannot take it (Rule 2). In an outage (Rule 4) the
        event of the supervisor's own work waits in memory; a caller's event (`call`)
        is refused instead, recording nothing, and the run waits out the outage."""
        if run.journal.failed is not None:
            raise self._unwritable(run, undone=True)
        try:
            step = run.journal.submit(event, self.clock(), durable=False, queue=not call)
        except StateDirUnwritable as exc:
            if exc.transient and call:
                self._outage_began(run)
                raise self._in_outage(run) from None
            self._stop(run, exc)
            raise self._unwritable(run, undone=exc.undone) from None
        if run.journal.pending:
            self._outage_began(run)
        self._dirty.add(run.run_id)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            with contextlib.suppress(RuntimeError):  # no loop: the caller syncs itself
                asyncio.get_running_loop().call_soon(self._flush_soon)
        if isinstance(step.outcome, Applied | Dropped):
            self._signal_change()
        if isinstance(step.outcome, Applied) and step.outcome.note is not None:
            log.info("run %s: %s", run.run_id, step.outcome.note.render("en"))
        return step

    def _signal_change(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
        self._wake.set()

    def _unwritable(self, run: RunSlot, *, undone: bool) -> DotsError:
        key = "dots.err.journal_failed" if undone else "dots.err.journal_broken"
        text = msg(key, run=run.run_id, detail=run.journal.failed or "?").render(self.locale)
        return DotsError(text, "runId")

    def _stop(self, run: RunSlot, exc: PlanStoreError) -> None:
        """Rule 6, once per run: fail its journal, pause it in memory with an alert,
        wake the waiters, interrupt its turns and end its workers (no event for any of
        it: nothing more can be recorded)."""
        if run.run_id in self._stopped:
            return
        self._stopped.add(run.run_id)
        detail = msg("plan.paused.journal", detail=str(exc))
        run.journal.fail(str(exc), detail, self.clock())
        log.error("run %s: %s", run.run_id, detail.render("en"))
        self._signal_change()
        if run.workers:
            stopping = self._end_stopped(run)
            if self.background.spawn(stopping, name=f"run {run.run_id}: stopping") is None:
                stopping.close()  # closing: `close()` ends the workers

    async def _end_stopped(self, run: RunSlot) -> None:
        for name, worker in list(run.workers.items()):
            try:
                if worker.turn_live:
                    await worker.interrupt()
            except Exception as exc:  # ending it anyway
                log.info("run %s: interrupt failed: %s", run.run_id, summary(exc))
            await worker.close(grace=2.0)
            if run.workers.get(name) is worker:
                del run.workers[name]

    def writable(self, run: RunSlot) -> RunSlot:
        """`run`, or its DotsError when it is stopped (Rule 2) or waits out an outage
        (Rule 4): for every call that would change it, so nobody is asked about a
        change that cannot be recorded now."""
        if run.journal.failed is not None:
            raise self._unwritable(run, undone=True)
        if run.journal.pending:
            raise self._in_outage(run)
        return run

    # ---- a store outage (Rule 4) ---------------------------------------------------

    def in_outage(self, run: RunSlot) -> bool:
        return run.journal.pending and run.journal.failed is None

    def _in_outage(self, run: RunSlot, *, this_call: bool = False) -> DotsError:
        cause = run.journal.outage or self.outage.cause or "?"
        text = msg(
            "dots.err.store_outage_pending" if this_call else "dots.err.store_outage",
            run=run.run_id,
            detail=str(cause),
            seconds=f"{self.outage.seconds():.0f}",
            budget=f"{self.outage.budget:g}",
        ).render(self.locale)
        return DotsError(text, "runId")

    def _outage_began(self, run: RunSlot) -> None:
        """A line of `run` waits for the directory: the outage begins (logged once) and
        one task rides it out."""
        cause = run.journal.outage
        if not self.outage.active and cause is not None:
            with contextlib.suppress(OutageTooLong):  # a budget of 0: the rider stops it
                self.outage.failed(cause)
        if self._store_back.is_set():
            self._store_back = asyncio.Event()
        if not self._riding:
            self._riding = True
            if self.background.spawn(self._ride_out(), name="store outage") is None:
                self._riding = False

    async def _ride_out(self) -> None:
        """Retry the waiting runs' lines with capped backoff and full jitter until the
        directory takes them (the outage ends: logged, work goes on) or the outage
        outlasts its budget (the runs still waiting stop, Rule 2)."""
        attempt = 0
        try:
            while True:
                await asyncio.sleep(min(backoff_delay(attempt), self.outage.remaining()))
                attempt += 1
                waiting = [r for r in self.runs.values() if self.in_outage(r)]
                failure: StateDirUnwritable | None = None
                for run in waiting:
                    try:
                        run.journal.sync()
                    except StateDirUnwritable as exc:
                        if not exc.transient:
                            self._stop(run, exc)
                            continue
                        failure = exc
                if failure is None:
                    self.outage.ok()
                    self._store_back.set()
                    self._signal_change()
                    return
                try:
                    self.outage.failed(failure)
                except OutageTooLong as too_long:
                    for run in [r for r in self.runs.values() if self.in_outage(r)]:
                        self._stop(run, StateDirUnwritable(str(too_long)))
                    self._store_back.set()
                    self.store_gave_up.set()
                    return
        finally:
            self._riding = False

    async def settled(self, run: RunSlot) -> None:
        """`durable(run)`, after waiting out an outage (Rule 4): an effect that needs
        this run's events durable waits here instead of failing; raises the run's
        DotsError when the outage stopped it."""
        while self.in_outage(run):
            await self._store_back.wait()
        self.durable(run)

    def create_run(self, state: RunState) -> RunSlot:
        """A new run: its record written (durably) and its slot; a DotsError when the
        record cannot be written (nothing is created)."""
        assert self.store is not None and self.lock is not None
        try:
            journal = RunJournal.create(self.store, self.lock, state)
        except StateDirUnwritable as exc:
            text = msg("dots.err.not_created", detail=str(exc)).render(self.locale)
            raise DotsError(text, None) from None
        run = self.runs[state.run_id] = RunSlot(journal)
        return run

    def abandon_run(self, run: RunSlot, error: DotsError) -> DotsError:
        """A run whose first events could not be recorded (Rule 6) is taken back: it
        leaves the supervisor and its files are removed, and the error to answer says
        nothing was created. When its files cannot be removed, it stays (stopped, as
        `error` says) and a restart shows it as a run that never started."""
        if self.store is None or not self.store.remove_new(run.run_id):
            log.error("run %s could not start, and its files could not be removed", run.run_id)
            return error
        self.runs.pop(run.run_id, None)
        self._stopped.discard(run.run_id)
        detail = run.journal.failed or error.message
        return DotsError(msg("dots.err.not_created", detail=detail).render(self.locale), None)

    def log_raw(self, run: RunSlot, kind: str, body: Any) -> None:
        """A non-event record in the run's log (DOT-2: a tuning change); raises like
        `submit` when the journal cannot take it."""
        if run.journal.failed is not None:
            raise self._unwritable(run, undone=True)
        try:
            run.journal.append_raw(kind, self.clock(), body)
        except StateDirUnwritable as exc:
            self._stop(run, exc)
            raise self._unwritable(run, undone=exc.undone) from None
        if run.journal.pending:
            self._outage_began(run)
        self._dirty.add(run.run_id)

    def _flush_soon(self) -> None:
        self._flush_scheduled = False
        try:
            self.durable()
        except Exception:
            log.exception("the run journals could not be synced")

    def durable(self, run: RunSlot | None = None) -> None:
        """Every event submitted so far is durable (one fsync per run with news). A run
        whose fsync fails is stopped (Rule 6); when that is `run` (the run a call or an
        effect is about), this raises its DotsError: what the caller was about to
        answer or do did not become durable."""
        dirty, self._dirty = self._dirty, set()
        failed: StateDirUnwritable | None = None
        for run_id in dirty:
            slot = self.runs.get(run_id)
            if slot is None or slot.journal.failed is not None or slot.journal.pending:
                continue  # stopped, or waiting out an outage (the rider syncs it)
            try:
                slot.journal.sync()
            except StateDirUnwritable as exc:
                if exc.transient:  # Rule 4: its lines wait (put back in the queue)
                    self._outage_began(slot)
                    continue
                self._stop(slot, exc)
                if slot is run:
                    failed = exc
        if run is not None and run.journal.failed is not None:
            raise self._unwritable(run, undone=failed.undone if failed else True)
        if run is not None and run.journal.pending:
            raise self._in_outage(run, this_call=True)

    def halt(self, run: RunSlot, kind: str, detail: Msg, role: str | None) -> None:
        self.submit(run, Halt(new_id(), kind, detail, role))  # type: ignore[arg-type]

    async def changed(self, timeout: float) -> None:
        """Wait until any run changes, or `timeout` seconds."""
        event = self._changed
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(0.0, timeout)):
                await event.wait()
