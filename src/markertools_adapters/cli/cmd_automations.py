# Owns: `markertools automations list|fire|pause|resume|delete|update` (docs/cli.md,
# docs/rules.md SCH-6, SCH-7) on an existing database (a SQLite file or a postgresql://
# URL). Thin: options -> markertools.fire_due_automations / the management calls of
# markertools.deliver.automations_admin -> output.
#
# Must never: create a database (every command opens with must_exist); print a password.
#
# Invariants:
#   Rule 1: the current time is `--now` (fire), else the database's virtual time (a
#           database made from a world file), else the system clock.
#   Rule 2: `fire --json` prints {"fired": [{"automation_id", "slot", "result", "task_id",
#           "reason"}]}, one entry per slot this call claimed (SCH-6); two concurrent
#           `fire` runs list each run once between them and create each task once.
#   Rule 3: a refusal (unknown id, wrong status, invalid value) is a usage error: one
#           stderr line, exit 2, nothing changed.
from __future__ import annotations

import math
import sys
import time
from contextlib import AbstractContextManager
from typing import Annotated, Any

import typer

from markertools import (
    Automation,
    AutomationChange,
    FiredRun,
    delete_automation,
    epoch_from_number,
    fire_due_automations,
    list_automations,
    next_run_at,
    parse_iso,
    pause_automation,
    resume_automation,
    shanghai_iso,
    update_automation,
)
from markertools_adapters.cli._app import UsageFailure, WordsTyper, app, fail
from markertools_adapters.cli._io import emit_json
from markertools_adapters.executors import NoopExecutor

automations_app = WordsTyper(
    help="Automations on a database: list, fire the due ones, pause, resume, update, delete "
    "(docs/rules.md SCH-6, SCH-7).",
    no_args_is_help=True,
)
app.add_typer(automations_app, name="automations")

DbOption = Annotated[
    str, typer.Option("--db", help="The database (a SQLite file or a postgresql:// URL).")
]


def _opened(db: str) -> AbstractContextManager[Any]:
    from markertools_adapters.cli._io import opened_store

    return opened_store(db)


def parse_time(text: str, option: str) -> float:
    """Epoch seconds (>= 1e11: milliseconds) or ISO 8601 (no offset: Asia/Shanghai)."""
    try:
        number = float(text)
    except ValueError:
        value = parse_iso(text)
    else:
        value = epoch_from_number(number) if math.isfinite(number) else None
    if value is None:
        raise UsageFailure(
            f"{option} {text!r}: expected epoch seconds or an ISO 8601 time "
            "(e.g. 2026-12-29T09:00:00+08:00; without an offset it is Asia/Shanghai time)"
        )
    return value


def _store_now(store: Any) -> float:
    recorded = store.world_now() if callable(getattr(store, "world_now", None)) else None
    return float(recorded) if recorded is not None else time.time()


def _when(epoch: float | None) -> str | None:
    return None if epoch is None else shanghai_iso(epoch)


def automation_json(a: Automation) -> dict[str, Any]:
    nxt = next_run_at(a) if a.status == "active" else None
    return {
        "id": a.id,
        "project_id": a.project_id,
        "name": a.name,
        "status": a.status,
        "bind": a.bind,
        "bound_task_id": a.bound_task_id,
        "prompt": a.prompt,
        "interval_seconds": a.interval_seconds,
        "first_run_at": a.first_run_at,
        "run_once": a.run_once,
        "run_count": a.run_count,
        "last_run_at": a.last_run_at,
        "next_run_at": nxt,
    }


def fired_json(run: FiredRun) -> dict[str, Any]:
    return {
        "automation_id": run.automation_id,
        "slot": run.slot,
        "result": run.result,
        "task_id": run.task_id,
        "reason": run.reason.render("en"),
    }


def _listing_line(a: Automation) -> str:
    if a.status != "active":
        nxt = f"{a.status}, never due"
    else:
        slot = next_run_at(a)
        nxt = "never again (ran, run-once)" if slot is None else f"next {shanghai_iso(slot)}"
    bind = f"heartbeat -> {a.bound_task_id}" if a.bind == "heartbeat" else "new task"
    return (
        f"{a.id}  {a.name!r}  [{a.status}] project {a.project_id}, every "
        f"{a.interval_seconds}s{' (once)' if a.run_once else ''}, {bind}; ran {a.run_count}x; {nxt}"
    )


