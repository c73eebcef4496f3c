# Owns: launching one admitted role's turn on its Codex worker (DOT-3/5/12, PLN-5/7):
# the model/effort check against `model/list` before every turn of a role naming one,
# the re-read of a thread the supervisor does not hold (a turn it did not start pauses
# the run), the `Launch` event, then `thread/start|resume` and `turn/start` with the
# instruction and the predecessors' conclusions framed as data (INJ-7).
#
# Invariants:
#   Rule 1: nothing is sent to Codex before the `Launch` event is durable.
#   Rule 2: a launch that fails at any step pauses the run with an alert naming the
#           role; a turn that never started is recorded as ended `failed`.
#   Rule 3: a dependant's first instruction carries its predecessors' accepted
#           conclusions framed as data, never spliced in as instructions.
#   Rule 4: a thread Codex no longer has (issue 36: its CODEX_HOME was removed, e.g.
#           a temporary one) pauses the run with one alert saying so and the way
#           forward (`thread-gone`); resumed, the role starts a new thread given what
#           the run knows of it (its first instruction, its last reply, its
#           predecessors' conclusions), framed as data. Never a traceback.
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from markertools import Msg, frame_data, msg
from markertools.plans import Applied, Event, Launch, Step, TurnEnded, TurnStarted, launch_payload
from markertools_adapters.codex.answers import decode_model_list
from markertools_adapters.codex.client import AppServerError
from markertools_adapters.dots._inspect import summary
from markertools_adapters.dots._ports import DotsError
from markertools_adapters.dots._runslot import RunSlot, new_id
from markertools_adapters.dots._worker import CodexWorker
from markertools_adapters.errors import CodexError

if TYPE_CHECKING:
    from markertools_adapters.dots._inspect import CodexAccess

log = logging.getLogger("markertools.dots")


class LaunchHost(Protocol):
    """What launching a turn needs of the supervisor."""

    codex: CodexAccess
    locale: str

    def worker(self, run: RunSlot, role: str) -> CodexWorker: ...

    def submit(self, run: RunSlot, event: Event) -> Step: ...

    def halt(self, run: RunSlot, kind: str, detail: Msg, role: str | None) -> None: ...

    def durable(self, run: RunSlot | None = None) -> None: ...

    async def settled(self, run: RunSlot) -> None: ...

    def directory_taken(self, run: RunSlot, role: str) -> str | None: ...


async def launch_turn(core: LaunchHost, run: RunSlot, role: str) -> None:
    """Launch `role`'s next turn (the caller has admitted it and marked it launching)."""
    try:
        await core.codex.binary()
        worker = core.worker(run, role)
        state = run.state
        spec = state.proposal.role(role)
        current = state.role(role)
        if spec is None or current is None:
            return
        model = current.model or spec.model
        effort = current.effort or spec.effort
        if (model is not None or effort is not None) and not await _model_offered(
            core, run, worker, role, model, effort
        ):
            return
        thread = None if current.thread_gone else current.thread_id or spec.existing_thread_id
        # DOT-12: a taken-over thread is read again before every turn; a thread of our
        # own only when this process does not hold it (while it does, codex refuses any
        # other writer: "already has an active writer")
        check = spec.existing_thread_id is not None or worker.thread_id != thread
        try:
            if (
                thread is not None
                and check
                and not await _no_external_turn(core, run, worker, role, thread)
            ):
                return
        except AppServerError as exc:
            if not thread_gone(exc):
                raise
            core.halt(run, "thread-gone", gone_detail(role, thread or "?", exc), role)
            return
        step = core.submit(run, Launch(new_id(), role))
        if not isinstance(step.outcome, Applied):
            return
        payload = launch_payload(run.state, role)
        if payload is None:  # the launch paused the run (turn limit)
            return
        await core.settled(run)  # Rule 1 (waits out an outage; raises when the journal failed)
        taken = core.directory_taken(run, role)
        if taken is not None:  # DOT-6: the directory changed hands since admission
            detail = msg("plan.paused.directory_taken", role=role, cwd=payload.cwd, other=taken)
            core.halt(run, "launch-failed", detail, role)
            core.submit(run, TurnEnded(new_id(), role, new_id(), None, "failed", started=False))
            return
        text = instruction_text(core, payload.instruction, payload.inputs, payload.recap, role)
        try:
            thread_id = await worker.open_thread(
                cwd=payload.cwd,
                sandbox=payload.sandbox,
                model=payload.model,
                resume=payload.thread_id,
            )
            turn_id = await worker.start_turn(text, model=payload.model, effort=payload.effort)
        except Exception as exc:
            if isinstance(exc, AppServerError) and thread_gone(exc) and payload.thread_id:
                detail = gone_detail(role, payload.thread_id, exc)
                core.halt(run, "thread-gone", detail, role)
            else:
                detail = msg("plan.paused.launch_failed", role=role, detail=summary(exc))
                core.halt(run, "launch-failed", detail, role)
            core.submit(run, TurnEnded(new_id(), role, new_id(), None, "failed", started=False))
            return
        core.submit(run, TurnStarted(new_id(), role, thread_id, turn_id))
        worker.flush_early_end()
    except DotsError as exc:
        detail = msg("plan.paused.launch_failed", role=role, detail=exc.message)
        core.halt(run, "launch-failed", detail, role)
    except (CodexError, OSError) as exc:  # the backend failed: said by the alert alone
        log.info("launch of %s failed: %s", role, summary(exc))
        detail = msg("plan.paused.launch_failed", role=role, detail=summary(exc))
        core.halt(run, "launch-failed", detail, role)
    except Exception as exc:  # not the backend: logged with its traceback, and the alert
        log.error("launch of %s failed", role, exc_info=exc)
        detail = msg("plan.paused.launch_failed", role=role, detail=summary(exc))
        core.halt(run, "launch-failed", detail, role)


