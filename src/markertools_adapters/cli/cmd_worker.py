# Owns: `markertools worker run` and `markertools worker status` (docs/cli.md, WRK-1,
# WRK-10). Thin: options -> `WorkerSettings` + an opened store -> `WorkerHost.run()` on
# one event loop with SIGTERM / SIGINT handlers (stop: claim nothing more, grace, then
# requeue); `status` -> the store's `fleet_snapshot` as text (`status_lines`) or the
# CLI.md JSON (`markertools.worker_status_json`), one read for both.
#
# Must never: start without a runnable binary of its engine (`--engine codex`: Codex,
# `claude-code`: Claude Code; exit 2, one line); create a database (`--db` must
# already be a markertools one).
#
# Invariants:
#   Rule 1: `--json-log` writes only JSON lines on stdout (one per host event); without
#           it a terminal gets a live view of the running tasks, a pipe nothing.
from __future__ import annotations

import asyncio
import errno
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from markertools import msg
from markertools_adapters._secrets import hide_credentials
from markertools_adapters.cli._app import UsageFailure, WordsTyper, app
from markertools_adapters.cli._io import db_location, emit_json

worker_app = WordsTyper(
    help="Run a project's tasks on Codex or Claude Code (a worker host) and see the fleet (WRK-1..10).",
    no_args_is_help=True,
)
app.add_typer(worker_app, name="worker")

DbOption = Annotated[
    str, typer.Option("--db", help="The database (a SQLite file or a postgresql:// URL).")
]


def _check_db(db: str) -> Path | str:
    """What `--db` names, checked before anything else (the Codex binary, the prices): a
    supported scheme, and for SQLite an existing markertools database (read-only look)."""
    import sqlite3

    from markertools_adapters.stores import require_markertools_sqlite

    location = db_location(db)
    if isinstance(location, Path):
        if not location.exists():
            raise UsageFailure(f"--db {location}: no such database (create one with `world load`)")
        try:
            require_markertools_sqlite(location)
        except (OSError, ValueError, sqlite3.Error) as exc:  # a directory, not a database
            raise UsageFailure(f"--db {location}: cannot open: {exc}") from None
    return location


def _open(db: str, **kw: Any) -> Any:
    from markertools_adapters.opener import connect
    from markertools_adapters.stores import redact

    location = _check_db(db)
    try:
        return connect(location, executor="noop", must_exist=True, **kw)
    except Exception as exc:
        raise UsageFailure(f"--db {redact(db)}: cannot open: {exc}") from None


def _codex(path: str) -> str:
    found = shutil.which(path) if os.sep not in path else path
    if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise UsageFailure(msg("worker.missing_codex", path=path).render())
    return found


def _binaries(engine: str, codex_bin: str | None, claude_bin: str | None) -> tuple[str, str]:
    """ENG-1: (codex, claude). The host's engine's binary must exist (one line, exit 2);
    the other is what a task naming that engine gets (it fails if it is missing)."""
    from markertools_adapters.claude.offline import find_claude

    codex = codex_bin or os.environ.get("MARKERTOOLS_CODEX_BIN") or "codex"
    claude = find_claude(claude_bin)
    if engine == "claude-code":
        if claude is None:
            given = claude_bin or os.environ.get("MARKERTOOLS_CLAUDE_BIN") or "claude"
            raise UsageFailure(msg("worker.missing_claude", path=given).render())
        return codex, claude
    return _codex(codex), claude or claude_bin or "claude"


