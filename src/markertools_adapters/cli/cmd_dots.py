# Owns: the commands `markertools dots run | status | threads | probe` (docs/cli.md,
# DOT-13): their options, the supervisor in the foreground for `dots run` (the terminal
# itself is `_dots_terminal`, a run's text `_dots_text`), Ctrl-C, and inspection of a
# state directory. Only `run` (and `serve`) create a state directory; the inspection
# commands (`status`, `probe`, `threads`) create nothing. Also the host options every `dots` command shares (`host_settings`,
# `make_supervisor`), which `dots serve` uses too.
#
# Must never: approve anything on the person's behalf (a confirmation is "accept" only
# when they type yes), act on a notice of another run than the one at the prompt,
# leave a child process behind, wait for a line after Ctrl-C, or print a traceback.
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from markertools.plans import HostSettings, validate_host_settings
from markertools_adapters._outage import DEFAULT_OUTAGE_SECONDS
from markertools_adapters.cli._app import dots_app, fail
from markertools_adapters.cli._dots_terminal import (
    TERMINAL_OWNER,
    Keyboard,
    NotResumable,
    QueueNotifier,
    TerminalConfirmer,
    offer_unfinished,
    own,
    reattach,
    resume_hint,
    terminal_loop,
)
from markertools_adapters.cli._dots_text import one_line, status_lines
from markertools_adapters.cli._io import emit_json
from markertools_adapters.dots import (
    DotsError,
    ProposalInvalid,
    Supervisor,
    default_state_dir,
)

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
MaxRuns = Annotated[
    int, typer.Option("--max-runs", help="unfinished runs this host takes, 1 to 64")
]
IdleMs = Annotated[
    int,
    typer.Option(
        "--idle-ms", help="an idle role's app-server ends after this many ms (0 to 3600000)"
    ),
]
StoreOutageSeconds = Annotated[
    float,
    typer.Option(
        "--store-outage-seconds",
        help="how long a state directory that refuses writes (full, read-only, an I/O "
        "error) is retried before its runs stop (FLT-3), 0 to 86400",
    ),
]
OPTIONS = {
    "maxConcurrent": "--max-concurrent",
    "pollMs": "--poll-ms",
    "maxRuns": "--max-runs",
    "idleMs": "--idle-ms",
}


def host_settings(
    max_concurrent: int, poll_ms: int, max_runs: int = 8, idle_ms: int = 60_000
) -> HostSettings:
    """PLN-10 settings from the options, or a usage error naming the option."""
    raw = {
        "maxConcurrent": max_concurrent,
        "pollMs": poll_ms,
        "maxRuns": max_runs,
        "idleMs": idle_ms,
    }
    check = validate_host_settings(raw)
    if check.settings is None:
        issue = check.issues[0]
        option = next((o for k, o in OPTIONS.items() if k in issue.path), "--max-concurrent")
        fail(f"{option}: {issue.message.render('en')}")
    return check.settings


def outage_budget(seconds: float) -> float:
    """`--store-outage-seconds`, or a usage error naming it."""
    if not 0 <= seconds <= 86_400:
        fail(f"--store-outage-seconds: must be between 0 and 86400, got {seconds:g}")
    return seconds


def make_supervisor(
    state_dir: Path | None,
    codex_bin: str | None,
    max_concurrent: int,
    poll_ms: int,
    max_runs: int = 8,
    idle_ms: int = 60_000,
    store_outage_seconds: float = DEFAULT_OUTAGE_SECONDS,
    **kw: Any,
) -> Supervisor:
    return Supervisor(
        state_dir or default_state_dir(),
        settings=host_settings(max_concurrent, poll_ms, max_runs, idle_ms),
        codex_bin=codex_bin,
        store_outage_seconds=outage_budget(store_outage_seconds),
        **kw,
    )


# ---- dots run ------------------------------------------------------------------------


class _OneLine(logging.Formatter):
    """A log record at the terminal: "markertools: <message>" on one line, never a
    traceback (the alert of the run says what failed; issue 36)."""

    def format(self, record: logging.LogRecord) -> str:
        return "markertools: " + one_line(record.getMessage())