def instruction_text(
    core: LaunchHost,
    instruction: str,
    inputs: tuple[tuple[str, str], ...],
    recap: tuple[tuple[str, str], ...] = (),
    role: str = "",
) -> str:
    """Rule 3: the instruction, then each predecessor's conclusion as framed data; in
    the new thread of a role whose thread is gone (Rule 4), first a line saying so and
    what the run knows of its earlier turns, framed as data too."""
    parts = []
    if recap:
        parts.append(msg("plan.recap.intro", role=role).render(core.locale))
        for kind, text in recap:
            label = msg(f"plan.recap.{kind}", role=role)
            parts.append(frame_data(text, label, core.codex.random, core.locale).text)
    parts.append(instruction)
    for dep, conclusion in inputs:
        label = msg("plan.conclusion_of", role=dep)
        parts.append(frame_data(conclusion, label, core.codex.random, core.locale).text)
    return "\n\n".join(parts)


GONE_MESSAGES: tuple[str, ...] = ("thread not loaded", "no rollout found")


def thread_gone(exc: AppServerError) -> bool:
    """Codex answered that it has no such thread (`thread/read`: "thread not loaded",
    `thread/resume`: "no rollout found for thread id"): its CODEX_HOME no longer holds
    it (removed, or another home)."""
    text = exc.message.lower()
    return exc.code == -32600 and any(m in text for m in GONE_MESSAGES)


def gone_detail(role: str, thread: str, exc: AppServerError) -> Msg:
    """The alert of a gone thread: what happened and the way forward, one line."""
    said = " ".join(exc.message.split())[:200]
    return msg("plan.paused.thread_gone", role=role, thread=thread, detail=said)


async def _model_offered(
    core: LaunchHost,
    run: RunSlot,
    worker: CodexWorker,
    role: str,
    model: str | None,
    effort: str | None,
) -> bool:
    """DOT-5: `model/list` before every turn of a role naming a model or effort."""
    client = await worker.ensure()
    listing = decode_model_list(await client.model_list())
    chosen = listing.default()
    if model is not None:
        chosen = listing.find(model)
        if chosen is None:
            offered = ", ".join(listing.names) or "none"
            detail = msg("plan.paused.model", role=role, what="model", value=model, offered=offered)
            core.halt(run, "model", detail, role)
            return False
    if effort is not None:
        efforts = chosen.efforts if chosen is not None else ()
        if effort not in efforts:
            offered = ", ".join(efforts) or "none"
            detail = msg(
                "plan.paused.model", role=role, what="effort", value=effort, offered=offered
            )
            core.halt(run, "model", detail, role)
            return False
    return True


async def _no_external_turn(
    core: LaunchHost, run: RunSlot, worker: CodexWorker, role: str, thread: str
) -> bool:
    """DOT-12: before each turn on a thread, its turns are read again; one the
    supervisor does not know pauses the run."""
    from markertools_adapters.codex.answers import decode_thread

    client = await worker.ensure()
    history = decode_thread(await client.thread_read(thread, include_turns=True))
    current = run.state.role(role)
    known = set(current.known_turns if current is not None else ())
    unknown = [t for t in history.turn_ids if t not in known]
    if unknown:
        detail = msg("plan.paused.external_turn", role=role, thread=thread, turn=unknown[-1])
        core.halt(run, "external-turn", detail, role)
        return False
    return True
