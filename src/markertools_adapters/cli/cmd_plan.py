# Owns: the `plan` CLI commands (docs/cli.md): `plan validate FILE [--json]` and
# `plan schedule FILE --finished ROLE... [--json]`. Thin: read the file, call
# `markertools.plans`, print. Never decides anything itself.
#
# Exit codes: 0 valid (validate) / schedule printed; 1 the proposal is invalid (its
# errors are printed); 2 unreadable file, not UTF-8, not JSON, or a usage error (one
# line on stderr, no traceback).
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from markertools.plans import (
    NotJson,
    Proposal,
    Schedule,
    ScheduleError,
    schedule,
    topological_order,
    validate_proposal_text,
)
from markertools_adapters.cli._app import fail, plan_app
from markertools_adapters.cli._io import emit_json

_FILE_HELP = "proposal JSON file ('-' = stdin)"
_LOCALE_HELP = "language of the error messages: en or zh"
_THREAD_HELP = "THREAD=CWD: a thread's recorded cwd (repeatable)"


def _read_text(file: str) -> str:
    try:
        raw = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as exc:
        fail(f"cannot read {file}: {exc.strerror or exc}")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        fail(f"{file}: not UTF-8 text (byte {exc.start})")


def _thread_cwds(pairs: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs or ():
        thread, sep, cwd = pair.partition("=")
        if not sep or not thread or not cwd:
            fail(f"--thread-cwd expects THREAD=CWD, got {pair!r}")
        out[thread] = cwd
    return out


def _valid_proposal(
    file: str, thread_cwd: list[str] | None, locale: str, as_json: bool
) -> Proposal:
    """The validated proposal in `file`; an invalid one is reported here (exit 1)."""
    if locale not in ("en", "zh"):
        fail(f"--locale must be 'en' or 'zh', got {locale!r}")
    cwds = _thread_cwds(thread_cwd)
    text = _read_text(file)
    try:
        check = validate_proposal_text(text, thread_cwds=cwds)
    except NotJson as exc:
        fail(f"{file}: {exc}")
    if check.proposal is not None and not check.issues:
        return check.proposal
    if as_json:
        emit_json({"valid": False, "errors": [i.to_json(locale) for i in check.issues]})
    else:
        count = len(check.issues)
        typer.echo(f"invalid proposal: {count} error{'s' if count != 1 else ''}")
        for issue in check.issues:
            typer.echo(f"  {issue.render(locale)}")
    raise typer.Exit(1)


@plan_app.command("validate")
def validate_cmd(
    file: Annotated[str, typer.Argument(help=_FILE_HELP)],
    as_json: Annotated[bool, typer.Option("--json", help="print {valid, errors} as JSON")] = False,
    thread_cwd: Annotated[list[str] | None, typer.Option("--thread-cwd", help=_THREAD_HELP)] = None,
    locale: Annotated[str, typer.Option("--locale", help=_LOCALE_HELP)] = "en",
) -> None:
    """Validate an orchestration proposal (docs/rules.md PLN); exit 0 valid, 1 invalid."""
    proposal = _valid_proposal(file, thread_cwd, locale, as_json)
    if as_json:
        emit_json({"valid": True, "errors": []})
        return
    order = topological_order(proposal)
    typer.echo(f"valid proposal: {len(order)} role{'s' if len(order) != 1 else ''}")
    typer.echo(f"  order: {' -> '.join(order)}")


def _schedule_json(result: Schedule, order: tuple[str, ...], max_concurrent: int) -> dict[str, Any]:
    return {
        "valid": True,
        "ready": [r.name for r in result.ready],
        "start": list(result.start),
        "waiting": {name: list(deps) for name, deps in result.waiting},
        "receives": {r.name: [dep for dep, _ in r.inputs] for r in result.ready},
        "finished": list(result.finished),
        "running": list(result.running),
        "order": list(order),
        "maxConcurrent": max_concurrent,
    }


@plan_app.command("schedule")
def schedule_cmd(
    file: Annotated[str, typer.Argument(help=_FILE_HELP)],
    more: Annotated[
        list[str] | None,
        typer.Argument(help="more finished roles (so `--finished a b` works)", show_default=False),
    ] = None,
    finished: Annotated[
        list[str] | None,
        typer.Option("--finished", help="a role that finished with an accepted conclusion"),
    ] = None,
    running: Annotated[
        list[str] | None,
        typer.Option("--running", help="a role running now (repeatable; it occupies a slot)"),
    ] = None,
    max_concurrent: Annotated[
        int, typer.Option("--max-concurrent", help="the host's maxConcurrent, 1-3")
    ] = 3,
    as_json: Annotated[bool, typer.Option("--json", help="print the schedule as JSON")] = False,
    thread_cwd: Annotated[list[str] | None, typer.Option("--thread-cwd", help=_THREAD_HELP)] = None,
    locale: Annotated[str, typer.Option("--locale", help=_LOCALE_HELP)] = "en",
) -> None:
    """The roles ready to run once the named roles finished (PLN-5)."""
    proposal = _valid_proposal(file, thread_cwd, locale, as_json)
    done = [*(finished or []), *(more or [])]
    try:
        result = schedule(proposal, dict.fromkeys(done, ""), running or (), max_concurrent)
    except ScheduleError as exc:
        fail(str(exc))
    order = topological_order(proposal)
    if as_json:
        emit_json(_schedule_json(result, order, max_concurrent))
        return
    if not result.ready and not result.waiting and not result.running:
        typer.echo("every role has finished")
        return
    for r in result.ready:
        receives = f" (receives the conclusions of {', '.join(d for d, _ in r.inputs)})"
        typer.echo(f"ready: {r.name}{receives if r.inputs else ''}")
    if not result.ready:
        typer.echo("ready: (none)")
    elif result.start:
        typer.echo(f"start now: {', '.join(result.start)}")
    else:
        typer.echo(f"start now: (none: {max_concurrent} of {max_concurrent} slots are busy)")
    for name, deps in result.waiting:
        typer.echo(f"waiting: {name} (for {', '.join(deps)})")
    for name in result.running:
        typer.echo(f"running: {name}")
