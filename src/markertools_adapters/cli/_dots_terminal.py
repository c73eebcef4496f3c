# Owns: `dots run` at the terminal (DOT-13/14): the keyboard (a thread reading lines, so
# Ctrl-C never waits for Enter), the person as confirmer (`TerminalConfirmer`) and as
# decider (the prompt loop after each turn: next instruction, finish, pause, cancel;
# on a pause: resume, cancel, quit), taking back a run (`--resume`, or the offer of an
# unfinished run of the same plan). The loop acts only on its own run's state.
#
# Must never: approve anything on the person's behalf (a confirmation is "accept" only
# when they type yes), act on a notice of another run than the one at the prompt, or
# wait for a line after Ctrl-C. An answer counts only when it is one of the prompt's
# words exactly (`choose`: case and surrounding spaces aside); anything else is asked
# again, so no choice - a cancel least of all - comes from a typo.
from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import sys
import threading
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, Final

from markertools_adapters.cli._dots_text import one_line, status_lines
from markertools_adapters.dots import (
    ConfirmAnswer,
    ConfirmRequest,
    DotsError,
    NoticeOut,
    NotifyAnswer,
    RunNotFound,
    Supervisor,
)
from markertools_adapters.dots._views import FINISHED, DecisionView, RunView
from markertools_adapters.errors import MarkertoolsError

TERMINAL_OWNER: Final[str] = "terminal"  # the conversation id of the person at the terminal