@worker_app.command("run")
def run_command(
    db: DbOption,
    project: Annotated[str, typer.Option("--project", help="The project whose tasks to run.")],
    host: Annotated[
        str | None, typer.Option("--host", help="This host's name (default: the hostname).")
    ] = None,
    max_concurrent: Annotated[
        int, typer.Option("--max-concurrent", min=1, max=16, help="Tasks at once (1-16).")
    ] = 2,
    codex_bin: Annotated[
        str | None,
        typer.Option("--codex-bin", help="The codex executable (default: codex on PATH)."),
    ] = None,
    engine: Annotated[
        str,
        typer.Option(
            "--engine",
            help="codex or claude-code: what runs a task whose own engine field is unset.",
        ),
    ] = "codex",
    claude_bin: Annotated[
        str | None,
        typer.Option(
            "--claude-bin",
            help="The claude executable (default: $MARKERTOOLS_CLAUDE_BIN, the pinned "
            "install, claude on PATH).",
        ),
    ] = None,
    worktrees: Annotated[
        Path, typer.Option("--worktrees", help="Root of the task directories.")
    ] = Path("worktrees"),
    lease_seconds: Annotated[
        float, typer.Option("--lease-seconds", min=0.1, help="Lease of a running task.")
    ] = 60.0,
    affinity_seconds: Annotated[
        float,
        typer.Option(
            "--affinity-seconds", min=0, help="How long a requeued task waits for its old host."
        ),
    ] = 300.0,
    prices: Annotated[
        Path | None, typer.Option("--prices", help="JSON price table, USD per million tokens.")
    ] = None,
    max_goal_rounds: Annotated[
        int, typer.Option("--max-goal-rounds", min=1, help="Goal rounds before stopping.")
    ] = 20,
    grace_seconds: Annotated[
        float, typer.Option("--grace-seconds", min=0, help="Grace period on SIGTERM or Ctrl-C.")
    ] = 30.0,
    until_idle: Annotated[
        bool, typer.Option("--until-idle", help="Exit once nothing is queued or running.")
    ] = False,
    json_log: Annotated[
        bool, typer.Option("--json-log", help="One JSON line per event on stdout.")
    ] = False,
    tools: Annotated[
        bool | None,
        typer.Option(
            "--tools/--no-tools",
            help="Give every task's agent the markertools tools, served by this host"
            " (default: when the MCP SDK is installed, the `tools` extra).",
        ),
    ] = None,
    store_outage_seconds: Annotated[
        float,
        typer.Option(
            "--store-outage-seconds",
            min=0,
            help="How long a store outage is ridden out before exiting 75.",
        ),
    ] = 300.0,
    max_waiting: Annotated[
        int,
        typer.Option(
            "--max-waiting", min=0, help="Tasks that may wait in a poll or wait, beyond the slots."
        ),
    ] = 32,
    approvals: Annotated[
        str,
        typer.Option(
            "--approvals",
            help="broker: an agent's approval request waits for a rule, a person"
            " (markertools approvals) or an ancestor agent; decline: declined at once,"
            " the task interrupted (APR-1).",
            metavar="MODE",
        ),
    ] = "broker",
    approval_timeout: Annotated[
        float,
        typer.Option(
            "--approval-timeout",
            min=0.001,
            help="Seconds a request waits for an answer before it is declined (APR-1).",
            metavar="SECONDS",
        ),
    ] = 900.0,
    log_level: Annotated[
        str,
        typer.Option("--log-level", help="debug, info, warning or error (stderr)."),
    ] = "warning",
) -> None:
    """Claim the project's tasks and run each on its own codex app-server or claude (WRK-1, ENG-1)."""
    from markertools_adapters.cli._logs import LOG_LEVELS, setup_logging
    from markertools_adapters.worker import (
        JsonLines,
        PriceTable,
        RunningView,
        Tally,
        WorkerHost,
        WorkerSettings,
    )
    from markertools_adapters.worker.dirs import LAYOUT
    from markertools_adapters.worker.settings import APPROVAL_MODES, ENGINE_NAMES
    from markertools_adapters.worktrees import WorktreeFiles

    if log_level not in LOG_LEVELS:
        raise UsageFailure(f"--log-level {log_level[:40]}: expected one of {', '.join(LOG_LEVELS)}")
    setup_logging("worker run", log_level, json_stream=sys.stdout if json_log else None)
    _check_db(db)  # the database first: a missing one is named before the Codex binary
    if engine not in ENGINE_NAMES:
        raise UsageFailure(f"--engine {engine[:40]}: expected one of {', '.join(ENGINE_NAMES)}")
    if approvals not in APPROVAL_MODES:
        raise UsageFailure(
            f"--approvals {approvals[:40]}: expected one of {', '.join(APPROVAL_MODES)}"
        )
    binary, claude = _binaries(engine, codex_bin, claude_bin)
    try:
        table = PriceTable.load(prices) if prices is not None else PriceTable()
    except ValueError as exc:
        raise UsageFailure(f"--prices: {exc}") from None
    fields: dict[str, Any] = {} if host is None else {"host": host}
    settings = WorkerSettings(
        project=project,
        max_concurrent=max_concurrent,
        codex_bin=binary,
        engine=engine,
        claude_bin=claude,
        worktrees=worktrees.absolute(),
        lease_seconds=lease_seconds,
        affinity_seconds=affinity_seconds,
        prices=table,
        max_goal_rounds=max_goal_rounds,
        grace_seconds=grace_seconds,
        until_idle=until_idle,
        tools=_tools_wanted(tools),
        store_url=db,
        store_outage_seconds=store_outage_seconds,
        max_waiting=max_waiting,
        approvals=approvals,
        approval_timeout=approval_timeout,
        **fields,
    )
    reason: str | None = None
    try:
        settings.worktrees.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or str(exc)
    if reason is None and not os.access(settings.worktrees, os.W_OK | os.X_OK):
        reason = os.strerror(errno.EACCES)
    if reason is not None:
        raise UsageFailure(f"--worktrees {settings.worktrees}: cannot use it: {reason}")
    files = WorktreeFiles(settings.worktrees, settings.host, layout=LAYOUT)
    store = _open(db, files=files)
    hide_credentials(db)  # TOL-10: no password in this process's /proc cmdline / environ
    try:
        if store.get_project(project) is None:
            raise UsageFailure(f"--project {project}: no such project")
        tally = Tally(settings.host)
        sinks: list[Any] = [tally]
        view = None
        if json_log:
            sinks.append(JsonLines(sys.stdout))
        elif sys.stdout.isatty():
            view = RunningView(settings.host)
            sinks.append(view)
        stopped: list[int] = []
        code = asyncio.run(_run(WorkerHost(settings, store, sinks=sinks), view, stopped))
    finally:
        store.close()
    raise typer.Exit(_exit(code, stopped, tally, until_idle))


