# Owns: `markertools dots run | status | threads | probe` (docs/cli.md, DOT-13): the
# supervisor in the foreground with the person at the terminal as decider and
# confirmer (`dots run PLAN.json`, or `--resume RUN` to take back a run it started),
# the status lines of a run (`dots status`, the live view, the final print), and
# inspection of a state directory. Also the host options every `dots` command shares
# (`host_settings`, `make_supervisor`), which `dots serve` uses too.
#
# Must never: approve anything on the person's behalf (a confirmation is "accept" only
# when they type yes), act on a notice of another run than the one at the prompt,
# leave a child process behind, wait for a line after Ctrl-C, or print a traceback.
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
import time
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Final

import typer

from markertools.plans import HostSettings, validate_host_settings
from markertools_adapters.cli._app import dots_app, fail
from markertools_adapters.cli._io import emit_json
from markertools_adapters.dots import (
    ConfirmAnswer,
    ConfirmRequest,
    DotsError,
    NoticeOut,
    NotifyAnswer,
    ProposalInvalid,
    RunNotFound,
    Supervisor,
    default_state_dir,
)
from markertools_adapters.errors import MarkertoolsError

TERMINAL_OWNER = "terminal"  # the conversation id of the person at the terminal

StateDir = Annotated[
    Path | None,
    typer.Option(
        "--state-dir", help="the supervisor's state directory (default: per-user state path)"
    ),
]
CodexBin = Annotated[
    str | None, typer.Option("--codex-bin", help="path of the codex executable (default: PATH)")
]
MaxConcurrent = Annotated[
    int, typer.Option("--max-concurrent", help="turns at once on this host, 1 to 3")
]
PollMs = Annotated[int, typer.Option("--poll-ms", help="quota check interval in ms, at least 1000")]


def host_settings(max_concurrent: int, poll_ms: int) -> HostSettings:
    """PLN-10 settings from the options, or a usage error naming the option."""
    check = validate_host_settings({"maxConcurrent": max_concurrent, "pollMs": poll_ms})
    if check.settings is None:
        issue = check.issues[0]
        option = "--max-concurrent" if "maxConcurrent" in issue.path else "--poll-ms"
        fail(f"{option}: {issue.message.render('en')}")
    return check.settings


def make_supervisor(
    state_dir: Path | None,
    codex_bin: str | None,
    max_concurrent: int,
    poll_ms: int,
    **kw: Any,
) -> Supervisor:
    return Supervisor(
        state_dir or default_state_dir(),
        settings=host_settings(max_concurrent, poll_ms),
        codex_bin=codex_bin,
        **kw,
    )


# ---- dots run: the terminal as confirmer and decider ---------------------------------

FINISHED: Final[tuple[str, ...]] = ("completed", "cancelled")
ALERTS_SHOWN: Final[int] = 3  # the newest alerts a status shows, one line each


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


class TerminalConfirmer:
    """Shows what is to be confirmed and asks yes/no on the terminal (DOT-14)."""

    def __init__(self, keyboard: Keyboard) -> None:
        self.keyboard = keyboard

    async def confirm(self, request: ConfirmRequest) -> ConfirmAnswer:
        sys.stdout.write(f"\n== {request.title}\n{request.text}\n")
        sys.stdout.flush()
        answer = await self.keyboard.ask("Confirm? [y/N] ")
        return "accept" if answer.strip().lower() in ("y", "yes") else "decline"


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