def one_line_log() -> None:
    """`dots run`'s log: warnings and errors of markertools on stderr, one line each."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    logger = logging.getLogger("markertools")
    logger.handlers[:] = [handler]
    logger.setLevel(logging.WARNING)
    logger.propagate = False


def terminal_columns() -> int | None:
    """The width of the terminal the confirmations are shown on (None: not a terminal,
    the text keeps its default width)."""
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size().columns


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
    max_runs: MaxRuns = 8,
    idle_ms: IdleMs = 60_000,
    store_outage_seconds: StoreOutageSeconds = DEFAULT_OUTAGE_SECONDS,
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
    one_line_log()
    keyboard = Keyboard()
    notifier = QueueNotifier()
    sup = make_supervisor(
        state_dir,
        codex_bin,
        max_concurrent,
        poll_ms,
        max_runs,
        idle_ms,
        store_outage_seconds,
        confirmer=TerminalConfirmer(keyboard),
        notifier=notifier,
        text_columns=terminal_columns,
    )
    options = resume_options(
        codex_bin, max_concurrent, poll_ms, max_runs, idle_ms, store_outage_seconds
    )
    code = asyncio.run(_run_foreground(sup, notifier, keyboard, raw, resume, as_json, options))
    raise typer.Exit(code)


def resume_options(
    codex_bin: str | None,
    max_concurrent: int,
    poll_ms: int,
    max_runs: int,
    idle_ms: int,
    store_outage_seconds: float = DEFAULT_OUTAGE_SECONDS,
) -> list[str]:
    """The options a `--resume` of this run needs again (issue 36): `--codex-bin` when
    given (as an absolute path when it is a path), and each host setting that differs
    from its default. Never a JSON field name: the words a person types."""
    out: list[str] = []
    if codex_bin:
        out += ["--codex-bin", os.path.abspath(codex_bin) if os.sep in codex_bin else codex_bin]
    for option, value, default in (
        ("--max-concurrent", max_concurrent, 3),
        ("--poll-ms", poll_ms, 30_000),
        ("--max-runs", max_runs, 8),
        ("--idle-ms", idle_ms, 60_000),
    ):
        if value != default:
            out += [option, str(value)]
    if store_outage_seconds != DEFAULT_OUTAGE_SECONDS:
        out += ["--store-outage-seconds", f"{store_outage_seconds:g}"]
    return out


async def _run_foreground(
    sup: Supervisor,
    notifier: QueueNotifier,
    keyboard: Keyboard,
    raw: Any,
    resume: str | None,
    as_json: bool,
    options: Sequence[str] = (),
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
                run_id = await reattach(sup, resume)
            else:
                offered = await offer_unfinished(sup, keyboard, raw, options)
                if offered == "":
                    return 0
                if offered is not None:
                    run_id = await reattach(sup, offered)
                else:
                    run_id = (await sup.start(raw, owner=TERMINAL_OWNER)).run_id
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
        final = await terminal_loop(sup, notifier, keyboard, run_id)
        if final.state == "paused":
            hint = resume_hint(run_id, sup.root, options)
            sys.stdout.write(f"run {run_id} stays paused; resume it with: {hint}\n")
    except (asyncio.CancelledError, EOFError):
        if run_id is None:
            if interrupted:
                sys.stdout.write("\ninterrupted; no run was started or resumed\n")
            return 130 if interrupted else 1
        with contextlib.suppress(DotsError):
            await sup.control(owner=TERMINAL_OWNER, run_id=run_id, action="pause")
        final = own(sup, run_id)
        if not final.finished:
            sys.stdout.write(
                f"\npaused run {run_id}; resume it with: {resume_hint(run_id, sup.root, options)}\n"
            )
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await sup.close()
    if as_json:
        emit_json(final.to_json())
    else:
        sys.stdout.write("\n".join(status_lines(final)) + "\n")
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
    and creates nothing: a directory not made yet has no runs). Also lists the runs
    whose files cannot be read (damaged: the next supervisor sets them aside) and the
    files a supervisor has set aside (quarantined)."""
    from markertools_adapters.dots._views import run_view
    from markertools_adapters.planstore import (
        CorruptStore,
        PlanStore,
        PlanStoreError,
        RunNotFound,
        quarantined,
    )

    root = Path(state_dir or default_state_dir()).expanduser()
    if not root.is_dir():
        if root.exists():
            fail(f"{root}: not a directory")
        if run is not None:
            fail(f"no run {run!r} in {root} (the directory does not exist)")
        if as_json:
            emit_json({"runs": [], "quarantined": [], "damaged": []})
        else:
            sys.stdout.write(f"no runs in {root} (the directory does not exist yet)\n")
        return
    store = PlanStore(root, create=False)  # reads only: never the lock, never a write
    aside = [q for q in quarantined(root) if run is None or q.run_id == run]
    damaged: list[dict[str, Any]] = []
    views = []
    for run_id in [run] if run is not None else store.run_ids():
        try:
            views.append(run_view(store.load_current(run_id)))
        except RunNotFound as exc:
            if run is None:
                continue  # gone since the listing
            if aside:
                q = aside[-1]
                fail(
                    f"no run {run!r} in {root}: it was set aside at {_when(q.at)} "
                    f"({one_line(q.reason)}); its files are in {q.moved_to}"
                )
            fail(str(exc))
        except CorruptStore as exc:
            if run is not None:
                fail(f"{exc} (the next supervisor started on {root} moves it to quarantine/)")
            path = exc.path or store.record_path(run_id)
            reason = str(exc).removeprefix(f"{path}: ")
            damaged.append({"file": path.name, "reason": reason, "runId": run_id})
        except (PlanStoreError, ValueError) as exc:  # ValueError: not a run id at all
            fail(str(exc))
    if as_json:
        emit_json(
            {
                "runs": [v.to_json() for v in views],
                "quarantined": [q.to_json() for q in aside],
                "damaged": damaged,
            }
        )
        return
    if not views:
        sys.stdout.write(f"no runs in {root}\n")
    for view in views:
        sys.stdout.write("\n".join(status_lines(view)) + "\n")
    for d in damaged:
        sys.stdout.write(
            f"damaged {d['file']}: {one_line(d['reason'])} (the next supervisor moves it to "
            f"{root / 'quarantine'})\n"
        )
    for q in aside:
        sys.stdout.write(
            f"quarantined {q.file} at {_when(q.at)}: {one_line(q.reason)} (in {q.moved_to})\n"
        )


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


