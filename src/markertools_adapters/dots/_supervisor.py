# Owns: `Supervisor`, the orchestration supervisor's calls (DOT-13/14/15): what
# `dots run` and the MCP server ask of it - start a run (validation, backends, thread
# ownership, takeover heads, two confirmations), status and waiting, dispatch, finish,
# control, tune, and the read-only probe / threads / thread_read. Each call takes typed
# values, checks their meaning against the run, and returns a typed view (`_views`);
# JSON is made only at the CLI and MCP edges. The running half - lifecycle, journal,
# tick, launching, workers - is `SupervisorCore` (`_core.py`).
#
# Invariants:
#   Rule 1: every call a caller makes is checked against the run's owner; another
#           conversation gets "run not found" (DOT-15).
#   Rule 2: a call that changes a run answers only once its events are durable: what
#           it answers is what a restart will do.
#   Rule 3: only a confirmer's "accept" is a yes; a start, a budget raise or a widening
#           tune that is not accepted changes nothing (DOT-14).
#   Rule 4: nobody is asked about a value that will be refused: a start is validated,
#           a budget and a tune are checked against the PLN ranges and the run
#           (`budget_refusal`, `tune_refusal`) before the question; the same check runs
#           again when the event is applied (the run may have moved meanwhile).
from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any, Final

from markertools import msg
from markertools.plans import (
    Budget,
    Cancel,
    Confirmation,
    Dispatch,
    Dropped,
    Finish,
    HostOnline,
    Pause,
    PlanIssue,
    Proposal,
    Refused,
    Resume,
    StartRun,
    Step,
    ThreadSeen,
    Tune,
    budget_refusal,
    decision_ids_needed,
    new_run,
    tune_refusal,
    validate_proposal,
)
from markertools_adapters.codex.answers import HistoryTurn
from markertools_adapters.codex.client import AppServerError
from markertools_adapters.dots._confirm_text import (
    budget_request,
    say,
    start_requests,
    tune_request,
)
from markertools_adapters.dots._core import RunSlot, SupervisorCore, new_id
from markertools_adapters.dots._inspect import WORKER_ENV, summary
from markertools_adapters.dots._ports import (
    ConfirmAnswer,
    ConfirmRequest,
    DotsError,
    NotConfirmed,
    ProposalInvalid,
    RunNotFound,
)
from markertools_adapters.dots._views import (
    FINISHED,
    PendingDecision,
    ProbeView,
    RunView,
    ThreadReadView,
    ThreadsView,
    head,
    run_view,
)

__all__ = ["WORKER_ENV", "Supervisor", "quota_windows"]

MAX_WAIT_MS: Final[int] = 240_000
MAX_TEXT_CHARS: Final[int] = 1_048_576  # an instruction or conclusion (Codex's turn input limit)
ACTIONS: Final[tuple[str, ...]] = ("pause", "resume", "cancel", "budget")


