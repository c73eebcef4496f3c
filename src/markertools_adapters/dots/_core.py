# Owns: `SupervisorCore`, the running half of the orchestration supervisor (seed 004,
# DOT-1..12, 16, 17), on the runs and journals of `RunBook` (`_runbook.py`): the
# lifecycle of one state directory (its host lock, reloading every run, ending every
# child), the one owner of background work (`Background`: faults pause the run with an
# alert), the tick (launch admission from `plans.admit`, notices, decision timeouts,
# turn timeouts, quota polls, idle workers), launching turns (`_launch`) and the
# callbacks of the workers. The calls a caller makes live in `Supervisor`
# (`_supervisor.py`), built on this class.
#
# Invariants:
#   Rule 1: a run changes only through `RunBook.submit` (DOT-1) and nothing acts on an
#           event before it is durable (`durable()`).
#   Rule 2: launch admission is `plans.admit` over every run (DOT-6): at most
#           `maxConcurrent` turns on the host, never two in one directory (compared by
#           device and inode: a symlink or a bind mount is the same directory).
#   Rule 3: nothing is ever approved: an approval or input request is refused, its
#           turn interrupted and its run paused with an alert (DOT-7).
#   Rule 4: every background task is a child of `Background`; an unexpected exception
#           in one (or in a worker callback) pauses its run with an alert and leaves the
#           supervisor running. Waiting is on events, never a sleep loop.
#   Rule 5: workers end by one path (`end_workers`): a cancel, a finish and a finished
#           run all use it; an idle role's process ends after `idleMs`.
#   Rule 6: a run stopped because its journal failed (`RunBook` Rule 2) is never
#           ticked, launched or notified again in this process.
#   Rule 7: at `open`, a directory that cannot be written is refused before anything
#           starts (DotsError on `stateDir`, one line); a run whose files cannot be used
#           is quarantined (`RunBook` Rule 3) and the others load.
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import time
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

from markertools import InvalidArgument, msg, summarize_error
from markertools.plans import (
    LIVE_ROLE_STATES,
    HostSettings,
    Notice,
    NotifyResult,
    QuotaObserved,
    RunAdmission,
    RunState,
    TurnEnded,
    admit,
    due_decision_timeouts,
    due_notices,
    normalize_cwd,
    overdue_turns,
    validate_host_settings,
)
from markertools.plans import (
    DecisionTimeout as DecisionTimeoutEvent,
)
from markertools_adapters._background import Background
from markertools_adapters._outage import DEFAULT_OUTAGE_SECONDS
from markertools_adapters.dots._inspect import CodexAccess, summary
from markertools_adapters.dots._launch import launch_turn
from markertools_adapters.dots._paths import default_state_dir
from markertools_adapters.dots._ports import (
    Confirmer,
    DeclineAll,
    DotsError,
    NoAnswerNotifier,
    NoticeOut,
    Notifier,
    SubagentProvider,
)
from markertools_adapters.dots._runbook import RunBook
from markertools_adapters.dots._runslot import RunSlot, new_id
from markertools_adapters.dots._views import FINISHED, head
from markertools_adapters.dots._worker import CodexWorker
from markertools_adapters.planstore import (
    HostLock,
    HostLockHeld,
    PlanStore,
    PlanStoreError,
    StateDirUnwritable,
    quarantined,
)

__all__ = ["LIVE", "RunSlot", "SupervisorCore", "new_id"]

log = logging.getLogger("markertools.dots")

LIVE = LIVE_ROLE_STATES  # roles whose turn holds a slot
MAX_REPLY_CHARS = 65_536  # the head of a reply the run keeps (the decision shows 200)


def checked_settings(settings: HostSettings) -> HostSettings:
    """PLN-10 on the library path too: settings outside the ranges are refused at
    construction, not after a user has confirmed a run."""
    raw = {
        "maxConcurrent": settings.max_concurrent,
        "pollMs": settings.poll_ms,
        "maxRuns": settings.max_runs,
        "idleMs": settings.idle_ms,
    }
    check = validate_host_settings(raw)
    if check.settings is None:
        issue = check.issues[0]
        field = issue.path.removeprefix("$.")
        raise InvalidArgument(f"host settings: {field} {issue.message.render('en')}")
    return settings