@dots_app.command("probe")
def probe_cmd(
    state_dir: StateDir = None,
    codex_bin: CodexBin = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """The backend's default model and effort, rate-limit windows and credits."""
    result = _inspect(state_dir, codex_bin, lambda sup: sup.probe())
    if as_json:
        emit_json(result.to_json())
        return
    sys.stdout.write(f"model: {result.model} (effort {result.effort})\n")
    windows = ", ".join(
        f"{w.left_percent:.0f}% left of {w.window_minutes} min" for w in result.windows
    )
    sys.stdout.write(f"rate limits ({result.source}): {windows or 'none reported'}\n")


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
        emit_json(result.to_json())
        return
    if not result.threads:
        filters = "".join(
            f", {label} {value!r}" for label, value in (("--cwd", cwd), ("--search", search)) if value
        )
        sys.stdout.write(f"no threads in the Codex home {codex_home()}{filters}\n")
    for t in result.threads:
        shown = (one_line(t.thread_id), one_line(t.cwd or ""), one_line(t.preview or ""))
        sys.stdout.write("  ".join(shown) + "\n")


def codex_home() -> str:
    """Where the codex processes of this command keep their threads: `$CODEX_HOME`,
    else `~/.codex` (Codex's own default)."""
    home = os.environ.get("CODEX_HOME")
    return str(Path(home).expanduser()) if home else str(Path("~/.codex").expanduser())


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