def _one_line(text: object, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _clock(at: float, now: float) -> str:
    """A time of this run for a person: the time of day today, else date and time."""
    when, today = time.localtime(at), time.localtime(now)
    same_day = when[:3] == today[:3]
    return time.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M", when)


def _window(w: dict[str, Any]) -> str:
    text = f"{w['leftPercent']:.0f}% left"
    if w.get("windowMinutes") is not None:
        text += f" of the {w['windowMinutes']}-min window"
    return text + (f" (bucket {w['bucket']})" if w.get("bucket") else "")


def _quota_line(quota: dict[str, Any], now: float) -> str:
    """The quota as a person reads it: "unknown" whenever the window the plan watches
    was not reported, with what the last report did hold and since when."""
    seen = ", ".join(_window(w) for w in quota["windows"])
    if quota["unknown"]:
        watch = quota.get("watch") or {}
        minutes = watch.get("windowMinutes")
        what = ", ".join(
            p
            for p in (
                f"bucket {watch['bucket']}" if watch.get("bucket") else None,
                f"{minutes}-min window" if minutes else None,
            )
            if p
        )
        since = quota.get("unknownSince")
        text = "unknown" + (f" since {_clock(since, now)}" if since is not None else "")
        text += f": the window the plan watches{f' ({what})' if what else ''} was not reported"
        return text + (f"; the last report had {seen}" if seen else "; nothing reported yet")
    if not seen:
        return "not reported yet"
    stop = quota.get("stopAtLeftPercent")
    return seen + (f"; the run pauses at {stop:g}% left" if stop is not None else "")


def _status_lines(view: dict[str, Any], now: float | None = None) -> list[str]:
    """A run as text: `dots status`, the live view of `dots run` and its final print."""
    now = time.time() if now is None else now
    out = [f"run {view['runId']}: {view['state']} ({view['turnsUsed']}/{view['maxTurns']} turns)"]
    if view["state"] == "paused":
        reason = view.get("pauseDetail") or view.get("pauseReason") or "not recorded"
        out.append(f"  paused: {_one_line(reason)}")
    out.append(f"  quota: {_quota_line(view['quota'], now)}")
    out.append(f"  notices pending: {view.get('pendingNotices', 0)}")
    finished = view["state"] in FINISHED
    for w in view["workers"]:
        state = w["state"]
        if finished and state != "completed":
            state = f"not finished (run {view['state']})"
        reply = _one_line(w.get("lastReplyHead") or "", 200)
        out.append(f"  {w['name']:<12} {state:<18} turns {w['turns']:<3} {reply}".rstrip())
    for alert in (view.get("alerts") or [])[-ALERTS_SHOWN:]:
        out.append(f"  alert {_clock(alert['at'], now)}: {_one_line(alert['message'])}")
    return out


def _own(sup: Supervisor, run_id: str) -> dict[str, Any]:
    (view,) = sup.status(owner=TERMINAL_OWNER, run_id=run_id)
    return view


def _next_decision(view: dict[str, Any], answered: set[str]) -> tuple[str, dict[str, Any]] | None:
    for w in view["workers"]:
        decision = w.get("decision")
        if view["state"] == "running" and decision and decision["id"] not in answered:
            return w["name"], decision
    return None


def _needs_person(view: dict[str, Any], answered: set[str]) -> bool:
    return view["state"] in (*FINISHED, "paused") or _next_decision(view, answered) is not None


async def _terminal_loop(
    sup: Supervisor, notifier: QueueNotifier, keyboard: Keyboard, run_id: str
) -> dict[str, Any]:
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
        view = _own(sup, run_id)
        if view["state"] in FINISHED:
            return view
        if view["state"] == "paused":
            reason = view.get("pauseDetail") or view.get("pauseReason") or "not recorded"
            console.print(Text(f"\nrun paused: {_one_line(reason)}", style="bold"))
            answer = await keyboard.ask("[r]esume, [c]ancel or [q]uit (the run stays paused)? ")
            choice = answer.strip().lower()[:1]
            if choice == "q":
                return _own(sup, run_id)
            if choice in ("r", "c"):
                action = "resume" if choice == "r" else "cancel"
                await _call(
                    partial(sup.control, owner=TERMINAL_OWNER, run_id=run_id, action=action)
                )
            continue
        pending = _next_decision(view, answered)
        if pending is not None:
            role, decision = pending
            if shown != decision["id"]:
                shown = decision["id"]
                header = f"\nworker {role} awaits a decision (decisionId {decision['id']})"
                console.print(Text(header, style="bold"))
                console.print(Text(f"reply of {role}: {decision.get('replyHead') or '(no reply)'}"))
            if await _decide(sup, keyboard, run_id, role, decision["id"]):
                answered.add(decision["id"])
            continue
        with Live(
            Text("\n".join(_status_lines(view))),
            console=console,
            refresh_per_second=4,
            transient=True,
        ) as live:
            while not _needs_person(view, answered):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(notifier.queue.get(), 0.25)  # a wake-up only
                view = _own(sup, run_id)
                live.update(Text("\n".join(_status_lines(view))))


async def _decide(
    sup: Supervisor, keyboard: Keyboard, run_id: str, role: str, decision_id: str
) -> bool:
    """One answer to a decision prompt; False when it must be asked again."""
    answer = await keyboard.ask(
        "[n]ext instruction, [f]inish with a conclusion, [p]ause, [c]ancel? "
    )
    choice = answer.strip().lower()[:1]
    if choice in ("n", "f"):
        label, method = (
            ("instruction", sup.dispatch) if choice == "n" else ("conclusion", sup.finish)
        )
        text = await keyboard.ask(f"{label}: ")
        args = {label: text, "worker": role, "decision_id": decision_id}
        return await _call(partial(method, owner=TERMINAL_OWNER, run_id=run_id, **args))
    if choice in ("p", "c"):
        action = "pause" if choice == "p" else "cancel"
        return await _call(partial(sup.control, owner=TERMINAL_OWNER, run_id=run_id, action=action))
    return False


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


def resume_hint(run_id: str, root: Path) -> str:
    return f"markertools dots run --resume {run_id} --state-dir {root}"


async def _reattach(sup: Supervisor, run_id: str) -> str:
    """Take back a run of the terminal: resumed when paused, as it is when running."""
    try:
        view = _own(sup, run_id)
    except RunNotFound:
        raise NotResumable(
            f"--resume: no run {run_id!r} started by `dots run` in {sup.root}"
        ) from None
    if view["state"] in FINISHED:
        raise NotResumable(f"--resume: run {run_id} is {view['state']}; nothing to resume")
    if view["state"] == "paused":
        sys.stdout.write(f"resuming run {run_id}\n")
        await _call(partial(sup.control, owner=TERMINAL_OWNER, run_id=run_id, action="resume"))
    return run_id


async def _offer_unfinished(sup: Supervisor, keyboard: Keyboard, raw: Any) -> str | None:
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
        + "\n".join(_status_lines(_own(sup, run_id)))
        + f"\n(next time, take it back directly with: {resume_hint(run_id, sup.root)})\n"
    )
    while True:
        try:
            answer = await keyboard.ask(
                f"[r]esume run {run_id}, start a [n]ew run, or [q]uit? "
            )
        except EOFError:
            return ""
        choice = answer.strip().lower()[:1]
        if choice == "r":
            return run_id
        if choice == "n":
            return None
        if choice == "q":
            return ""