@automations_app.command("list")
def automations_list(
    db: DbOption,
    project: Annotated[
        str | None, typer.Option("--project", help="Only this project's automations.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The automations (not deleted) with their next run and state."""
    try:
        with _opened(db) as store:
            rows = list_automations(store, project)
    except UsageFailure as exc:
        fail(str(exc))
    if as_json:
        emit_json({"automations": [automation_json(a) for a in rows]})
        return
    if not rows:
        sys.stdout.write("no automations\n")
    for a in rows:
        sys.stdout.write(_listing_line(a) + "\n")


@automations_app.command("fire")
def automations_fire(
    db: DbOption,
    now: Annotated[
        str | None,
        typer.Option(
            "--now", help="The time to fire at (epoch seconds or ISO 8601); default: now."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Fire every due automation once (SCH-6) and print what each became."""
    from markertools_adapters.clock import SystemRandom, VirtualClock
    from markertools_adapters.wiring import store_ports

    try:
        at = parse_time(now, "--now") if now is not None else None
        with _opened(db) as store:
            when = at if at is not None else _store_now(store)
            ports = store_ports(
                store, clock=VirtualClock(when), random=SystemRandom(), executor=NoopExecutor()
            )
            fired = fire_due_automations(ports, when)
    except UsageFailure as exc:
        fail(str(exc))
    if as_json:
        emit_json({"fired": [fired_json(run) for run in fired]})
        return
    if not fired:
        sys.stdout.write(f"no automation was due at {shanghai_iso(when)}\n")
    for run in fired:
        sys.stdout.write(f"{run.automation_id}: {run.result}: {run.reason.render('en')}\n")


def _change(db: str, call: Any) -> None:
    try:
        with _opened(db) as store:
            result: AutomationChange = call(store)
    except UsageFailure as exc:
        fail(str(exc))
    if not result.ok:
        fail(result.reason.render("en"))
    sys.stdout.write(result.reason.render("en") + "\n")


IdArgument = Annotated[str, typer.Argument(help="The automation's id.")]


@automations_app.command("pause")
def automations_pause(automation_id: IdArgument, db: DbOption) -> None:
    """Pause an active automation: it is never due until resumed."""
    _change(db, lambda store: pause_automation(store, automation_id))


@automations_app.command("resume")
def automations_resume(automation_id: IdArgument, db: DbOption) -> None:
    """Resume a paused automation."""
    _change(db, lambda store: resume_automation(store, automation_id))


@automations_app.command("delete")
def automations_delete(automation_id: IdArgument, db: DbOption) -> None:
    """Delete an automation: it never runs or lists again."""
    _change(db, lambda store: delete_automation(store, automation_id))


@automations_app.command("update")
def automations_update(
    automation_id: IdArgument,
    db: DbOption,
    prompt: Annotated[str | None, typer.Option("--prompt", help="The new prompt.")] = None,
    interval_seconds: Annotated[
        int | None,
        typer.Option("--interval-seconds", help="The new interval, 60-2592000 seconds."),
    ] = None,
    first_run_at: Annotated[
        str | None,
        typer.Option(
            "--first-run-at",
            help="The first run (before the first run only): epoch seconds or ISO 8601.",
        ),
    ] = None,
    once: Annotated[
        bool | None, typer.Option("--once/--no-once", help="Run once, or repeat.")
    ] = None,
) -> None:
    """Change an automation's prompt, interval, first run time or once flag (SCH-7)."""
    try:
        first = parse_time(first_run_at, "--first-run-at") if first_run_at is not None else None
    except UsageFailure as exc:
        fail(str(exc))
    _change(
        db,
        lambda store: update_automation(
            store,
            automation_id,
            _store_now(store),
            prompt=prompt,
            interval_seconds=interval_seconds,
            first_run_at=first,
            once=once,
        ),
    )


__all__ = [
    "automation_json",
    "automations_app",
    "fired_json",
    "parse_time",
]
