# Owns: `markertools dots run | status | threads | probe` (docs/cli.md, DOT-13): the
# supervisor in the foreground with the person at the terminal as decider and
# confirmer, and inspection of a state directory. Also the host options every `dots`
# command shares (`host_options`, `make_supervisor`), which `dots serve` uses too.
#
# Must never: approve anything on the person's behalf (a confirmation is "accept" only
# when they type yes), leave a child process behind, or print a traceback.
from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer

from markertools.plans import HostSettings, validate_host_settings
from markertools_adapters.cli._app import dots_app, emit_json, fail
from markertools_adapters.dots import (
    ConfirmAnswer,
    ConfirmRequest,
    DotsError,
    NoticeOut,
    NotifyAnswer,
    ProposalInvalid,
    Supervisor,
    default_state_dir,
)

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


class TerminalConfirmer:
    """Shows what is to be confirmed and asks yes/no on the terminal (DOT-14)."""

    async def confirm(self, request: ConfirmRequest) -> ConfirmAnswer:
        sys.stdout.write(f"\n== {request.title}\n{request.text}\n")
        sys.stdout.flush()
        answer = await asyncio.to_thread(_ask_line, "Confirm? [y/N] ")
        return "accept" if answer.strip().lower() in ("y", "yes") else "decline"