class Keyboard:
    """The lines the person types. One daemon thread reads standard input's file
    descriptor and hands each line to the event loop, so a Ctrl-C never waits for a
    line: a read in asyncio's default executor would keep `asyncio.run` from
    returning until Enter was pressed."""

    def __init__(self, fd: int = 0) -> None:
        self._fd = fd
        self._lines: asyncio.Queue[str | None] | None = None

    async def ask(self, prompt: str) -> str:
        sys.stdout.write(prompt)
        sys.stdout.flush()
        if self._lines is None:
            self._lines = asyncio.Queue()
            loop = asyncio.get_running_loop()
            reader = threading.Thread(
                target=self._pump, args=(loop, self._lines), name="markertools-stdin", daemon=True
            )
            reader.start()
        line = await self._lines.get()
        if line is None:
            self._lines.put_nowait(None)  # closed stays closed for the next ask
            raise EOFError("standard input closed")
        return line

    def _pump(self, loop: asyncio.AbstractEventLoop, lines: asyncio.Queue[str | None]) -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(self._fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                if pending:
                    _hand_over(loop, lines, pending.decode("utf-8", "replace"))
                _hand_over(loop, lines, None)
                return
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                _hand_over(loop, lines, line.decode("utf-8", "replace").rstrip("\r"))


def _hand_over(
    loop: asyncio.AbstractEventLoop, lines: asyncio.Queue[str | None], line: str | None
) -> None:
    with contextlib.suppress(RuntimeError):  # the loop is closed: the command is over
        loop.call_soon_threadsafe(lines.put_nowait, line)


def accepted_answers(choices: dict[str, tuple[str, ...]]) -> str:
    """The accepted answers of a prompt, for the line that asks again:
    "n or next, f or finish, p or pause, c or cancel" (an empty word: Enter)."""
    return ", ".join(
        " or ".join(w if w else "Enter" for w in words) for words in choices.values()
    )


def shown_answer(answer: str) -> str:
    """What the person typed, quoted on one line (at most 40 characters, escaped)."""
    return '"' + one_line(answer, 40) + '"'


async def choose(keyboard: Keyboard, prompt: str, choices: dict[str, tuple[str, ...]]) -> str:
    """Ask `prompt` until the answer is one of `choices`' words (case-insensitive,
    surrounding spaces ignored) and return its key. Anything else - a typo, a sentence
    that merely starts with a letter of a choice - is asked again, naming the accepted
    answers: no choice, least of all a destructive one, comes from a near miss."""
    words = {w: key for key, ws in choices.items() for w in ws}
    while True:
        answer = (await keyboard.ask(prompt)).strip().lower()
        if answer in words:
            return words[answer]
        sys.stdout.write(
            f"{shown_answer(answer)} is not one of the answers; "
            f"answer {accepted_answers(choices)}\n"
        )


DECISION_CHOICES: Final[dict[str, tuple[str, ...]]] = {
    "next": ("n", "next"),
    "finish": ("f", "finish"),
    "pause": ("p", "pause"),
    "cancel": ("c", "cancel"),
}
PAUSED_CHOICES: Final[dict[str, tuple[str, ...]]] = {
    "resume": ("r", "resume"),
    "cancel": ("c", "cancel"),
    "quit": ("q", "quit"),
}
OFFER_CHOICES: Final[dict[str, tuple[str, ...]]] = {
    "resume": ("r", "resume"),
    "new": ("n", "new"),
    "quit": ("q", "quit"),
}
CONFIRM_CHOICES: Final[dict[str, tuple[str, ...]]] = {
    "accept": ("y", "yes"),
    "decline": ("", "n", "no"),  # [y/N]: Enter is no
}


class TerminalConfirmer:
    """Shows what is to be confirmed and asks yes/no on the terminal (DOT-14)."""

    def __init__(self, keyboard: Keyboard) -> None:
        self.keyboard = keyboard

    async def confirm(self, request: ConfirmRequest) -> ConfirmAnswer:
        sys.stdout.write(f"\n== {request.title}\n{request.text}\n")
        sys.stdout.flush()
        choice = await choose(self.keyboard, "Confirm? [y/N] ", CONFIRM_CHOICES)
        return "accept" if choice == "accept" else "decline"


class QueueNotifier:
    """Hands the terminal's notices to the terminal loop, where they only wake the live
    view (the loop acts on its own run's state, never on a notice of another run). A
    notice of another conversation's run (one `dots serve` started in the same state
    directory) is not the person's: answered offline, it waits for that conversation
    (DOT-10)."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[NoticeOut] = asyncio.Queue()

    async def notify(self, notice: NoticeOut) -> NotifyAnswer:
        if notice.owner != TERMINAL_OWNER:
            return "offline"
        await self.queue.put(notice)
        return "delivered"


def own(sup: Supervisor, run_id: str) -> RunView:
    (view,) = sup.status(owner=TERMINAL_OWNER, run_id=run_id)
    return view


def _next_decision(view: RunView, answered: set[str]) -> tuple[str, DecisionView] | None:
    for w in view.workers:
        if view.state == "running" and w.decision and w.decision.id not in answered:
            return w.name, w.decision
    return None


def _needs_person(view: RunView, answered: set[str]) -> bool:
    return view.finished or view.state == "paused" or _next_decision(view, answered) is not None


async def terminal_loop(
    sup: Supervisor, notifier: QueueNotifier, keyboard: Keyboard, run_id: str
) -> RunView:
    """Show the run and ask the person whenever its own state needs them: a worker's
    decision (next instruction, finish, pause, cancel) or a pause (resume, cancel,
    quit). Notices only wake the view: one of another run (the restart notice of an
    old run) is never acted on."""
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    console = Console(highlight=False)
    answered: set[str] = set()  # decisions answered (their ids are never reused)
    shown: str | None = None  # the decision whose reply was printed last
    while True:
        view = own(sup, run_id)
        if view.finished:
            return view
        if view.state == "paused":
            reason = view.pause_detail or view.pause_reason or "not recorded"
            console.print(Text(f"\nrun paused: {one_line(reason)}", style="bold"))
            choice = await choose(
                keyboard, "[r]esume, [c]ancel or [q]uit (the run stays paused)? ", PAUSED_CHOICES
            )
            if choice == "quit":
                return own(sup, run_id)
            await _call(partial(sup.control, owner=TERMINAL_OWNER, run_id=run_id, action=choice))
            continue
        pending = _next_decision(view, answered)
        if pending is not None:
            role, decision = pending
            if shown != decision.id:
                shown = decision.id
                name = one_line(role, 60)
                header = f"\nworker {name} awaits a decision (decisionId {one_line(decision.id)})"
                console.print(Text(header, style="bold"))
                reply = one_line(decision.reply_head) if decision.reply_head else "(no reply)"
                console.print(Text(f"reply of {name}: {reply}"))
            if await _decide(sup, keyboard, run_id, role, decision.id):
                answered.add(decision.id)
            continue
        with Live(
            Text("\n".join(status_lines(view))),
            console=console,
            refresh_per_second=4,
            transient=True,
        ) as live:
            while not _needs_person(view, answered):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(notifier.queue.get(), 0.25)  # a wake-up only
                view = own(sup, run_id)
                live.update(Text("\n".join(status_lines(view))))


async def _decide(
    sup: Supervisor, keyboard: Keyboard, run_id: str, role: str, decision_id: str
) -> bool:
    """One answer to a decision prompt; False when it must be asked again."""
    choice = await choose(
        keyboard, "[n]ext instruction, [f]inish with a conclusion, [p]ause, [c]ancel? ",
        DECISION_CHOICES,
    )
    if choice in ("next", "finish"):
        label, method = (
            ("instruction", sup.dispatch) if choice == "next" else ("conclusion", sup.finish)
        )
        text = await keyboard.ask(f"{label}: ")
        args = {label: text, "worker": role, "decision_id": decision_id}
        return await _call(partial(method, owner=TERMINAL_OWNER, run_id=run_id, **args))
    return await _call(partial(sup.control, owner=TERMINAL_OWNER, run_id=run_id, action=choice))


async def _call(call: Any) -> bool:
    """Run a supervisor call (awaiting it when it is async); a refusal is printed and
    False returned."""
    try:
        result = call()
        if asyncio.iscoroutine(result):
            await result
    except DotsError as exc:
        sys.stdout.write(f"refused: {exc.message}\n")
        return False
    return True


class NotResumable(MarkertoolsError):
    """`--resume RUN` names no unfinished run of the terminal (exit 2, one line)."""


WRAPPED_BY: Final[str] = "MARKERTOOLS_WRAPPED_BY"  # set by the fake-model wrapper (shell words)


def this_program() -> list[str]:
    """How this `markertools` was started, as words a shell runs again: the console
    script by name when PATH finds this one, else by its path; `python -m markertools`
    as such."""
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0.endswith("__main__.py"):
        return [sys.executable, "-m", "markertools"]
    if os.path.basename(argv0) == "markertools":
        found = shutil.which("markertools")
        with contextlib.suppress(OSError):
            if found is not None and os.path.samefile(found, argv0):
                return ["markertools"]
        return [os.path.abspath(argv0)]
    return ["markertools"]


def resume_hint(run_id: str, root: Path, options: Sequence[str] = ()) -> str:
    """The whole command that takes run `run_id` back (issue 36): the wrapper it ran
    under (`MARKERTOOLS_WRAPPED_BY`, the fake-model wrapper with its kept CODEX_HOME),
    this program, `--resume`, the state directory and every option the run needs
    (`options`: `--codex-bin`, host settings that differ from their defaults), all
    shell-quoted: copied to a shell, it runs the run again as it ran."""
    wrapper = os.environ.get(WRAPPED_BY, "")
    try:
        prefix = shlex.split(wrapper)
    except ValueError:
        prefix = []
    words = [*prefix, *this_program(), "dots", "run", "--resume", run_id]
    words += ["--state-dir", str(root.absolute()), *options]
    return shlex.join(words)


async def reattach(sup: Supervisor, run_id: str) -> str:
    """Take back a run of the terminal: resumed when paused, as it is when running."""
    try:
        view = own(sup, run_id)
    except RunNotFound:
        raise NotResumable(
            f"--resume: no run {run_id!r} started by `dots run` in {sup.root}"
        ) from None
    if view.finished:
        raise NotResumable(f"--resume: run {run_id} is {view.state}; nothing to resume")
    if view.state == "paused":
        sys.stdout.write(f"resuming run {run_id}\n")
        await _call(partial(sup.control, owner=TERMINAL_OWNER, run_id=run_id, action="resume"))
    return run_id


async def offer_unfinished(
    sup: Supervisor, keyboard: Keyboard, raw: Any, options: Sequence[str] = ()
) -> str | None:
    """Before starting PLAN again: an unfinished run of the terminal for the same
    proposal is offered first. Returns the run to take back, "" to quit, None to
    start a new run."""
    from markertools.plans import validate_proposal

    proposal = validate_proposal(raw).proposal
    if proposal is None:
        return None  # the start refuses it, naming every issue
    same = [
        r.state
        for r in sup.runs.values()
        if r.state.owner == TERMINAL_OWNER
        and r.state.status not in FINISHED
        and r.state.proposal == proposal
    ]
    if not same:
        return None
    state = max(same, key=lambda s: s.updated_at)
    run_id = state.run_id
    sys.stdout.write(
        f"this plan already has an unfinished run in {sup.root}:\n"
        + "\n".join(status_lines(own(sup, run_id)))
        + f"\n(next time, take it back directly with: {resume_hint(run_id, sup.root, options)})\n"
    )
    try:
        choice = await choose(
            keyboard, f"[r]esume run {run_id}, start a [n]ew run, or [q]uit? ", OFFER_CHOICES
        )
    except EOFError:
        return ""
    return run_id if choice == "resume" else None if choice == "new" else ""
