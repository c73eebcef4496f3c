# Owns: `markertools dots serve` (docs/cli.md, docs/orchestration.md): the supervisor as
# an MCP server on stdio (`markertools_adapters.dots.mcp.DotsMcp`, over the transport of
# `dots._mcp_stdio`: bounded lines, JSON-RPC errors for malformed messages, its log
# lines on stderr as "markertools dots serve: ..."). Only parses the options, builds
# the server and runs it; stdout is the MCP stream, so everything the command says goes
# to stderr.
#
# Must never: print to stdout (it would corrupt the protocol), start with a state
# directory whose host lock another supervisor holds (one line on stderr, exit 2), or
# answer Ctrl-C with a traceback or a hang (it closes the supervisor and exits 130).
# A state directory that refuses writes longer than `--store-outage-seconds` (FLT-3)
# closes the supervisor cleanly and exits 75 (EX_TEMPFAIL).
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final, NoReturn

import typer

from markertools_adapters._outage import DEFAULT_OUTAGE_SECONDS, EX_TEMPFAIL
from markertools_adapters.cli._app import dots_app, fail
from markertools_adapters.cli.cmd_dots import (
    CodexBin,
    IdleMs,
    MaxConcurrent,
    MaxRuns,
    PollMs,
    StateDir,
    StoreOutageSeconds,
    host_settings,
    make_supervisor,
    outage_budget,
)
from markertools_adapters.dots import WORKER_ENV, DotsError

if TYPE_CHECKING:
    from markertools_adapters.dots.mcp import DotsMcp

CLOSE_SECONDS: Final[float] = 30.0  # Ctrl-C: how long the supervisor may take to close


@dots_app.command("serve")
def serve_cmd(
    state_dir: StateDir = None,
    codex_bin: CodexBin = None,
    max_concurrent: MaxConcurrent = 3,
    poll_ms: PollMs = 30_000,
    max_runs: MaxRuns = 8,
    idle_ms: IdleMs = 60_000,
    store_outage_seconds: StoreOutageSeconds = DEFAULT_OUTAGE_SECONDS,
    conversation: Annotated[
        str | None,
        typer.Option(
            "--conversation",
            help="the conversation this server's calls belong to (default: a fresh id per "
            "connection; a request's _meta['markertools/conversation'] wins)",
        ),
    ] = None,
    notify_command: Annotated[
        str | None,
        typer.Option(
            "--notify-command",
            help="run for every notice with its JSON on stdin (exit 0 = delivered)",
        ),
    ] = None,
) -> None:
    """The orchestration supervisor as an MCP server on stdio: the nine dots_* tools."""
    from markertools_adapters.dots.mcp import DotsMcp

    host_settings(max_concurrent, poll_ms, max_runs, idle_ms)  # a usage error first
    outage_budget(store_outage_seconds)
    if conversation is not None and not conversation.strip():
        fail("--conversation: must be a non-empty string")
    if notify_command is not None and not notify_command.strip():
        fail("--notify-command: must be a non-empty command")
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="markertools dots serve: %(message)s"
    )
    root: Path | None = state_dir
    # the variable's presence is worker mode, whatever its value (an empty value too)
    worker = (os.environ[WORKER_ENV] or "(unnamed)") if WORKER_ENV in os.environ else None
    dots = DotsMcp(
        lambda confirmer, notifier: make_supervisor(
            root,
            codex_bin,
            max_concurrent,
            poll_ms,
            max_runs,
            idle_ms,
            store_outage_seconds,
            confirmer=confirmer,
            notifier=notifier,
        ),
        conversation=conversation,
        notify_command=notify_command,
        worker=worker,
    )
    try:
        asyncio.run(_serve(dots))
    except DotsError as exc:
        fail(exc.message)
    except BaseExceptionGroup as group:  # the lifespan or the server failed in a task group
        found = _dots_error(group)
        if found is not None:
            fail(found.message)
        _stopped(group)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