class Supervisor(SupervisorCore):
    """The orchestration supervisor of one state directory (see the module header).

    Use as `async with Supervisor(...) as sup:`; every call takes the caller's
    conversation id (`owner`) and raises `DotsError` (or a subclass) with the field it
    concerns when refused.

    Raises (construction):
        ValueError: `settings` outside PLN-10 (`maxConcurrent` 1-3, `pollMs` >= 1000),
            naming the field."""

    def _err(self, key: str, argument: str | None, **args: Any) -> DotsError:
        return DotsError(msg(key, **args).render(self.locale), argument)

    def _text(self, value: object, field: str) -> str:
        """Text a person typed (the terminal) or a tool sent: blank is no answer, and
        more than MAX_TEXT_CHARS is refused (its event line must stay within the log's
        line bound, `planstore.MAX_LINE_BYTES`)."""
        if not isinstance(value, str) or not value.strip():
            raise self._err("dots.err.blank", field, field=field)
        if len(value) > MAX_TEXT_CHARS:
            raise self._err("dots.err.too_long", field, field=field, max=MAX_TEXT_CHARS, n=len(value))
        return value

    def run_of(self, owner: str, run_id: str) -> RunSlot:
        run = self.runs.get(run_id) if isinstance(run_id, str) else None
        if run is None or run.state.owner != owner:
            raise RunNotFound(
                msg("dots.err.run_not_found", run=repr(run_id)).render(self.locale), "runId"
            )
        return run

    def owned(self, owner: str) -> list[RunSlot]:
        return [r for r in self.runs.values() if r.state.owner == owner]

    def _refuse(self, step: Step, field: str) -> None:
        if isinstance(step.outcome, Refused | Dropped):
            raise DotsError(step.outcome.reason.render(self.locale), field)

    def _refuse_before_asking(self, refusal: PlanIssue | None) -> None:
        """Rule 4: a value the run would refuse is refused before anyone is asked."""
        if refusal is not None:
            raise DotsError(refusal.message.render(self.locale), refusal.path)

    def _view(self, run: RunSlot) -> RunView:
        self.durable(run)  # Rule 2: raises when the run's events did not become durable
        return run_view(run.state, self.locale)

    async def codex_binary(self) -> str:
        return await self.codex.binary()

    # ---- starting a run ----------------------------------------------------------------

    def _check_proposal(self, raw: object, thread_cwds: Mapping[str, str] | None) -> Proposal:
        check = validate_proposal(raw, thread_cwds=thread_cwds)
        if check.proposal is None:
            raise ProposalInvalid([(i.path, i.message.render(self.locale)) for i in check.issues])
        return check.proposal

    def owned_threads(self) -> dict[str, RunSlot]:
        """Thread id -> the unfinished run that owns it (DOT-6)."""
        owned: dict[str, RunSlot] = {}
        for run in self.runs.values():
            if run.state.status in FINISHED:
                continue
            for role in run.state.roles:
                spec = run.state.proposal.role(role.name)
                for tid in (role.thread_id, spec.existing_thread_id if spec else None):
                    if tid:
                        owned[tid] = run
        return owned

    async def start(self, proposal: object, *, owner: str) -> RunView:
        """dots_start (DOT-13/14): PLN validation, backends, thread ownership, takeover
        heads, two confirmations, then the run. Declined: nothing is created."""
        plan = self._check_proposal(proposal, None)
        for role in plan.workers:
            if role.backend != "codex":
                key = (
                    "dots.err.backend_unsupported"
                    if role.backend in self.providers
                    else "dots.err.backend_no_provider"
                )
                raise self._err(
                    key,
                    "proposal.workers.backend",
                    worker=repr(role.name),
                    backend=repr(role.backend),
                )
        unfinished = [r for r in self.runs.values() if r.state.status not in FINISHED]
        if len(unfinished) >= self.settings.max_runs:  # issue 26: a bounded host, asked nothing
            raise self._err(
                "dots.err.max_runs", "proposal", n=len(unfinished), max=self.settings.max_runs
            )
        await self.codex.binary()
        taken = self.owned_threads()
        heads: dict[str, tuple[HistoryTurn, ...]] = {}
        cwds: dict[str, str] = {}
        all_ids: dict[str, tuple[str, ...]] = {}
        for role in plan.workers:
            tid = role.existing_thread_id
            if tid is None:
                continue
            owner_run = taken.get(tid)
            if owner_run is not None:
                if (
                    owner_run.state.owner != owner
                ):  # DOT-15: another conversation's run id stays its own
                    raise self._err(
                        "dots.err.thread_owned_elsewhere",
                        "proposal.workers.existingThreadId",
                        worker=repr(role.name),
                        thread=tid,
                    )
                raise self._err(
                    "dots.err.thread_owned",
                    "proposal.workers.existingThreadId",
                    worker=repr(role.name),
                    thread=tid,
                    run=owner_run.run_id,
                )
            try:
                history = await self.codex.history(tid)
            except AppServerError as exc:
                raise self._err(
                    "dots.err.thread_unreadable",
                    "proposal.workers.existingThreadId",
                    worker=repr(role.name),
                    thread=tid,
                    detail=exc.message,
                ) from None
            if history.cwd is not None:
                cwds[tid] = history.cwd
            heads[role.name] = history.last(3)
            all_ids[role.name] = history.turn_ids
        plan = self._check_proposal(proposal, cwds)  # PLN-2: the thread's cwd is known now
        confirmations: list[Confirmation] = []
        columns = self.text_columns() if self.text_columns is not None else None
        for request in start_requests(plan, heads, self.settings, self.locale, columns):
            answer = await self.ask(request)
            confirmations.append(
                Confirmation(self.clock(), request.step, answer == "accept", request.title)
            )
            if answer != "accept":
                raise NotConfirmed(
                    msg("dots.err.not_confirmed_start", step=request.step, answer=answer).render(
                        self.locale
                    )
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
        run = self.create_run(state)
        try:
            for role in plan.workers:
                if role.existing_thread_id is not None:
                    ids = all_ids.get(role.name) or tuple(t.id for t in heads.get(role.name, ()))
                    self.submit(run, ThreadSeen(new_id(), role.name, ids), call=True)
            self.submit(run, StartRun(new_id()), call=True)
            return self._view(run)
        except DotsError as exc:
            raise self.abandon_run(run, exc) from None  # Rule 2: no run is left behind

    async def ask(self, request: ConfirmRequest) -> ConfirmAnswer:
        try:
            answer = await self.confirmer.confirm(request)
        except DotsError:
            raise
        except Exception as exc:
            raise NotConfirmed(
                msg("dots.err.cannot_ask", detail=summary(exc)).render(self.locale)
            ) from None
        return answer if answer in ("accept", "decline", "cancel") else "cancel"

    # ---- status and waiting ------------------------------------------------------------

    def status(self, *, owner: str, run_id: str | None = None) -> list[RunView]:
        """dots_status: one run or all of the caller's runs."""
        self._online(owner)
        runs = [self.run_of(owner, run_id)] if run_id is not None else self.owned(owner)
        self.durable()
        return [run_view(r.state, self.locale) for r in runs]

    def pending_decisions(self, *, owner: str) -> list[PendingDecision]:
        out: list[PendingDecision] = []
        for run in self.owned(owner):
            if run.state.status != "running":
                continue
            for role in run.state.roles:
                if role.status == "awaiting-decision" and role.decision_id:
                    out.append(
                        PendingDecision(
                            run.run_id, role.name, role.decision_id, head(role.last_reply)
                        )
                    )
        return out

    async def wait(self, *, owner: str, wait_ms: int, run_id: str | None = None) -> list[RunView]:
        """dots_status with `waitMs` (DOT-13): return at once when a worker of the
        caller's runs awaits a decision, else when a run changes state or the time is
        up."""
        deadline = time.monotonic() + min(max(0, wait_ms), MAX_WAIT_MS) / 1000.0
        before = {r.run_id: r.state.status for r in self.owned(owner)}
        if run_id is not None:
            self.run_of(owner, run_id)
        while not self.pending_decisions(owner=owner):
            if {r.run_id: r.state.status for r in self.owned(owner)} != before:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await self.changed(left)
        return self.status(owner=owner, run_id=run_id)

    def _online(self, owner: str) -> None:
        """The caller is back: notices that waited for it are due again (DOT-10)."""
        for run in self.owned(owner):
            stopped = run.journal.failed is not None  # nothing goes out for it (core Rule 6)
            if not stopped and any(n.waiting_for_host for n in run.state.outbox):
                self.submit(run, HostOnline(new_id()))

    # ---- decisions -----------------------------------------------------------------------

    def dispatch(
        self, *, owner: str, run_id: str, worker: str, instruction: str, decision_id: str
    ) -> RunView:
        """dots_dispatch (PLN-7): the next instruction, with the current decision id."""
        run = self.run_of(owner, run_id)
        self._text(instruction, "instruction")
        self._text(decision_id, "decisionId")
        self._text(worker, "worker")
        self._refuse(
            self.submit(run, Dispatch(new_id(), worker, decision_id, instruction), call=True), "decisionId"
        )
        return self._view(run)

    def finish(
        self,
        *,
        owner: str,
        run_id: str,
        conclusion: str,
        worker: str | None = None,
        decision_id: str | None = None,
    ) -> RunView:
        """dots_finish: a role's accepted conclusion (dependants become ready carrying
        it); without `worker`, the run completes (live turns are interrupted)."""
        run = self.run_of(owner, run_id)
        self._text(conclusion, "conclusion")
        if worker is None:
            for role in [r for r in run.state.roles if r.status == "awaiting-decision"]:
                step = self.submit(run, Finish(new_id(), role.name, conclusion, role.decision_id), call=True)
                self._refuse(step, "worker")
            if run.state.status not in FINISHED:
                self._refuse(self.submit(run, Cancel(new_id()), call=True), "runId")
                self.spawn(run, "ending workers", self.end_workers(run))
            return self._view(run)
        self._refuse(self.submit(run, Finish(new_id(), worker, conclusion, decision_id), call=True), "worker")
        return self._view(run)

    async def control(
        self, *, owner: str, run_id: str, action: str, budget: int | None = None
    ) -> RunView:
        """dots_control: pause (live turns end, then paused), resume (fresh decision
        ids), cancel (interrupt, end the processes), budget (a new maxTurns)."""
        if action == "budget" and budget is None:
            raise self._err("dots.err.budget_required", "budget")
        run = self.writable(self.run_of(owner, run_id))
        if action == "pause":
            self._refuse(self.submit(run, Pause(new_id()), call=True), "action")
        elif action == "resume":
            ids = tuple((name, new_id()) for name in decision_ids_needed(run.state))
            self._refuse(self.submit(run, Resume(new_id(), ids), call=True), "action")
            run.faulted.clear()  # the person saw the alert: its paths may run again
        elif action == "cancel":
            self._refuse(self.submit(run, Cancel(new_id()), call=True), "action")
            self.durable(run)
            try:
                await self.end_workers(run)
            except Exception as exc:  # the cancel stands; the failure is the run's alert
                self.run_fault(run, "ending workers", exc)
        elif action == "budget" and budget is not None:
            self._refuse_before_asking(budget_refusal(run.state, budget))
            if budget > run.state.turn_limit:
                request = budget_request(run_id, run.state.turn_limit, budget, self.locale)
                answer = await self.ask(request)
                if answer != "accept":
                    raise NotConfirmed(
                        msg("dots.err.not_confirmed_budget", answer=answer).render(self.locale),
                        "budget",
                    )
            self._refuse(self.submit(run, Budget(new_id(), budget), call=True), "budget")
        else:
            raise self._err(
                "dots.err.action", "action", actions=", ".join(ACTIONS), value=repr(action)
            )
        return self._view(run)

    async def tune(
        self, *, owner: str, run_id: str, worker: str, changes: Mapping[str, Any]
    ) -> RunView:
        """dots_tune: model / effort / timeoutMs / sandbox for the next turns; widening
        the sandbox, a model outside allowedModels or a longer timeout asks the user."""
        run = self.writable(self.run_of(owner, run_id))
        state = run.state
        spec = state.proposal.role(worker)
        current = state.role(worker)
        if spec is None or current is None:
            raise self._err("dots.err.no_worker", "worker", worker=repr(worker), run=run_id)
        model = changes.get("model")
        effort = changes.get("effort")
        timeout = changes.get("timeoutMs")
        sandbox = changes.get("sandbox")
        widen: list[str] = []
        if sandbox == "workspace-write" and (current.sandbox or spec.sandbox) == "read-only":
            widen.append(say(self.locale, "dots.confirm.widen_sandbox"))
        allow: tuple[str, ...] = ()
        if isinstance(model, str) and model != spec.model and model not in state.models_allowed:
            widen.append(say(self.locale, "dots.confirm.widen_model", model=model))
            allow = (model,)
        now_timeout = current.timeout_ms or state.proposal.timeout_ms
        if isinstance(timeout, int) and timeout > now_timeout:
            widen.append(
                say(self.locale, "dots.confirm.widen_timeout", old=now_timeout, new=timeout)
            )
        event = Tune(new_id(), worker, model, effort, timeout, sandbox, allow)
        self._refuse_before_asking(tune_refusal(state, event))  # Rule 4
        if widen:
            answer = await self.ask(tune_request(run_id, worker, widen, changes, self.locale))
            if answer != "accept":
                raise NotConfirmed(
                    msg("dots.err.not_confirmed_tune", answer=answer).render(self.locale),
                    "changes",
                )
        self._refuse(self.submit(run, event, call=True), "changes")
        self.log_raw(
            run, "tuning", {"worker": worker, "changes": dict(changes), "confirmed": bool(widen)}
        )
        return self._view(run)

    # ---- read-only -------------------------------------------------------------------------

    async def probe(self) -> ProbeView:
        """dots_probe: the default model and effort, rate-limit windows, credits."""
        return await self.codex.probe()

    async def threads(
        self,
        *,
        cwd: str | None = None,
        search: str | None = None,
        archived: bool | None = None,
        cursor: str | None = None,
        limit: int = 25,
    ) -> ThreadsView:
        """dots_threads: persistent threads by cwd / searchTerm / archived, paged."""
        return await self.codex.threads(
            cwd=cwd, search=search, archived=archived, cursor=cursor, limit=limit
        )

    async def thread_read(
        self, thread_id: str, *, limit: int = 5, cursor: str | None = None
    ) -> ThreadReadView:
        """dots_thread_read: recent history, newest last, framed as data (INJ-7) and
        marked untrusted."""
        return await self.codex.thread_read(thread_id, limit=limit, cursor=cursor)


def quota_windows(snapshot: Any) -> tuple[Any, ...]:
    """The windows of a rate-limit snapshot as PLN-8 sees them (remaining percent)."""
    from markertools_adapters.codex.answers import decode_rate_limits

    limits = decode_rate_limits(snapshot)
    return limits.windows() if limits is not None else ()