def _exit(code: int, stopped: list[int], tally: Any, until_idle: bool) -> int:
    """The one summary line on stderr and the exit code: 130 after Ctrl-C (SIGINT), 0
    after SIGTERM or once idle, 75 after a store outage past its budget (FLT-3), 1 after
    an error the host could not ride out (named on stderr above)."""
    if code == 0 and stopped and stopped[0] == signal.SIGINT:
        why, code = "Ctrl-C", 130
    elif code == 0 and stopped:
        why = "SIGTERM"
    elif code == 0:
        why = "nothing left to do" if until_idle else "done"
    elif code == 75:
        why = "store outage past --store-outage-seconds"
    else:
        why = "error, see above"
    typer.echo(tally.line(why), err=True)
    return code


def _tools_wanted(tools: bool | None) -> bool:
    """WRK-9: the host serves the same-turn tools when this install has the MCP SDK
    (`--tools` without it is a usage error naming the extra)."""
    from importlib.util import find_spec

    available = find_spec("mcp") is not None
    if tools and not available:
        raise UsageFailure("--tools: the MCP SDK is not installed (pip install 'markertools[mcp]')")
    return available if tools is None else tools


async def _run(host: Any, view: Any, stopped: list[int]) -> int:
    loop = asyncio.get_running_loop()

    def stop(sig: int) -> None:
        stopped.append(sig)
        host.stop()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop, sig)
    if view is None:
        return int(await host.run())
    from rich.live import Live

    with Live(view.table(), refresh_per_second=2) as live:
        return int(await view.follow(host.run(), live, 0.5))


@worker_app.command("status")
def status_command(
    db: DbOption,
    project: Annotated[
        str | None, typer.Option("--project", help="Only this project's tasks.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The CLI.md JSON.")] = False,
) -> None:
    """Tasks per status, hosts and their running tasks, tasks held back by quota (WRK-10)."""
    from markertools import worker_status_json
    from markertools_adapters.worker import fleet_snapshot, status_lines

    store = _open(db)
    try:
        if project is not None and store.get_project(project) is None:
            raise UsageFailure(f"--project {project}: no such project")
        snapshot = fleet_snapshot(store, project)  # one read: the JSON and the text agree
    finally:
        store.close()
    if as_json:
        emit_json(worker_status_json(snapshot))
        return
    for line in status_lines(snapshot):
        typer.echo(line)