async def _serve(dots: DotsMcp) -> None:
    """Serve until standard input closes. Ctrl-C: the server stops, its lifespan closes
    the supervisor (children ended, host lock released, every run resumable), then the
    process exits 130 at once - the transport reads stdin in a worker thread that cannot
    be interrupted (it is abandoned), so waiting for it would hang until the next line.

    The server and the wait for Ctrl-C are the two tasks of one TaskGroup (issue 35: no
    unowned future): the first to end decides, the other is cancelled. An unexpected
    exception of the server leaves the group as an ExceptionGroup, which `serve_cmd`
    turns into one line on stderr and a clean exit."""
    loop = asyncio.get_running_loop()
    interrupted = asyncio.Event()
    try:
        loop.add_signal_handler(signal.SIGINT, interrupted.set)
    except NotImplementedError:  # pragma: no cover - Windows: KeyboardInterrupt as before
        await dots.run_stdio()
        return
    served = asyncio.Event()

    async def serve() -> None:
        try:
            await dots.run_stdio()
        finally:
            served.set()  # stdin closed (the usual end), or the server failed

    try:
        async with asyncio.TaskGroup() as group:
            serving = group.create_task(serve(), name="dots serve: MCP server")
            waiting = group.create_task(interrupted.wait(), name="dots serve: Ctrl-C")
            gave_up = dots.sup.store_gave_up  # FLT-3: an outage outlasted its budget
            outage = group.create_task(gave_up.wait(), name="dots serve: store outage")
            await asyncio.wait(
                {serving, waiting, outage}, return_when=asyncio.FIRST_COMPLETED
            )
            if gave_up.is_set() and not interrupted.is_set():
                serving.cancel()
                waiting.cancel()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(dots.idle.wait(), CLOSE_SECONDS)
                sys.stderr.write(
                    f"markertools: {dots.sup.outage.what} refused writes for longer than "
                    f"--store-outage-seconds ({dots.sup.outage.budget:g} s); the runs "
                    "waiting on it were stopped and the supervisor closed (exit 75: start "
                    "it again once the directory takes writes)\n"
                )
                sys.stderr.flush()
                os._exit(EX_TEMPFAIL)  # never waits for the abandoned stdin thread
            if not interrupted.is_set():
                waiting.cancel()  # the server ended: its error, if any, leaves the group
                outage.cancel()
            else:
                serving.cancel()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(dots.idle.wait(), CLOSE_SECONDS)
                sys.stderr.write(
                    "markertools: interrupted; the runs stay in the state directory, "
                    "paused-safe\n"
                )
                sys.stderr.flush()
                os._exit(130)  # never waits for the abandoned stdin thread
    finally:
        loop.remove_signal_handler(signal.SIGINT)


def _stopped(group: BaseExceptionGroup[BaseException]) -> NoReturn:
    """An unexpected exception of the server (issue 35): logged with its traceback at
    debug level, said in one line on stderr, exit 1 - never a traceback on stderr. The
    supervisor was closed by the lifespan on the way out (runs stay resumable)."""
    first: BaseException = group
    while isinstance(first, BaseExceptionGroup) and first.exceptions:
        first = first.exceptions[0]
    if isinstance(first, KeyboardInterrupt):
        raise typer.Exit(130) from None
    logging.getLogger("markertools.dots").debug("dots serve stopped", exc_info=group)
    detail = " ".join(str(first).split())[:300] or type(first).__name__
    sys.stderr.write(
        f"markertools: dots serve stopped on an internal error ({type(first).__name__}: "
        f"{detail}); the runs stay in the state directory, paused-safe\n"
    )
    raise typer.Exit(1)


def _dots_error(group: BaseExceptionGroup[BaseException]) -> DotsError | None:
    for exc in group.exceptions:
        if isinstance(exc, DotsError):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = _dots_error(exc)
            if found is not None:
                return found
    return None
