# Owns: `Supervisor`, the orchestration runtime of seed 004 ("local-codex-dots"): one
# long-lived object per state directory that holds its `host.lock`, turns every input
# (an app-server notification, a timer, a tool call, a notifier answer) into an event
# applied durably by `RunJournal`, and every decision of the pure core
# (`markertools.plans`) into app-server calls on real `codex app-server` children.
# Everything runs on one asyncio event loop: no thread per child.
#
# Invariants (DOT-1..12, 16, 17):
#   Rule 1: a run changes only through `RunJournal.submit` (DOT-1).
#   Rule 2: at most `maxConcurrent` turns live on the host across all runs; two turns
#           never run in the same cwd at once; one unfinished run owns a thread id;
#           one thread never has two turns (DOT-6).
#   Rule 3: nothing is ever approved: an approval or input request is refused, its
#           turn interrupted and its run paused with an alert (DOT-7).
#   Rule 4: a reload pauses every live role and never re-sends its instruction
#           (DOT-11); a supervisor shutdown leaves every run resumable (DOT-16).
#   Rule 5: every call a caller makes is checked against the run's owner; another
#           conversation gets "run not found" (DOT-15).
#   Rule 6: a dependant's first instruction carries its predecessors' accepted
#           conclusions framed as data (INJ-7), never spliced in as instructions.
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from markertools import Msg, frame_data, msg
from markertools.plans import (
    LIVE_ROLE_STATES,
    Applied,
    Budget,
    Cancel,
    Confirmation,
    DecisionTimeout,
    Dispatch,
    Dropped,
    Event,
    Finish,
    Halt,
    HostOnline,
    HostSettings,
    Launch,
    Notice,
    NotifyResult,
    Pause,
    Proposal,
    QuotaObserved,
    QuotaWindow,
    Resume,
    RunState,
    StartRun,
    Step,
    ThreadSeen,
    Tune,
    TurnEnded,
    TurnStarted,
    decision_ids_needed,
    due_decision_timeouts,
    due_notices,
    launch_payload,
    launchable,
    new_run,
    normalize_cwd,
    overdue_turns,
    proposal_to_json,
    validate_host_settings,
    validate_proposal,
)
from markertools_adapters.clock import SystemRandom
from markertools_adapters.codex.client import AppServerClient, AppServerError, Json
from markertools_adapters.dots._paths import default_state_dir
from markertools_adapters.dots._ports import (
    ConfirmAnswer,
    Confirmer,
    ConfirmRequest,
    DeclineAll,
    DotsError,
    NoAnswerNotifier,
    NotConfirmed,
    NoticeOut,
    Notifier,
    ProposalInvalid,
    RunNotFound,
    SubagentProvider,
)
from markertools_adapters.dots._views import head, history_turns, run_view, turn_ids
from markertools_adapters.dots._worker import CLIENT_INFO, CodexWorker
from markertools_adapters.planstore import (
    HostLock,
    HostLockHeld,
    PlanStore,
    RunJournal,
    make_state_dir,
)

log = logging.getLogger("markertools.dots")

MIN_CODEX: Final[tuple[int, int, int]] = (0, 169, 0)
WORKER_ENV: Final[str] = "MARKERTOOLS_DOTS_WORKER"  # set in every worker's environment
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
TERMINAL: Final[frozenset[str]] = frozenset({"completed", "cancelled"})


def _eid() -> str:
    return uuid.uuid4().hex


def _summary(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]


@attrs.define
class _Run:
    journal: RunJournal
    workers: dict[str, CodexWorker] = attrs.Factory(dict)
    launching: set[str] = attrs.Factory(set)
    notifying: set[str] = attrs.Factory(set)
    timing_out: set[str] = attrs.Factory(set)
    last_quota_poll: float = 0.0

    @property
    def state(self) -> RunState:
        return self.journal.state

    def proposal_roles(self) -> tuple[Any, ...]:
        return self.journal.state.proposal.workers


def _checked_settings(settings: HostSettings) -> HostSettings:
    """PLN-10 on the library path too (the CLI options and `validate_host_settings`
    are not the only way in): settings outside the ranges are refused at construction,
    not after a user has confirmed a run."""
    raw = {"maxConcurrent": settings.max_concurrent, "pollMs": settings.poll_ms}
    check = validate_host_settings(raw)
    if check.settings is None:
        issue = check.issues[0]
        field = issue.path.removeprefix("$.")
        raise ValueError(f"host settings: {field} {issue.message.render('en')}")
    return settings