class QueueNotifier:
    """Hands every notice to the terminal loop (always delivered: the person is here)."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[NoticeOut] = asyncio.Queue()

    async def notify(self, notice: NoticeOut) -> NotifyAnswer:
        await self.queue.put(notice)
        return "delivered"


def _ask_line(prompt: str) -> str:
    sys.stdout.write(prompt)
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError("standard input closed")
    return line.rstrip("\n")


def _status_lines(view: dict[str, Any]) -> list[str]:
    out = [f"run {view['runId']}: {view['state']} ({view['turnsUsed']}/{view['maxTurns']} turns)"]
    windows = view["quota"]["windows"]
    quota = (
        ", ".join(f"{w['leftPercent']:.0f}% left" for w in windows)
        if windows
        else ("unknown" if view["quota"]["unknown"] else "not reported")
    )
    out.append(f"  quota: {quota}")
    for w in view["workers"]:
        reply = w.get("lastReplyHead") or ""
        out.append(f"  {w['name']:<12} {w['state']:<18} turns {w['turns']:<3} {reply}")
    return out


async def _terminal_loop(sup: Supervisor, notifier: QueueNotifier, run_id: str) -> dict[str, Any]:
    """Show the run and, after each turn, ask: next instruction, finish, pause, cancel."""
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    console = Console()

    def render() -> Text:
        (view,) = sup.status(owner=TERMINAL_OWNER, run_id=run_id)
        return Text("\n".join(_status_lines(view)))

    while True:
        (view,) = sup.status(owner=TERMINAL_OWNER, run_id=run_id)
        if view["state"] in ("completed", "cancelled"):
            return view
        with Live(render(), console=console, refresh_per_second=4, transient=True) as live:
            notice: NoticeOut | None = None
            while notice is None:
                with contextlib.suppress(TimeoutError):
                    notice = await asyncio.wait_for(notifier.queue.get(), 0.25)
                live.update(render())
                (view,) = sup.status(owner=TERMINAL_OWNER, run_id=run_id)
                if view["state"] in ("completed", "cancelled"):
                    break
        if notice is None:
            continue
        console.print(f"\n[bold]{notice.text}[/bold]")
        if notice.kind == "paused":
            answer = await asyncio.to_thread(
                _ask_line, "[r]esume, [c]ancel or [q]uit (the run stays paused)? "
            )
            choice = answer.strip().lower()[:1]
            if choice in ("r", "c"):
                action = "resume" if choice == "r" else "cancel"
                await _call(
                    partial(sup.control, owner=TERMINAL_OWNER, run_id=run_id, action=action)
                )
            else:
                return sup.status(owner=TERMINAL_OWNER, run_id=run_id)[0]
            continue
        if notice.kind not in ("decision", "reminder") or notice.decision_id is None:
            continue
        (view,) = sup.status(owner=TERMINAL_OWNER, run_id=run_id)
        current = next((w for w in view["workers"] if w["name"] == notice.role), None)
        if current is None or (current.get("decision") or {}).get("id") != notice.decision_id:
            continue  # stale: a newer notice follows
        console.print(f"reply of {notice.role}: {notice.reply_head or '(no reply)'}")
        assert notice.role is not None
        while not await _decide(sup, run_id, notice.role, notice.decision_id):
            pass  # refused or unknown: ask again for the same decision


async def _decide(sup: Supervisor, run_id: str, role: str, decision_id: str) -> bool:
    """One answer to a decision prompt; False when it must be asked again."""
    answer = await asyncio.to_thread(
        _ask_line, "[n]ext instruction, [f]inish with a conclusion, [p]ause, [c]ancel? "
    )
    choice = answer.strip().lower()[:1]
    if choice in ("n", "f"):
        label, method = (
            ("instruction", sup.dispatch) if choice == "n" else ("conclusion", sup.finish)
        )
        text = await asyncio.to_thread(_ask_line, f"{label}: ")
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


@dots_app.command("run")
def run_cmd(
    plan: Annotated[Path, typer.Argument(help="the proposal (JSON file)")],
    state_dir: StateDir = None,
    codex_bin: CodexBin = None,
    max_concurrent: MaxConcurrent = 3,
    poll_ms: PollMs = 30_000,
    as_json: Annotated[bool, typer.Option("--json", help="print the final status as JSON")] = False,
) -> None:
    """Run a plan in the foreground: two confirmations, then a live view and, after
    each turn, a prompt (next instruction, finish, pause, cancel). Ctrl-C pauses."""
    try:
        raw = json.loads(plan.read_text(encoding="utf-8"))
    except OSError as exc:
        fail(f"{plan}: cannot read: {exc.strerror or exc}")
    except ValueError as exc:
        fail(f"{plan}: not JSON: {exc}")
    notifier = QueueNotifier()
    sup = make_supervisor(
        state_dir,
        codex_bin,
        max_concurrent,
        poll_ms,
        confirmer=TerminalConfirmer(),
        notifier=notifier,
    )
    code = asyncio.run(_run_foreground(sup, notifier, raw, as_json))
    raise typer.Exit(code)


async def _run_foreground(sup: Supervisor, notifier: QueueNotifier, raw: Any, as_json: bool) -> int:
    try:
        await sup.open()
    except DotsError as exc:
        fail(exc.message)
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    interrupted = False

    def on_sigint() -> None:
        nonlocal interrupted
        interrupted = True
        if main is not None:
            main.cancel()

    loop.add_signal_handler(signal.SIGINT, on_sigint)
    run_id: str | None = None
    try:
        try:
            view = await sup.start(raw, owner=TERMINAL_OWNER)
        except ProposalInvalid as exc:
            for path, message in exc.issues:
                sys.stderr.write(f"markertools: {path}: {message}\n")
            return 1
        except DotsError as exc:
            sys.stderr.write(f"markertools: {exc.message}\n")
            return 1
        run_id = view["runId"]
        final = await _terminal_loop(sup, notifier, run_id)
    except (asyncio.CancelledError, EOFError):
        if run_id is None:
            return 130
        with contextlib.suppress(DotsError):
            await sup.control(owner=TERMINAL_OWNER, run_id=run_id, action="pause")
        final = sup.status(owner=TERMINAL_OWNER, run_id=run_id)[0]
        sys.stdout.write(f"\npaused run {run_id}; resume it later with the same state directory\n")
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
    run: Annotated[str | None, typer.Argument(help="a run id (default: every run)")] = None,
    state_dir: StateDir = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Print the runs of a state directory (read-only: works while a supervisor runs)."""
    from markertools_adapters.dots._views import run_view
    from markertools_adapters.planstore import PlanStore, PlanStoreError

    root = state_dir or default_state_dir()
    if not Path(root).is_dir():
        fail(f"{root}: no such state directory")
    store = PlanStore(root)
    try:
        ids = [run] if run is not None else store.run_ids()
        views = [run_view(store.load(i)) for i in ids]
    except PlanStoreError as exc:
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