@dots_app.command("run")
def run_cmd(
    plan: Annotated[
        Path | None,
        typer.Argument(
            metavar="PLAN.json",
            help="the proposal (JSON file); not with --resume",
            show_default=False,
        ),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            metavar="RUN",
            help="take back a paused run `dots run` started (instead of PLAN.json)",
        ),
    ] = None,
    state_dir: StateDir = None,
    codex_bin: CodexBin = None,
    max_concurrent: MaxConcurrent = 3,
    poll_ms: PollMs = 30_000,
    as_json: Annotated[bool, typer.Option("--json", help="print the final status as JSON")] = False,
) -> None:
    """Run a plan in the foreground: two confirmations, then a live view and, after
    each turn, a prompt (next instruction, finish, pause, cancel). Ctrl-C pauses;
    `--resume RUN` takes a paused run back."""
    if plan is not None and resume is not None:
        fail("--resume: give either PLAN.json or --resume RUN, not both")
    if plan is None and resume is None:
        fail("give PLAN.json to start a run, or --resume RUN to take back a paused one")
    raw: Any = None
    if plan is not None:
        try:
            raw = json.loads(plan.read_text(encoding="utf-8"))
        except OSError as exc:
            fail(f"{plan}: cannot read: {exc.strerror or exc}")
        except ValueError as exc:
            fail(f"{plan}: not JSON: {exc}")
    elif not (resume or "").strip():
        fail("--resume: must be a run id")
    keyboard = Keyboard()
    notifier = QueueNotifier()
    sup = make_supervisor(
        state_dir,
        codex_bin,
        max_concurrent,
        poll_ms,
        confirmer=TerminalConfirmer(keyboard),
        notifier=notifier,
    )
    code = asyncio.run(_run_foreground(sup, notifier, keyboard, raw, resume, as_json))
    raise typer.Exit(code)