class Supervisor:
    """The orchestration supervisor of one state directory (see the module header).

    Use as `async with Supervisor(...) as sup:`; the Python API (`start`, `status`,
    `wait`, `dispatch`, `tune`, `control`, `finish`, `probe`, `threads`,
    `thread_read`) is what `dots run` and the MCP server call. Every call takes the
    caller's conversation id (`owner`) and raises `DotsError` (or a subclass) with the
    field it concerns when refused.

    Raises (construction):
        ValueError: `settings` outside PLN-10 (`maxConcurrent` 1-3, `pollMs` >= 1000),
            naming the field."""

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
    ) -> None:
        self.settings = _checked_settings(settings or HostSettings())
        root = state_dir or self.settings.state_dir or default_state_dir()
        self.root = Path(root).expanduser()
        self.codex_bin = codex_bin or self.settings.codex_bin
        self.codex_env = dict(codex_env) if codex_env is not None else None
        self.confirmer: Confirmer = confirmer or DeclineAll()
        self.notifier: Notifier = notifier or NoAnswerNotifier()
        self.providers = dict(providers or {})
        self.clock = clock
        self.tick_seconds = tick_seconds
        self.request_timeout = request_timeout
        self.interrupt_grace = interrupt_grace
        self.locale = locale
        self.random = SystemRandom()
        self.store: PlanStore | None = None
        self.lock: HostLock | None = None
        self.runs: dict[str, _Run] = {}
        self.restart_steps: dict[str, Step] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._ticker: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()
        self._rate_snapshot: Json | None = None
        self._utility: AppServerClient | None = None
        self._utility_lock = asyncio.Lock()
        self._codex_checked: str | None = None

    # ---- lifecycle ---------------------------------------------------------------

    async def __aenter__(self) -> Supervisor:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        """Take the host lock (DOT-1) and reload every run (DOT-11): live roles are
        paused, their instructions kept and never re-sent."""
        try:
            self.lock = HostLock.acquire(self.root)
        except HostLockHeld as exc:
            raise DotsError(str(exc), "stateDir") from None
        self.store = PlanStore(self.root)
        for run_id in self.store.run_ids():
            journal, step = RunJournal.open(
                self.store, self.lock, run_id, now=self.clock(), restart_event_id=_eid()
            )
            self.runs[run_id] = _Run(journal)
            self.restart_steps[run_id] = step
        self._ticker = asyncio.get_running_loop().create_task(self._tick_loop())

    async def close(self) -> None:
        """Stop driving runs and end every child; runs stay resumable (DOT-16)."""
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._ticker
            self._ticker = None
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for run in self.runs.values():
            for worker in run.workers.values():
                await worker.close(grace=2.0)
            run.workers.clear()
        if self._utility is not None:
            with contextlib.suppress(Exception):
                await self._utility.close(grace=2.0)
            self._utility = None
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ---- the journal --------------------------------------------------------------

    def _submit(self, run: _Run, event: Event) -> Step:
        step = run.journal.submit(event, self.clock())
        if isinstance(step.outcome, Applied | Dropped):
            changed, self._changed = self._changed, asyncio.Event()
            changed.set()
        if isinstance(step.outcome, Applied) and step.outcome.note is not None:
            log.info("run %s: %s", run.state.run_id, step.outcome.note.render("en"))
        return step

    def _run_of(self, owner: str, run_id: str) -> _Run:
        run = self.runs.get(run_id) if isinstance(run_id, str) else None
        if run is None or run.state.owner != owner:
            raise RunNotFound(f"run not found: {run_id!r}", "runId")
        return run

    def _owned(self, owner: str) -> list[_Run]:
        return [r for r in self.runs.values() if r.state.owner == owner]

    # ---- codex binary -------------------------------------------------------------

    async def codex_binary(self) -> str:
        """The codex executable (`codexBin`, else PATH), checked to be at least
        MIN_CODEX; a clear error otherwise (DOT-3)."""
        if self._codex_checked is not None:
            return self._codex_checked
        binary = self.codex_bin or shutil.which("codex")
        if not binary:
            raise DotsError(
                "no codex executable: install @openai/codex or set codexBin (--codex-bin)",
                "codexBin",
            )
        try:
            proc = await asyncio.create_subprocess_exec(
                binary,
                "--version",
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._child_env(None),
            )
            out, _ = await asyncio.wait_for(proc.communicate(), 30)
        except (OSError, TimeoutError) as exc:
            raise DotsError(
                f"codex at {binary} could not run: {_summary(exc)}", "codexBin"
            ) from None
        found = _VERSION.search(out.decode("utf-8", "replace"))
        version = tuple(int(x) for x in found.groups()) if found else None
        if version is None or version < MIN_CODEX:
            shown = ".".join(map(str, version)) if version else "unknown"
            need = ".".join(map(str, MIN_CODEX))
            raise DotsError(
                f"codex at {binary} is version {shown}; {need} or newer is needed", "codexBin"
            )
        self._codex_checked = binary
        return binary

    def _child_env(self, worker: str | None) -> dict[str, str]:
        env = dict(self.codex_env) if self.codex_env is not None else dict(os.environ)
        if worker is not None:
            env[WORKER_ENV] = worker  # a dots server started inside a worker refuses changes
        return env

    async def utility(self) -> AppServerClient:
        """A shared app-server for probe / threads / thread_read (read-only calls)."""
        async with self._utility_lock:
            if self._utility is not None and self._utility.running:
                return self._utility
            binary = await self.codex_binary()
            make_state_dir(self.root)  # its cwd: a first `dots probe` finds no directory yet
            client = AppServerClient(
                binary,
                env=self._child_env("utility"),
                cwd=str(self.root),
                default_timeout=self.request_timeout,
                queue_events=False,
                on_notification=self._utility_notification,
            )
            await client.start()
            await client.initialize(CLIENT_INFO)
            self._utility = client
            return client

    def _utility_notification(self, message: Json, raw: str) -> None:
        if message.get("method") == "account/rateLimits/updated":
            params = message.get("params")
            if isinstance(params, dict) and isinstance(params.get("rateLimits"), dict):
                self._merge_rate_limits(params["rateLimits"])

    # ---- the timer ------------------------------------------------------------------

    async def _tick_loop(self) -> None:
        while True:
            try:
                self._tick()
            except Exception:  # a bug in one tick must not stop the supervisor
                log.exception("dots tick failed")
            await asyncio.sleep(self.tick_seconds)

    def _live_cwds(self) -> tuple[set[str], int]:
        cwds: set[str] = set()
        live = 0
        for run in self.runs.values():
            for role in run.state.roles:
                if role.status in LIVE_ROLE_STATES or role.name in run.launching:
                    spec = run.state.proposal.role(role.name)
                    if spec is not None:
                        cwds.add(normalize_cwd(spec.cwd))
                    live += 1
        return cwds, live

    def _tick(self) -> None:
        now = self.clock()
        cwds, host_live = self._live_cwds()
        for run in list(self.runs.values()):
            state = run.state
            for notice in due_notices(state, now):
                if notice.event_id not in run.notifying:
                    run.notifying.add(notice.event_id)
                    self._spawn(self._deliver(run, notice))
            for role, decision in due_decision_timeouts(state, now):
                self._submit(run, DecisionTimeout(_eid(), role, decision))
            for role in overdue_turns(run.state, now):
                if role not in run.timing_out:
                    run.timing_out.add(role)
                    self._spawn(self._time_out(run, role))
            live_here = sum(1 for r in run.state.roles if r.status in LIVE_ROLE_STATES)
            poll = self.settings.poll_ms / 1000.0
            if live_here and now - run.last_quota_poll >= poll:
                run.last_quota_poll = now
                self._spawn(self._poll_quota(run))
            if run.state.status in TERMINAL and run.workers and not live_here:
                workers, run.workers = dict(run.workers), {}
                for worker in workers.values():
                    self._spawn(worker.close())
            if run.state.status != "running":
                continue
            other = host_live - live_here
            blocked = frozenset(
                r.name
                for r in run.proposal_roles()
                if r.name in run.launching or normalize_cwd(r.cwd) in cwds  # DOT-6
            )
            for role in launchable(run.state, host_busy=other, skip=blocked):
                if host_live >= self.settings.max_concurrent:
                    break
                spec = run.state.proposal.role(role)
                if spec is None:
                    continue
                cwd = normalize_cwd(spec.cwd)
                if cwd in cwds:
                    continue  # two roles of this tick share a cwd
                cwds.add(cwd)
                host_live += 1
                run.launching.add(role)
                self._spawn(self._launch(run, role))

    # ---- launching a turn ---------------------------------------------------------

    def _worker(self, run: _Run, role: str) -> CodexWorker:
        worker = run.workers.get(role)
        if worker is not None:
            return worker
        spec = run.state.proposal.role(role)
        assert spec is not None
        assert self._codex_checked is not None
        run_id = run.state.run_id
        worker = CodexWorker(
            self._codex_checked,
            env=self._child_env(f"{run_id}:{role}"),
            cwd=spec.cwd,
            on_raw=lambda line: self._raw(run, line),
            on_turn_end=lambda turn, status, reply: self._turn_ended(run, role, status, reply),
            on_request=lambda kind, what: self._spawn(self._refused_request(run, role, kind, what)),
            on_exit=lambda detail: self._worker_exited(run, role, detail),
            on_rate_limits=self._merge_rate_limits,
            request_timeout=self.request_timeout,
        )
        run.workers[role] = worker
        return worker

    def _halt(self, run: _Run, kind: str, detail: Msg, role: str | None) -> None:
        self._submit(run, Halt(_eid(), kind, detail, role))  # type: ignore[arg-type]

    async def _launch(self, run: _Run, role: str) -> None:
        try:
            await self.codex_binary()
            worker = self._worker(run, role)
            state = run.state
            spec = state.proposal.role(role)
            current = state.role(role)
            assert spec is not None and current is not None
            model = current.model or spec.model
            effort = current.effort or spec.effort
            if (model is not None or effort is not None) and not await self._model_offered(
                run, worker, role, model, effort
            ):
                return
            thread = current.thread_id or spec.existing_thread_id
            # DOT-12: a taken-over thread is read again before every turn; a thread of
            # our own only when this process does not hold it (while it does, codex
            # refuses any other writer: "already has an active writer")
            check = spec.existing_thread_id is not None or worker.thread_id != thread
            if (
                thread is not None
                and check
                and not await self._no_external_turn(run, worker, role, thread)
            ):
                return
            step = self._submit(run, Launch(_eid(), role))
            if not isinstance(step.outcome, Applied):
                return
            payload = launch_payload(run.state, role)
            if payload is None:  # the launch paused the run (turn limit)
                return
            text = self._instruction(payload.instruction, payload.inputs)
            try:
                thread_id = await worker.open_thread(
                    cwd=payload.cwd,
                    sandbox=payload.sandbox,
                    model=payload.model,
                    resume=payload.thread_id,
                )
                turn_id = await worker.start_turn(text, model=payload.model, effort=payload.effort)
            except Exception as exc:
                detail = msg("plan.paused.launch_failed", role=role, detail=_summary(exc))
                self._halt(run, "launch-failed", detail, role)
                self._submit(run, TurnEnded(_eid(), role, _eid(), None, "failed"))
                return
            self._submit(run, TurnStarted(_eid(), role, thread_id, turn_id))
            worker.flush_early_end()
        except DotsError as exc:
            self._halt(
                run,
                "launch-failed",
                msg("plan.paused.launch_failed", role=role, detail=exc.message),
                role,
            )
        except Exception as exc:
            log.exception("launch of %s failed", role)
            detail = msg("plan.paused.launch_failed", role=role, detail=_summary(exc))
            self._halt(run, "launch-failed", detail, role)
        finally:
            run.launching.discard(role)

    def _instruction(self, instruction: str, inputs: tuple[tuple[str, str], ...]) -> str:
        """Rule 6: the instruction, then each predecessor's conclusion as framed data."""
        parts = [instruction]
        for dep, conclusion in inputs:
            label = msg("plan.conclusion_of", role=dep)
            parts.append(frame_data(conclusion, label, self.random, self.locale).text)
        return "\n\n".join(parts)

    async def _model_offered(
        self, run: _Run, worker: CodexWorker, role: str, model: str | None, effort: str | None
    ) -> bool:
        """DOT-5: `model/list` before every turn of a role naming a model or effort."""
        client = await worker.ensure()
        listing = await client.model_list()
        models = [m for m in listing.get("data") or [] if isinstance(m, dict)]
        names = [str(m.get("model") or m.get("id")) for m in models]
        chosen: Json | None = None
        if model is not None:
            chosen = next((m for m in models if model in (m.get("model"), m.get("id"))), None)
            if chosen is None:
                offered = ", ".join(names) or "none"
                detail = msg(
                    "plan.paused.model", role=role, what="model", value=model, offered=offered
                )
                self._halt(run, "model", detail, role)
                return False
        else:
            chosen = next((m for m in models if m.get("isDefault")), models[0] if models else None)
        if effort is not None:
            efforts = [
                str(e.get("reasoningEffort"))
                for e in (chosen or {}).get("supportedReasoningEfforts") or []
                if isinstance(e, dict)
            ]
            if effort not in efforts:
                offered = ", ".join(efforts) or "none"
                detail = msg(
                    "plan.paused.model", role=role, what="effort", value=effort, offered=offered
                )
                self._halt(run, "model", detail, role)
                return False
        return True

    async def _no_external_turn(
        self, run: _Run, worker: CodexWorker, role: str, thread: str
    ) -> bool:
        """DOT-12: before each turn on a thread, its turns are read again; one the
        supervisor does not know pauses the run."""
        client = await worker.ensure()
        result = await client.thread_read(thread, include_turns=True)
        known = set((run.state.role(role) or attrs.evolve(run.state.roles[0])).known_turns)
        unknown = [t for t in turn_ids(result) if t not in known]
        if unknown:
            detail = msg("plan.paused.external_turn", role=role, thread=thread, turn=unknown[-1])
            self._halt(run, "external-turn", detail, role)
            return False
        return True

    # ---- callbacks from workers ---------------------------------------------------

    def _raw(self, run: _Run, line: str) -> None:
        if self.store is not None:
            try:
                self.store.append_raw(run.state.run_id, "notification", self.clock(), line)
            except OSError:
                log.exception("could not log a notification of run %s", run.state.run_id)

    def _turn_ended(self, run: _Run, role: str, status: str, reply: str | None) -> None:
        outcome = "timed_out" if role in run.timing_out else status
        run.timing_out.discard(role)
        self._submit(run, TurnEnded(_eid(), role, _eid(), reply, outcome))  # type: ignore[arg-type]
        # DOT-8: a turn's end is also an observation: its model responses have just
        # updated the rate limits (`account/rateLimits/updated` precedes turn/completed),
        # so a threshold crossed by a short turn is seen before its decision goes out
        windows = quota_windows(self._rate_snapshot)
        if windows and run.state.status == "running":
            self._submit(run, QuotaObserved(_eid(), windows))

    async def _refused_request(self, run: _Run, role: str, kind: str, what: str) -> None:
        detail = msg("plan.paused.approval", role=role, request=kind, what=what)
        self._halt(run, "approval", detail, role)
        worker = run.workers.get(role)
        if worker is not None:
            await worker.interrupt()

    def _worker_exited(self, run: _Run, role: str, detail: str) -> None:
        current = run.state.role(role)
        worker = run.workers.get(role)
        if worker is not None:
            worker.turn_id = None
        if current is None or current.status not in LIVE_ROLE_STATES or role in run.launching:
            return  # idle: the next turn starts a new process and resumes the thread
        self._halt(
            run, "worker-exit", msg("plan.paused.worker_exit", role=role, detail=detail), role
        )
        self._submit(run, TurnEnded(_eid(), role, _eid(), None, "failed"))

    async def _time_out(self, run: _Run, role: str) -> None:
        """DOT-4: interrupt the turn, pause the run; the turn's end is `timed_out`."""
        spec = run.state.proposal.role(role)
        current = run.state.role(role)
        ms = (current.timeout_ms if current else None) or run.state.proposal.timeout_ms
        self._halt(run, "timeout", msg("plan.paused.timeout", role=role, ms=ms), role)
        worker = run.workers.get(role)
        if worker is not None and worker.turn_live:
            await worker.interrupt()
            # a child that does not answer the interrupt is ended (DOT-3: it stops
            # answering -> its role pauses); its exit reports the turn as ended
            deadline = time.monotonic() + self.interrupt_grace
            while worker.turn_live and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            if worker.turn_live:
                await worker.close(grace=1.0)
                run.workers.pop(role, None)
                if (run.state.role(role) or current).status in LIVE_ROLE_STATES:  # type: ignore[union-attr]
                    run.timing_out.discard(role)
                    self._submit(run, TurnEnded(_eid(), role, _eid(), None, "timed_out"))
        elif (
            spec is not None
            and current is not None
            and current.status in LIVE_ROLE_STATES
            and role not in run.launching  # no turn to interrupt (never started)
        ):
            run.timing_out.discard(role)
            self._submit(run, TurnEnded(_eid(), role, _eid(), None, "timed_out"))

    def _merge_rate_limits(self, update: Json) -> None:
        """`account/rateLimits/updated` is sparse: merged into the last snapshot."""
        merged = dict(self._rate_snapshot or {})
        for key, value in update.items():
            if value is not None:
                merged[key] = value
        self._rate_snapshot = merged

    async def _poll_quota(self, run: _Run) -> None:
        """DOT-8: the rate-limit read, else the latest update notification."""
        snapshot: Json | None = None
        for worker in list(run.workers.values()):
            if worker.client is None or not worker.client.running:
                continue
            try:
                result = await worker.client.rate_limits_read()
            except (AppServerError, Exception):
                continue
            if isinstance(result.get("rateLimits"), dict):
                snapshot = result["rateLimits"]
                self._merge_rate_limits(snapshot)
                break
        if snapshot is None:
            snapshot = self._rate_snapshot
        self._submit(run, QuotaObserved(_eid(), quota_windows(snapshot)))

    async def _deliver(self, run: _Run, notice: Notice) -> None:
        out = self.notice_out(run.state, notice)
        error: str | None = None
        try:
            answer = await self.notifier.notify(out)
        except Exception as exc:
            answer, error = "failed", _summary(exc)
        finally:
            run.notifying.discard(notice.event_id)
        if answer not in ("delivered", "failed", "offline"):
            answer, error = "failed", f"notifier answered {answer!r}"
        self._submit(run, NotifyResult(_eid(), notice.event_id, answer, error))

    def notice_out(self, state: RunState, notice: Notice) -> NoticeOut:
        role = state.role(notice.role) if notice.role else None
        texts = {
            "decision": "worker {role} awaits a decision (decisionId {d})",
            "reminder": "reminder: worker {role} still awaits a decision (decisionId {d})",
            "paused": "run paused",
            "completed": "run completed",
            "cancelled": "run cancelled",
        }
        text = texts.get(notice.kind, notice.kind).format(role=notice.role, d=notice.decision_id)
        if notice.detail is not None:
            text += ": " + notice.detail.render(self.locale)
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

    # ---- the API: runs --------------------------------------------------------------

    def _check_proposal(self, raw: object, thread_cwds: Mapping[str, str] | None) -> Proposal:
        check = validate_proposal(raw, thread_cwds=thread_cwds)
        if check.proposal is None:
            raise ProposalInvalid([(i.path, i.message.render(self.locale)) for i in check.issues])
        return check.proposal

    async def start(self, proposal: object, *, owner: str) -> dict[str, Any]:
        """dots_start (DOT-13/14): PLN validation, backends, thread ownership, takeover
        heads, two confirmations, then the run. Declined: nothing is created."""
        plan = self._check_proposal(proposal, None)
        for role in plan.workers:
            if role.backend != "codex" and role.backend not in self.providers:
                raise DotsError(
                    f"worker {role.name!r}: backend {role.backend!r} has no provider on this host "
                    "(subagentProvider); only codex roles can run here",
                    "proposal.workers.backend",
                )
            if role.backend != "codex":
                raise DotsError(
                    f"worker {role.name!r}: backend {role.backend!r} is not supported by this "
                    "supervisor yet",
                    "proposal.workers.backend",
                )
        await self.codex_binary()
        taken = self._owned_threads()
        heads: dict[str, list[dict[str, Any]]] = {}
        cwds: dict[str, str] = {}
        for role in plan.workers:
            tid = role.existing_thread_id
            if tid is None:
                continue
            if tid in taken:
                raise DotsError(
                    f"worker {role.name!r}: thread {tid} belongs to unfinished run {taken[tid]}",
                    "proposal.workers.existingThreadId",
                )
            try:
                result = await (await self.utility()).thread_read(tid, include_turns=True)
            except AppServerError as exc:
                raise DotsError(
                    f"worker {role.name!r}: thread {tid} cannot be read: {exc.message}",
                    "proposal.workers.existingThreadId",
                ) from None
            thread = result.get("thread") if isinstance(result.get("thread"), dict) else {}
            if isinstance(thread, dict) and isinstance(thread.get("cwd"), str):
                cwds[tid] = thread["cwd"]
            heads[role.name] = history_turns(result, 3)
        plan = self._check_proposal(proposal, cwds)  # PLN-2: the thread's cwd is known now
        confirmations: list[Confirmation] = []
        for request in self._confirmations(plan, heads):
            answer = await self._ask(request)
            confirmations.append(
                Confirmation(self.clock(), request.step, answer == "accept", request.title)
            )
            if answer != "accept":
                raise NotConfirmed(
                    f"the user did not confirm the {request.step} ({answer}); nothing was started"
                )
        assert self.store is not None and self.lock is not None
        run_id = uuid.uuid4().hex
        state = new_run(
            run_id,
            plan,
            self.clock(),
            self.settings.max_concurrent,
            owner=owner,
            confirmations=tuple(confirmations),
        )
        run = _Run(RunJournal.create(self.store, self.lock, state))
        self.runs[run_id] = run
        for role in plan.workers:
            if role.existing_thread_id is not None:
                ids = tuple(t["id"] for t in heads.get(role.name, []) if "id" in t)
                all_ids = await self._all_turn_ids(role.existing_thread_id)
                self._submit(run, ThreadSeen(_eid(), role.name, all_ids or ids))
        self._submit(run, StartRun(_eid()))
        return run_view(run.state, self.locale)

    async def _all_turn_ids(self, thread: str) -> tuple[str, ...]:
        result = await (await self.utility()).thread_read(thread, include_turns=True)
        return tuple(turn_ids(result))

    async def _ask(self, request: ConfirmRequest) -> ConfirmAnswer:
        try:
            answer = await self.confirmer.confirm(request)
        except DotsError:
            raise
        except Exception as exc:
            raise NotConfirmed(
                f"the user could not be asked: {_summary(exc)}; nothing was changed"
            ) from None
        return answer if answer in ("accept", "decline", "cancel") else "cancel"

    def _confirmations(
        self, plan: Proposal, heads: Mapping[str, list[dict[str, Any]]]
    ) -> list[ConfirmRequest]:
        body = proposal_to_json(plan)
        lines = [f"goal: {plan.goal}", f"plan: {plan.plan}", "workers:"]
        for r in plan.workers:
            deps = f" after {', '.join(r.depends_on)}" if r.depends_on else ""
            lines.append(f"  - {r.name} ({r.backend}{deps}): {r.role}")
        first = ConfirmRequest(
            "plan",
            "Start this plan?",
            "\n".join(lines),
            {"goal": plan.goal, "plan": plan.plan, "workers": [w["name"] for w in body["workers"]]},
        )
        launch: list[str] = []
        workers: list[dict[str, Any]] = []
        for r in plan.workers:
            model = r.model or "(the backend's default)"
            effort = r.effort or "(default)"
            launch.append(
                f"  - {r.name}: cwd {r.cwd}, sandbox {r.sandbox}, model {model}, effort {effort}"
            )
            item: dict[str, Any] = {
                "name": r.name,
                "cwd": r.cwd,
                "sandbox": r.sandbox,
                "model": r.model,
                "effort": r.effort,
            }
            if r.existing_thread_id is not None:
                launch.append(f"    takes over thread {r.existing_thread_id}; its latest turns:")
                for turn in heads.get(r.name, []):
                    launch.append(
                        f"      {turn.get('id')}: {turn.get('user', '')!r} -> {turn.get('agent', '')!r}"
                    )
                item["existingThreadId"] = r.existing_thread_id
                item["historyHead"] = heads.get(r.name, [])
            workers.append(item)
        limits = (
            f"limits: maxTurns {plan.max_turns}, timeoutMs {plan.timeout_ms}, "
            f"maxConcurrent {self.settings.max_concurrent}, quota stop: "
            f"{_quota_stop(plan.quota.stop_at_left_percent)}, "
            f"allowedModels {list(plan.allowed_models) or 'none'}"
        )
        second = ConfirmRequest(
            "launch",
            "Launch these workers?",
            "\n".join(["workers:", *launch, limits]),
            {
                "workers": workers,
                "maxTurns": plan.max_turns,
                "timeoutMs": plan.timeout_ms,
                "maxConcurrent": self.settings.max_concurrent,
                "allowedModels": list(plan.allowed_models),
            },
        )
        return [first, second]

    def _owned_threads(self) -> dict[str, str]:
        """Thread id -> the unfinished run that owns it (DOT-6)."""
        owned: dict[str, str] = {}
        for run in self.runs.values():
            if run.state.status in TERMINAL:
                continue
            for role in run.state.roles:
                spec = run.state.proposal.role(role.name)
                for tid in (role.thread_id, spec.existing_thread_id if spec else None):
                    if tid:
                        owned[tid] = run.state.run_id
        return owned

    def status(self, *, owner: str, run_id: str | None = None) -> list[dict[str, Any]]:
        """dots_status: one run or all of the caller's runs."""
        self._online(owner)
        runs = [self._run_of(owner, run_id)] if run_id is not None else self._owned(owner)
        return [run_view(r.state, self.locale) for r in runs]

    def pending_decisions(self, *, owner: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for run in self._owned(owner):
            if run.state.status != "running":
                continue
            for role in run.state.roles:
                if role.status == "awaiting-decision" and role.decision_id:
                    out.append(
                        {
                            "runId": run.state.run_id,
                            "worker": role.name,
                            "decisionId": role.decision_id,
                            "replyHead": head(role.last_reply),
                        }
                    )
        return out

    async def wait(
        self, *, owner: str, wait_ms: int, run_id: str | None = None
    ) -> list[dict[str, Any]]:
        """dots_status with `waitMs` (DOT-13): return at once when a worker of the
        caller's runs awaits a decision, else when a run changes state or the time is
        up."""
        if not isinstance(wait_ms, int) or isinstance(wait_ms, bool) or not 0 <= wait_ms <= 240_000:
            raise DotsError("waitMs must be an integer from 0 to 240000", "waitMs")
        deadline = time.monotonic() + wait_ms / 1000.0
        before = {r.state.run_id: r.state.status for r in self._owned(owner)}
        if run_id is not None:
            self._run_of(owner, run_id)
        while True:
            if self.pending_decisions(owner=owner):
                break
            now_states = {r.state.run_id: r.state.status for r in self._owned(owner)}
            if now_states != before:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                break
            changed = self._changed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), left)
        return self.status(owner=owner, run_id=run_id)

    def _online(self, owner: str) -> None:
        """The caller is back: notices that waited for it are due again (DOT-10)."""
        for run in self._owned(owner):
            if any(n.waiting_for_host for n in run.state.outbox):
                self._submit(run, HostOnline(_eid()))

    def dispatch(
        self, *, owner: str, run_id: str, worker: str, instruction: str, decision_id: str
    ) -> dict[str, Any]:
        """dots_dispatch (PLN-7): the next instruction, with the current decision id."""
        run = self._run_of(owner, run_id)
        _text(instruction, "instruction")
        _text(decision_id, "decisionId")
        _text(worker, "worker")
        self._refuse(
            self._submit(run, Dispatch(_eid(), worker, decision_id, instruction)), "decisionId"
        )
        return run_view(run.state, self.locale)

    def finish(
        self,
        *,
        owner: str,
        run_id: str,
        conclusion: str,
        worker: str | None = None,
        decision_id: str | None = None,
    ) -> dict[str, Any]:
        """dots_finish: a role's accepted conclusion (dependants become ready carrying
        it); without `worker`, the run completes (live turns are interrupted)."""
        run = self._run_of(owner, run_id)
        _text(conclusion, "conclusion")
        if worker is None:
            waiting = [r for r in run.state.roles if r.status == "awaiting-decision"]
            for role in waiting:
                self._refuse(
                    self._submit(run, Finish(_eid(), role.name, conclusion, role.decision_id)),
                    "worker",
                )
            if run.state.status not in TERMINAL:
                self._refuse(self._submit(run, Cancel(_eid())), "runId")
                self._spawn(self._end_workers(run))
            return run_view(run.state, self.locale)
        _text(worker, "worker")
        self._refuse(self._submit(run, Finish(_eid(), worker, conclusion, decision_id)), "worker")
        return run_view(run.state, self.locale)

    async def control(
        self, *, owner: str, run_id: str, action: str, budget: int | None = None
    ) -> dict[str, Any]:
        """dots_control: pause (live turns end, then paused), resume (fresh decision
        ids), cancel (interrupt, end the processes), budget (a new maxTurns)."""
        run = self._run_of(owner, run_id)
        if action == "pause":
            self._refuse(self._submit(run, Pause(_eid())), "action")
        elif action == "resume":
            ids = tuple((name, _eid()) for name in decision_ids_needed(run.state))
            self._refuse(self._submit(run, Resume(_eid(), ids)), "action")
        elif action == "cancel":
            self._refuse(self._submit(run, Cancel(_eid())), "action")
            await self._end_workers(run)
        elif action == "budget":
            if not isinstance(budget, int) or isinstance(budget, bool):
                raise DotsError("budget must be an integer (the new maxTurns)", "budget")
            if budget > run.state.turn_limit:
                answer = await self._ask(
                    ConfirmRequest(
                        "budget",
                        "Raise the turn budget?",
                        f"run {run_id}: maxTurns {run.state.turn_limit} -> {budget}",
                        {"runId": run_id, "maxTurns": budget},
                    )
                )
                if answer != "accept":
                    raise NotConfirmed(
                        f"the user did not confirm the new budget ({answer}); nothing changed",
                        "budget",
                    )
            self._refuse(self._submit(run, Budget(_eid(), budget)), "budget")
        else:
            raise DotsError(
                f"action must be pause, resume, cancel or budget, got {action!r}", "action"
            )
        return run_view(run.state, self.locale)

    async def tune(
        self, *, owner: str, run_id: str, worker: str, changes: Mapping[str, Any]
    ) -> dict[str, Any]:
        """dots_tune: model / effort / timeoutMs / sandbox for the next turns; widening
        the sandbox, a model outside allowedModels or a longer timeout asks the user."""
        run = self._run_of(owner, run_id)
        _text(worker, "worker")
        state = run.state
        spec = state.proposal.role(worker)
        current = state.role(worker)
        if spec is None or current is None:
            raise DotsError(f"no worker {worker!r} in run {run_id}", "worker")
        if not isinstance(changes, Mapping) or not changes:
            raise DotsError(
                "changes must be an object with model, effort, timeoutMs or sandbox", "changes"
            )
        unknown = sorted(set(changes) - {"model", "effort", "timeoutMs", "sandbox"})
        if unknown:
            raise DotsError(f"changes: unknown field {unknown[0]!r}", f"changes.{unknown[0]}")
        model = changes.get("model")
        effort = changes.get("effort")
        timeout = changes.get("timeoutMs")
        sandbox = changes.get("sandbox")
        for name, value in (("model", model), ("effort", effort), ("sandbox", sandbox)):
            if value is not None and not (isinstance(value, str) and value.strip()):
                raise DotsError(f"changes.{name} must be a non-empty string", f"changes.{name}")
        if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool)):
            raise DotsError("changes.timeoutMs must be an integer", "changes.timeoutMs")
        if sandbox is not None and sandbox not in ("read-only", "workspace-write"):
            raise DotsError(
                "changes.sandbox must be read-only or workspace-write (full access is never offered)",
                "changes.sandbox",
            )
        widen: list[str] = []
        now_sandbox = current.sandbox or spec.sandbox
        if sandbox == "workspace-write" and now_sandbox == "read-only":
            widen.append("sandbox read-only -> workspace-write")
        allow: tuple[str, ...] = ()
        if isinstance(model, str) and model != spec.model and model not in state.models_allowed:
            widen.append(f"model {model} (not in allowedModels)")
            allow = (model,)
        now_timeout = current.timeout_ms or state.proposal.timeout_ms
        if isinstance(timeout, int) and timeout > now_timeout:
            widen.append(f"timeoutMs {now_timeout} -> {timeout}")
        if widen:
            answer = await self._ask(
                ConfirmRequest(
                    "tune",
                    f"Change worker {worker}?",
                    "\n".join(widen),
                    {"runId": run_id, "worker": worker, "changes": dict(changes)},
                )
            )
            if answer != "accept":
                raise NotConfirmed(
                    f"the user did not confirm the change ({answer}); nothing changed", "changes"
                )
        event = Tune(_eid(), worker, model, effort, timeout, sandbox, allow)
        self._refuse(self._submit(run, event), "changes")
        if self.store is not None:
            self.store.append_raw(
                run_id,
                "tuning",
                self.clock(),
                {"worker": worker, "changes": dict(changes), "confirmed": bool(widen)},
            )
        return run_view(run.state, self.locale)

    def _refuse(self, step: Step, field: str) -> None:
        from markertools.plans import Refused

        if isinstance(step.outcome, Refused):
            raise DotsError(step.outcome.reason.render(self.locale), field)
        if isinstance(step.outcome, Dropped):
            raise DotsError(step.outcome.reason.render(self.locale), field)

    async def _end_workers(self, run: _Run) -> None:
        """Cancel: interrupt live turns, end the processes, settle the roles."""
        workers = list(run.workers.items())
        for _, worker in workers:
            await worker.interrupt()
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline and any(
            r.status in LIVE_ROLE_STATES for r in run.state.roles
        ):
            await asyncio.sleep(0.05)
        for _, worker in workers:
            await worker.close(grace=2.0)
        run.workers.clear()
        for role in run.state.roles:
            if role.status in LIVE_ROLE_STATES:
                self._submit(run, TurnEnded(_eid(), role.name, _eid(), None, "interrupted"))

    # ---- the API: read-only ---------------------------------------------------------

    async def probe(self) -> dict[str, Any]:
        """dots_probe: the default model and effort, rate-limit windows, credits."""
        client = await self.utility()
        listing = await client.model_list()
        models = [m for m in listing.get("data") or [] if isinstance(m, dict)]
        default = next((m for m in models if m.get("isDefault")), models[0] if models else None)
        limits: Json | None
        source = "read"
        try:
            result = await client.rate_limits_read()
            limits = (
                result.get("rateLimits") if isinstance(result.get("rateLimits"), dict) else None
            )
        except AppServerError as exc:
            limits, source = self._rate_snapshot, f"update notifications ({exc.message})"
        if limits is None:
            source = "unknown"
        return {
            "model": (default or {}).get("model"),
            "effort": (default or {}).get("defaultReasoningEffort"),
            "models": [
                {
                    "model": m.get("model"),
                    "efforts": [
                        e.get("reasoningEffort")
                        for e in m.get("supportedReasoningEfforts") or []
                        if isinstance(e, dict)
                    ],
                    "isDefault": bool(m.get("isDefault")),
                }
                for m in models
            ],
            "rateLimits": {
                "source": source,
                "windows": [attrs.asdict(w) for w in quota_windows(limits)],
                "credits": (limits or {}).get("credits"),
            },
        }

    async def threads(
        self,
        *,
        cwd: str | None = None,
        search: str | None = None,
        archived: bool | None = None,
        cursor: str | None = None,
        limit: int = 25,
    ) -> dict[str, Any]:
        """dots_threads: persistent threads by cwd / searchTerm / archived, paged,
        grouped by project directory."""
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 100:
            raise DotsError("limit must be an integer from 1 to 100", "limit")
        client = await self.utility()
        params: dict[str, Any] = {"limit": limit}
        for key, value in (
            ("cwd", cwd),
            ("searchTerm", search),
            ("archived", archived),
            ("cursor", cursor),
        ):
            if value is not None:
                params[key] = value
        result = await client.thread_list(**params)
        threads = []
        projects: dict[str, list[str]] = {}
        for t in result.get("data") or []:
            if not isinstance(t, dict):
                continue
            item = {
                "threadId": t.get("id"),
                "cwd": t.get("cwd"),
                "preview": head(t.get("preview")),
                "updatedAt": t.get("updatedAt"),
                "model": t.get("model"),
            }
            threads.append(item)
            projects.setdefault(str(t.get("cwd")), []).append(str(t.get("id")))
        return {
            "threads": threads,
            "projects": [{"cwd": k, "threadIds": v} for k, v in projects.items()],
            "nextCursor": result.get("nextCursor"),
        }

    async def thread_read(
        self, thread_id: str, *, limit: int = 5, cursor: str | None = None
    ) -> dict[str, Any]:
        """dots_thread_read: recent history, newest last, framed as data (INJ-7) and
        marked untrusted."""
        _text(thread_id, "threadId")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 10:
            raise DotsError("limit must be an integer from 1 to 10", "limit")
        end: int | None = None
        if cursor is not None:
            if not (isinstance(cursor, str) and cursor.isdigit()):
                raise DotsError("cursor must be a cursor returned by an earlier call", "cursor")
            end = int(cursor)
        client = await self.utility()
        try:
            result = await client.thread_read(thread_id, include_turns=True)
        except AppServerError as exc:
            raise DotsError(
                f"thread {thread_id} cannot be read: {exc.message}", "threadId"
            ) from None
        turns = history_turns(result, None)
        stop = len(turns) if end is None else min(end, len(turns))
        start = max(0, stop - limit)
        page = turns[start:stop]
        lines = []
        for turn in page:
            lines.append(
                f"turn {turn.get('id')}:\nuser: {turn.get('user', '')}\nagent: {turn.get('agent', '')}"
            )
        framed = frame_data(
            "\n\n".join(lines) or "(no turns)",
            msg("plan.thread_history", thread=thread_id),
            self.random,
            self.locale,
        )
        thread = result.get("thread") if isinstance(result.get("thread"), dict) else {}
        return {
            "threadId": thread_id,
            "cwd": (thread or {}).get("cwd"),
            "historyIsUntrusted": True,
            "history": framed.text,
            "turnIds": [t.get("id") for t in page],
            "nextCursor": str(start) if start > 0 else None,
        }


def _quota_stop(left: float | None) -> str:
    """The quota stop as the launch confirmation shows it ("quota stop: at 25% left")."""
    return "off (stopAtLeftPercent is null)" if left is None else f"at {left:g}% left"


def _text(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise DotsError(f"{field} must be a non-empty string", field)
    return value


def quota_windows(snapshot: Json | None) -> tuple[QuotaWindow, ...]:
    """The windows of a rate-limit snapshot as PLN-8 sees them (remaining percent)."""
    if not isinstance(snapshot, dict):
        return ()
    bucket = snapshot.get("limitId") if isinstance(snapshot.get("limitId"), str) else None
    out: list[QuotaWindow] = []
    for key in ("primary", "secondary"):
        window = snapshot.get(key)
        if not isinstance(window, dict):
            continue
        used = window.get("usedPercent")
        if not isinstance(used, int | float) or isinstance(used, bool):
            continue
        minutes = window.get("windowDurationMins")
        out.append(
            QuotaWindow(
                left_percent=max(0.0, 100.0 - float(used)),
                bucket=bucket,
                window_minutes=minutes
                if isinstance(minutes, int) and not isinstance(minutes, bool)
                else None,
            )
        )
    return tuple(out)