class SupervisorCore(RunBook):
    """Lifecycle, journal, tick, launching and worker callbacks (see the module)."""

    def __init__(
        self,
        state_dir: str | os.PathLike[str] | None = None,
        *,
        settings: HostSettings | None = None,
        codex_bin: str | None = None,
        codex_env: Mapping[str, str] | None = None,
        confirmer: Confirmer | None = None,
        notifier: Notifier | None = None,
        providers: Mapping[str, SubagentProvider] | None = None,
        clock: Callable[[], float] = time.time,
        tick_seconds: float = 0.2,
        request_timeout: float = 60.0,
        interrupt_grace: float = 10.0,
        locale: str = "en",
        text_columns: Callable[[], int | None] | None = None,
        store_outage_seconds: float = DEFAULT_OUTAGE_SECONDS,
    ) -> None:
        self.settings = checked_settings(settings or HostSettings())
        # the width of the terminal that shows the confirmations (None: 72 columns of text)
        self.text_columns = text_columns
        root = state_dir or self.settings.state_dir or default_state_dir()
        self.root = Path(root).expanduser()
        self.confirmer: Confirmer = confirmer or DeclineAll()
        self.notifier: Notifier = notifier or NoAnswerNotifier()
        self.providers = dict(providers or {})
        self.clock = clock
        self.tick_seconds = tick_seconds
        self.request_timeout = request_timeout
        self.interrupt_grace = interrupt_grace
        self.locale = locale
        self.codex = CodexAccess(
            self.root,
            codex_bin=codex_bin or self.settings.codex_bin,
            codex_env=codex_env,
            request_timeout=request_timeout,
            locale=locale,
        )
        RunBook.__init__(self, self.root, clock, locale, store_outage_seconds)
        self.background = Background("dots supervisor", on_fault=self._fault, log=log)
        self._last_admitted: str | None = None

    # ---- lifecycle ---------------------------------------------------------------

    async def __aenter__(self) -> SupervisorCore:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        """Take the host lock (DOT-1) and reload every run (DOT-11): live roles are
        paused, their instructions kept and never re-sent. A run whose files cannot be
        used is quarantined (Rule 7); a directory that cannot be written, or another
        live host, is a DotsError on `stateDir` and nothing starts."""
        try:
            self.lock = HostLock.acquire(self.root)
        except HostLockHeld as exc:
            raise DotsError(str(exc), "stateDir") from None
        except PlanStoreError as exc:  # not writable, not a directory
            text = msg("dots.err.state_dir", detail=str(exc), dir=str(self.root))
            raise DotsError(text.render(self.locale), "stateDir") from None
        try:
            self.store = PlanStore(self.root)
            self.store.check_writable()
            self.store.remove_temp_files()
            for run_id in self.store.run_ids():
                self._reload(self.store, self.lock, run_id)
            self.quarantined = quarantined(self.root)
        except PlanStoreError as exc:
            self.runs.clear()
            self.restart_steps.clear()
            if self.store is not None:
                self.store.close()
            self.lock.release()
            self.lock = None
            text = msg("dots.err.state_dir", detail=str(exc), dir=str(self.root))
            raise DotsError(text.render(self.locale), "stateDir") from None
        await self.background.start()
        self.background.spawn(self._tick_loop(), name="tick")

    async def close(self) -> None:
        """Stop driving runs and end every child; runs stay resumable (DOT-16)."""
        await self.background.close()
        for run in self.runs.values():
            for worker in run.workers.values():
                await worker.close(grace=2.0)
            run.workers.clear()
            with contextlib.suppress(Exception):
                run.journal.sync(checkpoint=True)
        await self.codex.close()
        if self.store is not None:
            self.store.close()
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    # ---- faults (Rule 4) ------------------------------------------------------------

    def _fault(self, name: str, exc: BaseException) -> None:
        """A background task that belongs to no run failed (already logged): the tick
        restarts itself; anything else is only logged."""
        if name == "tick" and self.background.running:
            self.background.spawn(self._tick_loop(), name="tick")

    def run_fault(self, run: RunSlot, what: str, exc: BaseException) -> None:
        """Rule 4: a task or callback of `run` failed: the run pauses with an alert
        naming what failed; the supervisor carries on. A run stopped because its
        journal failed (Rule 6) has said so already: nothing more is recorded."""
        if run.journal.failed is not None:
            log.debug("run %s: %s ended: the run is stopped (%s)", run.run_id, what, exc)
            return
        log.error("run %s: %s failed", run.run_id, what, exc_info=exc)
        run.faulted.add(what)  # the tick does not start it again until the run resumes
        detail = msg("plan.paused.internal", what=what, detail=summarize_error(exc))
        try:
            self.halt(run, "internal-error", detail, None)
            self.durable()
        except Exception:
            log.exception("run %s: the fault of %s could not be recorded", run.run_id, what)

    def spawn(self, run: RunSlot, what: str, coro: Coroutine[Any, Any, Any]) -> None:
        """A background task of `run`, owned by `Background`, its faults the run's.
        After `close()` (a late callback) the coroutine is closed unrun."""
        guard = self._run_guard(run, what, coro)
        if self.background.spawn(guard, name=f"run {run.run_id}: {what}") is None:
            coro.close()  # closed: the guard was closed unrun, and so is what it guards

    async def _run_guard(self, run: RunSlot, what: str, coro: Coroutine[Any, Any, Any]) -> None:
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.run_fault(run, what, exc)

    def guarded(self, run: RunSlot, what: str, call: Callable[[], None]) -> None:
        """Run a worker callback; an exception is a fault of its run, never the
        client's reader's."""
        try:
            call()
        except Exception as exc:
            self.run_fault(run, what, exc)

    # ---- the tick ---------------------------------------------------------------------

    async def _tick_loop(self) -> None:
        """A timer (timeouts, retries and polls are due by the clock), woken early by
        every change so a dispatched instruction launches at once. A stopped run
        (Rule 6) is never ticked: nothing is tried again for it."""
        while True:
            for run in list(self.runs.values()):
                if run.journal.failed is not None:
                    continue
                try:
                    self._tick_run(run)
                except Exception as exc:  # Rule 4: a bug in one run's tick pauses that run
                    self.run_fault(run, "tick", exc)
            try:
                self._admit()
            except Exception:
                log.exception("launch admission failed")
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.tick_seconds):
                    await self._wake.wait()

    def _tick_run(self, run: RunSlot) -> None:
        now = self.clock()
        for notice in due_notices(run.state, now):
            if notice.event_id not in run.notifying and "notice" not in run.faulted:
                run.notifying.add(notice.event_id)
                self.spawn(run, "notice", self._deliver(run, notice))
        for role, decision in due_decision_timeouts(run.state, now):
            self.submit(run, DecisionTimeoutEvent(new_id(), role, decision))
        for role in overdue_turns(run.state, now):
            if role not in run.timing_out and f"timeout of {role}" not in run.faulted:
                run.timing_out.add(role)
                self.spawn(run, f"timeout of {role}", self._time_out(run, role))
        live_here = any(r.status in LIVE for r in run.state.roles)
        poll_due = now - run.last_quota_poll >= self.settings.poll_ms / 1000.0
        if live_here and poll_due and "quota poll" not in run.faulted:
            run.last_quota_poll = now
            self.spawn(run, "quota poll", self._poll_quota(run))
        if run.state.status in FINISHED and run.workers and not live_here and not run.ending:
            self.spawn(run, "ending workers", self.end_workers(run))
        elif run.workers:
            self._end_idle_workers(run)

    def _end_idle_workers(self, run: RunSlot) -> None:
        """Issue 26: a role with no live turn keeps no process beyond `idleMs`; its next
        turn starts a new app-server and resumes the thread by id (DOT-3, DOT-12)."""
        now = time.monotonic()
        limit = self.settings.idle_ms / 1000.0
        for name, worker in list(run.workers.items()):
            role = run.state.role(name)
            if role is None or role.status in LIVE or name in run.launching:
                continue
            if worker.alive and worker.idle_for(now) >= limit:
                worker.idle_since = None  # once
                self.spawn(run, f"ending the idle worker {name}", worker.close(grace=2.0))

    def cwd_key(self, cwd: str) -> str:
        """The directory key admission compares (DOT-6): the directory's identity, its
        device and inode (`os.stat` follows every symlink), so a directory, a symlink
        to it and a bind mount of it are one directory (issue 37 item 10: path strings
        told a bind mount apart). A directory that cannot be stat'ed (not made yet) is
        keyed by its real path, then as written."""
        try:
            found = os.stat(cwd)
        except (OSError, ValueError):
            found = None
        if found is not None and stat.S_ISDIR(found.st_mode):
            return f"dev {found.st_dev} inode {found.st_ino}"
        try:
            return normalize_cwd(os.path.realpath(cwd))
        except (OSError, ValueError):
            return normalize_cwd(cwd)

    def directory_taken(self, run: RunSlot, role: str) -> str | None:
        """DOT-6 again, just before a turn starts: the role (run/role) whose live turn is
        now in this role's directory (a path changed since admission), or None."""
        spec = run.state.proposal.role(role)
        if spec is None:
            return None
        key = self.cwd_key(spec.cwd)
        for other in self.runs.values():
            for r in other.state.roles:
                if other is run and r.name == role:
                    continue
                busy = r.status in LIVE or r.name in other.launching
                other_spec = other.state.proposal.role(r.name)
                if busy and other_spec is not None and self.cwd_key(other_spec.cwd) == key:
                    return f"{other.run_id}/{r.name}"
        return None

    def _admit(self) -> None:
        """Launch what `plans.admit` answers (Rule 2)."""
        runs = [
            RunAdmission(
                r.state,
                frozenset(r.launching),
                {w.name: self.cwd_key(w.cwd) for w in r.state.proposal.workers},
            )
            for r in self.runs.values()
            # Rule 6: its workers are ended, nothing launches; an outage: nothing is
            # claimed until the state directory takes writes again (RunBook Rule 4)
            if r.journal.failed is None and not r.journal.pending
        ]
        for admitted in admit(runs, self.settings.max_concurrent, after=self._last_admitted):
            run = self.runs[admitted.run_id]
            self._last_admitted = admitted.run_id
            run.launching.add(admitted.role)
            self.spawn(run, f"launch of {admitted.role}", self._launch(run, admitted.role))

    async def _launch(self, run: RunSlot, role: str) -> None:
        try:
            await launch_turn(self, run, role)
        finally:
            run.launching.discard(role)
            self._wake.set()

    # ---- workers and their callbacks ---------------------------------------------------

    def worker(self, run: RunSlot, role: str) -> CodexWorker:
        if run.journal.failed is not None:  # Rule 6: a stopped run starts no process
            raise self._unwritable(run, undone=True)
        worker = run.workers.get(role)
        if worker is not None:
            return worker
        spec = run.state.proposal.role(role)
        assert spec is not None and self.codex.checked is not None
        worker = CodexWorker(
            self.codex.checked,
            env=self.codex.child_env(f"{run.run_id}:{role}"),
            cwd=spec.cwd,
            on_raw=lambda line: self._raw(run, line),
            on_turn_end=lambda turn, status, reply: self.guarded(
                run, f"turn end of {role}", lambda: self._turn_ended(run, role, status, reply)
            ),
            on_request=lambda kind, what: self.spawn(
                run, f"refusal to {role}", self._refused_request(run, role, kind, what)
            ),
            on_exit=lambda detail: self.guarded(
                run, f"exit of {role}", lambda: self._worker_exited(run, role, detail)
            ),
            on_rate_limits=self.codex.merge_rate_limits,
            request_timeout=self.request_timeout,
        )
        run.workers[role] = worker
        return worker

    def _raw(self, run: RunSlot, line: str) -> None:
        if self.store is None or run.journal.failed is not None:
            return
        try:
            run.journal.append_raw("notification", self.clock(), line)
        except StateDirUnwritable as exc:  # DOT-2 cannot hold: the run stops (Rule 6)
            self._stop(run, exc)
            return
        if run.journal.pending:  # an outage: the line waits in memory (RunBook Rule 4)
            self._outage_began(run)

    def _turn_ended(self, run: RunSlot, role: str, status: str, reply: str | None) -> None:
        outcome = "timed_out" if role in run.timing_out else status
        run.timing_out.discard(role)
        if reply is not None and len(reply) > MAX_REPLY_CHARS:  # the journal stays bounded
            reply = (
                reply[:MAX_REPLY_CHARS]
                + f"\n[... {len(reply) - MAX_REPLY_CHARS} characters not kept]"
            )
        self.submit(run, TurnEnded(new_id(), role, new_id(), reply, outcome))  # type: ignore[arg-type]
        # DOT-8: a turn's end is also an observation: its model responses have just
        # updated the rate limits (`account/rateLimits/updated` precedes turn/completed),
        # so a threshold crossed by a short turn is seen before its decision goes out
        # (issue 36: with nothing reported by then, this is the one "unknown" alert)
        limits = self.codex.rate_limits
        if run.state.status == "running":
            self.submit(run, QuotaObserved(new_id(), limits.windows() if limits else ()))

    async def _refused_request(self, run: RunSlot, role: str, kind: str, what: str) -> None:
        detail = msg("plan.paused.approval", role=role, request=kind, what=what)
        self.halt(run, "approval", detail, role)
        await self.settled(run)
        worker = run.workers.get(role)
        if worker is not None:
            await worker.interrupt()

    def _worker_exited(self, run: RunSlot, role: str, detail: str) -> None:
        current = run.state.role(role)
        if current is None or current.status not in LIVE or role in run.launching:
            return  # idle: the next turn starts a new process and resumes the thread
        self.halt(
            run, "worker-exit", msg("plan.paused.worker_exit", role=role, detail=detail), role
        )
        self.submit(run, TurnEnded(new_id(), role, new_id(), None, "failed"))

    async def _time_out(self, run: RunSlot, role: str) -> None:
        """DOT-4: interrupt the turn, pause the run; the turn's end is `timed_out`."""
        current = run.state.role(role)
        ms = (current.timeout_ms if current else None) or run.state.proposal.timeout_ms
        self.halt(run, "timeout", msg("plan.paused.timeout", role=role, ms=ms), role)
        await self.settled(run)
        worker = run.workers.get(role)
        if worker is not None and worker.turn_live:
            await worker.interrupt()
            # a child that does not answer the interrupt is ended (DOT-3: it stops
            # answering -> its role pauses); its exit reports the turn as ended
            if not await worker.turn_over(self.interrupt_grace):
                await worker.close(grace=1.0)
                run.workers.pop(role, None)
                now_role = run.state.role(role)
                if now_role is not None and now_role.status in LIVE:
                    run.timing_out.discard(role)
                    self.submit(run, TurnEnded(new_id(), role, new_id(), None, "timed_out"))
        elif current is not None and current.status in LIVE and role not in run.launching:
            run.timing_out.discard(role)  # no turn to interrupt (never started)
            self.submit(run, TurnEnded(new_id(), role, new_id(), None, "timed_out"))

    async def _poll_quota(self, run: RunSlot) -> None:
        """DOT-8: the rate-limit read, else the latest update notification."""
        from markertools_adapters.codex.answers import rate_limits_of_read

        snapshot = None
        for worker in list(run.workers.values()):
            if worker.client is None or not worker.client.running:
                continue
            try:
                snapshot = rate_limits_of_read(await worker.client.rate_limits_read())
            except Exception:
                continue
            if snapshot is not None:
                self.codex.rate_limits = (
                    snapshot
                    if self.codex.rate_limits is None
                    else self.codex.rate_limits.merged(snapshot)
                )
                break
        limits = self.codex.rate_limits
        if limits is None:
            # issue 36: nothing reported since this supervisor started (the first poll
            # comes as the first turn starts, before any model response): no
            # observation, no "unknown" alert; the end of each turn observes (DOT-8)
            return
        self.submit(run, QuotaObserved(new_id(), limits.windows() if limits else ()))

    async def _deliver(self, run: RunSlot, notice: Notice) -> None:
        # the event that queued the notice is durable before it goes out (after an
        # outage, once it is over); a run whose journal failed sends nothing (Rule 6:
        # raises, and the tick skips it after)
        try:
            await self.settled(run)
        except DotsError:
            run.notifying.discard(notice.event_id)
            raise
        out = self.notice_out(run.state, notice)
        error: str | None = None
        try:
            answer = await self.notifier.notify(out)
        except Exception as exc:
            answer, error = "failed", summary(exc)
        finally:
            run.notifying.discard(notice.event_id)
        if answer not in ("delivered", "failed", "offline"):
            answer, error = "failed", f"notifier answered {answer!r}"
        self.submit(run, NotifyResult(new_id(), notice.event_id, answer, error))

    def notice_out(self, state: RunState, notice: Notice) -> NoticeOut:
        role = state.role(notice.role) if notice.role else None
        text = msg(
            f"dots.notice.{notice.kind}", role=notice.role, decision=notice.decision_id
        ).render(self.locale)
        if notice.detail is not None:
            text = msg(
                "dots.notice.with_detail", text=text, detail=notice.detail.render(self.locale)
            ).render(self.locale)
        return NoticeOut(
            notice_id=notice.event_id,
            run_id=state.run_id,
            owner=state.owner,
            kind=notice.kind,
            role=notice.role,
            decision_id=notice.decision_id,
            text=text,
            reply_head=head(role.last_reply) if role else None,
        )

    async def end_workers(self, run: RunSlot) -> None:
        """Rule 5, the one path: interrupt live turns, wait (on changes) for them to
        end, end the processes, settle the roles still live."""
        run.ending = True
        try:
            workers = list(run.workers.items())
            for _, worker in workers:
                await worker.interrupt()
            deadline = time.monotonic() + 3.0
            while any(r.status in LIVE for r in run.state.roles):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                await self.changed(left)
            for name, worker in workers:
                await worker.close(grace=2.0)
                if run.workers.get(name) is worker:
                    del run.workers[name]
            for role in run.state.roles:
                if role.status in LIVE:
                    self.submit(run, TurnEnded(new_id(), role.name, new_id(), None, "interrupted"))
            self.durable()
        finally:
            run.ending = False