async def _run_foreground(
    sup: Supervisor,
    notifier: QueueNotifier,
    keyboard: Keyboard,
    raw: Any,
    resume: str | None,
    as_json: bool,
) -> int:
    try:
        await sup.open()
    except DotsError as exc:
        fail(exc.message)
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    interrupted = False

    def on_sigint() -> None:
        nonlocal interrupted
        if not interrupted and main is not None:  # a second Ctrl-C: the pause is underway
            main.cancel()
        interrupted = True

    loop.add_signal_handler(signal.SIGINT, on_sigint)
    run_id: str | None = None
    try:
        try:
            if resume is not None:
                run_id = await _reattach(sup, resume)
            else:
                offered = await _offer_unfinished(sup, keyboard, raw)
                if offered == "":
                    return 0
                if offered is not None:
                    run_id = await _reattach(sup, offered)
                else:
                    run_id = (await sup.start(raw, owner=TERMINAL_OWNER))["runId"]
        except NotResumable as exc:
            sys.stderr.write(f"markertools: {exc}\n")
            return 2
        except ProposalInvalid as exc:
            for path, message in exc.issues:
                sys.stderr.write(f"markertools: {path}: {message}\n")
            return 1
        except DotsError as exc:
            sys.stderr.write(f"markertools: {exc.message}\n")
            return 1
        final = await _terminal_loop(sup, notifier, keyboard, run_id)
        if final["state"] == "paused":
            hint = resume_hint(run_id, sup.root)
            sys.stdout.write(f"run {run_id} stays paused; resume it with: {hint}\n")
    except (asyncio.CancelledError, EOFError):
        if run_id is None:
            if interrupted:
                sys.stdout.write("\ninterrupted; no run was started or resumed\n")
            return 130 if interrupted else 1
        with contextlib.suppress(DotsError):
            await sup.control(owner=TERMINAL_OWNER, run_id=run_id, action="pause")
        final = _own(sup, run_id)
        if final["state"] not in FINISHED:
            sys.stdout.write(
                f"\npaused run {run_id}; resume it with: {resume_hint(run_id, sup.root)}\n"
            )
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await sup.close()
    if as_json:
        emit_json(final)
    else:
        sys.stdout.write("\n".join(_status_lines(final)) + "\n")
    return 130 if interrupted else 0


# ---- inspection -------------------------------------------------------------------


@dots_app.command("status")
def status_cmd(
    run: Annotated[
        str | None, typer.Argument(metavar="RUN", help="a run id (default: every run)")
    ] = None,
    state_dir: StateDir = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Print the runs of a state directory (read-only: works while a supervisor runs,
    and creates nothing: a directory not made yet has no runs)."""
    from markertools_adapters.dots._views import run_view
    from markertools_adapters.planstore import PlanStore, PlanStoreError

    root = Path(state_dir or default_state_dir()).expanduser()
    if not root.is_dir():
        if root.exists():
            fail(f"{root}: not a directory")
        if run is not None:
            fail(f"no run {run!r} in {root} (the directory does not exist)")
        if as_json:
            emit_json({"runs": []})
        else:
            sys.stdout.write(f"no runs in {root} (the directory does not exist yet)\n")
        return
    store = PlanStore(root)
    try:
        ids = [run] if run is not None else store.run_ids()
        views = [run_view(store.load(i)) for i in ids]
    except (PlanStoreError, ValueError) as exc:  # ValueError: not a run id at all
        fail(str(exc))
    if as_json:
        emit_json({"runs": views})
        return
    if not views:
        sys.stdout.write(f"no runs in {root}\n")
    for view in views:
        sys.stdout.write("\n".join(_status_lines(view)) + "\n")


@dots_app.command("probe")
def probe_cmd(
    state_dir: StateDir = None,
    codex_bin: CodexBin = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """The backend's default model and effort, rate-limit windows and credits."""
    result = _inspect(state_dir, codex_bin, lambda sup: sup.probe())
    if as_json:
        emit_json(result)
        return
    sys.stdout.write(f"model: {result['model']} (effort {result['effort']})\n")
    limits = result["rateLimits"]
    windows = ", ".join(
        f"{w['left_percent']:.0f}% left of {w['window_minutes']} min" for w in limits["windows"]
    )
    sys.stdout.write(f"rate limits ({limits['source']}): {windows or 'none reported'}\n")


@dots_app.command("threads")
def threads_cmd(
    cwd: Annotated[str | None, typer.Option("--cwd", help="only threads of this directory")] = None,
    search: Annotated[str | None, typer.Option("--search", help="search term")] = None,
    state_dir: StateDir = None,
    codex_bin: CodexBin = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Persistent Codex threads on this machine, grouped by project directory."""
    result = _inspect(state_dir, codex_bin, lambda sup: sup.threads(cwd=cwd, search=search))
    if as_json:
        emit_json(result)
        return
    for t in result["threads"]:
        sys.stdout.write(f"{t['threadId']}  {t['cwd']}  {t['preview'] or ''}\n")


def _inspect(state_dir: Path | None, codex_bin: str | None, call: Any) -> Any:
    async def go() -> Any:
        # read-only: no host lock is taken, so this works beside a running supervisor
        sup = Supervisor(state_dir or default_state_dir(), codex_bin=codex_bin)
        try:
            return await call(sup)
        finally:
            await sup.close()

    try:
        return asyncio.run(go())
    except DotsError as exc:
        fail(exc.message)
