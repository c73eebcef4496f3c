# Owns: `markertools deliver` (docs/cli.md): read one turn (a transcript file, stdin, or a Codex
# event stream), open a store (a world file loaded fresh, or an existing database), deliver
# the turn as the sender with a virtual clock, print the report and what changed (or the
# `deliver --json` document). Thin: options -> library calls -> output.
#
# Invariants:
#   Rule 1: every usage error or unreadable input is one stderr line and exit 2; skipped
#           or rejected blocks are still success (exit 0); Ctrl-C during the delivery is
#           one line saying which blocks finished (they stay applied, as the audit and
#           the journal say) and how to finish the turn, exit 130; never a traceback.
#   Rule 2: with --world time is virtual (VirtualClock from the world's `now`): waits
#           finish at once. With --db it is the system clock: polls and waits really
#           wait (a `world load` database's frozen `now` only dates its records). Either
#           way `--deadline` defaults to the library's DEFAULT_DELIVERY_DEADLINE (TRN-11).
#   Rule 3: optional adapters (SQLite, executors, worktrees, Codex) are imported lazily,
#           so a missing one is a clear usage error, never an import crash.
#   Rule 4: "what changed" comes from what the delivery touched (TouchRecorder: the rows
#           it wrote, its audit records and follow-ups), so a delivery against a large
#           database costs what the delivery costs; only `--json` without
#           `--touched-only` exports the whole database, once, for its `world`.
#   Rule 5: a `--db` delivery in a terminal (not --json, not a pipe) that waits more
#           than ~2 s shows one status line on stderr - which poll or wait, for which
#           tasks, how long at most, Ctrl-C to stop - drawn from the delivery's own
#           waiting (`_waitline.WaitLine` is its ChangeWaiter and wraps its clock), and
#           gone before the report or the Ctrl-C line is printed.
from __future__ import annotations

import contextlib
import importlib
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from markertools import (
    DEFAULT_DELIVERY_DEADLINE,
    LOCALES,
    TURN_OUTCOMES,
    AuditRecord,
    Clock,
    DeliveryReport,
    deliver_turn,
    parse_turn,
)
from markertools_adapters.cli._app import UsageFailure, app, fail
from markertools_adapters.cli._io import (
    close_store,
    emit_json,
    fresh_store,
    load_world_path,
    make_executor,
    make_files,
    open_db,
    read_text,
)
from markertools_adapters.clock import SystemClock, SystemRandom, VirtualClock
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World, world_to_json
from markertools_adapters.worlddiff import (
    TouchRecorder,
    touched_changes,
    touched_world,
    world_changes,
)


def codex_turn(events: Path, turn: str | None) -> tuple[str, str]:
    try:
        module = importlib.import_module("markertools_adapters.cli.cmd_codex")
        read = module.codex_turn_for_delivery
    except (ImportError, AttributeError):
        raise UsageFailure("--codex-events: Codex support is not available in this build") from None
    try:
        text, outcome = read(events, turn)
    except UsageFailure:
        raise
    except (OSError, ValueError) as exc:
        raise UsageFailure(f"{events}: {exc}") from None
    return str(text), str(outcome)


def entries_json(report: DeliveryReport) -> list[dict[str, Any]]:
    """The `entries` of the `deliver --json` document (docs/cli.md)."""
    return [
        {
            "kind": e.kind,
            "line": e.line,
            "outcome": e.outcome,
            "target": e.target,
            "reason": e.reason.render(report.locale),
        }
        for e in report.entries
    ]


REPORT_NOT_QUEUED = 4  # exit code: delivered, but the report is not queued yet
INTERRUPTED = 130  # exit code: Ctrl-C (SIGINT) during the delivery


SHOWN_APPLIED = 5  # the finished blocks the Ctrl-C line names one by one


def interrupted_line(turn_id: str | None, finished: Sequence[str] | None = None) -> str:
    """What Ctrl-C during a delivery left behind, and how to finish the turn. `finished`:
    the blocks that finished before it ("task-create → t-1", from the delivery's audit
    records), None when not known."""
    head = (
        "markertools: interrupted: the turn was not delivered completely and no report was "
        "queued; blocks that finished before Ctrl-C stay applied"
    )
    if finished is not None and not finished:
        head += " (none had finished: nothing was applied)"
    elif finished:
        listed = ", ".join(finished[:SHOWN_APPLIED])
        more = len(finished) - SHOWN_APPLIED
        head += f" ({listed}{f' and {more} more' if more > 0 else ''})"
    if turn_id is not None:
        return f"{head}; deliver again with --turn-id {turn_id} to apply the rest exactly once"
    return f"{head}; delivering again without --turn-id runs every block again"


def deliver_json(
    report: DeliveryReport,
    after: World,
    *,
    changes: Sequence[str] | None = None,
    world_scope: str = "full",
) -> dict[str, Any]:
    """The `deliver --json` document (docs/cli.md). `after` is the world after delivery:
    the whole database (`world_scope` "full"), or only the records the delivery touched
    ("touched", `--touched-only`). `changes` (additive) are the "What changed" lines."""
    doc: dict[str, Any] = {
        "delivered": report.delivered,
        "entries": entries_json(report),
        "message": report.message,
        "followups": list(report.queued_followups),
        "world": world_to_json(after),
        "world_scope": world_scope,
        "turn_id": report.turn_id,
        "replayed": report.replayed,
        "report_queued": report.report_queued,
        "report_error": report.report_error,
    }
    if report.not_delivered is not None:
        doc["not_delivered"] = {
            "reason": report.not_delivered.code,
            "message": report.not_delivered.reason.render(report.locale),
        }
    if changes is not None:
        doc["changes"] = list(changes)
    return doc


def report_text(
    sender: str, report: DeliveryReport, changes: Sequence[str], audit: Sequence[AuditRecord]
) -> str:
    """The human output: the report queued for `sender` (or why nothing was delivered,
    from the delivery's `audit` records), then the "What changed" lines."""
    lines: list[str] = []
    replay = " (a replay of the first delivery of this turn id: nothing ran now)"
    if report.delivered:
        head = "Report queued for" if report.report_queued else "Report NOT queued for"
        lines.append(f"{head} {sender}{replay if report.replayed else ''}:")
        lines.append("")
        lines.append(report.message or "")
    else:
        discards = [a for a in audit if a.outcome == "discarded"]
        if discards:
            why = discards[-1].reason
        elif report.not_delivered is not None:  # a replay: nothing was audited now
            why = report.not_delivered.reason.render(report.locale)
        else:
            why = "nothing ran"
        lines.append(f"Not delivered: {why}{replay if report.replayed else ''}")
    lines.append("")
    lines.append("What changed:" if changes else "What changed: nothing")
    lines += [f"  {line}" for line in changes]
    return "\n".join(lines)


def human_output(sender: str, report: DeliveryReport, before: World, after: World) -> str:
    """`report_text` with the changes between two exported worlds (small worlds: the demo)."""
    new_audit = after.audit[len(before.audit) :]
    return report_text(sender, report, world_changes(before, after), new_audit)


_SENDER_HELP = "The task that wrote the turn."


@app.command("deliver")
def deliver_command(
    file: Annotated[
        str | None, typer.Argument(help="The turn's text (a file; - = stdin).", metavar="FILE")
    ] = None,
    world: Annotated[
        Path | None,
        typer.Option("--world", help="World file to load fresh.", metavar="WORLD.json"),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="Existing SQLite database or postgresql:// URL (changed).",
            metavar="PATH|URL",
        ),
    ] = None,
    sender: Annotated[str | None, typer.Option("--sender", help=_SENDER_HELP, metavar="ID")] = None,
    outcome: Annotated[
        str | None,
        typer.Option(
            "--outcome",
            help=f"How the turn ended: {', '.join(TURN_OUTCOMES)} (default completed).",
            metavar="OUTCOME",
        ),
    ] = None,
    locale: Annotated[
        str, typer.Option("--locale", help="Report language.", metavar="en|zh")
    ] = "en",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the deliver --json document.")
    ] = False,
    touched_only: Annotated[
        bool,
        typer.Option(
            "--touched-only",
            help="With --json: `world` holds only the records the delivery touched "
            "(fast on a large database).",
        ),
    ] = False,
    worktrees: Annotated[
        Path | None,
        typer.Option("--worktrees", help="Root of the task worktrees (task-files).", metavar="DIR"),
    ] = None,
    host: Annotated[
        str | None,
        typer.Option(
            "--host", help="The local host for task-files (default: hostname).", metavar="NAME"
        ),
    ] = None,
    executor: Annotated[
        str,
        typer.Option(
            "--executor",
            help="What a task-cancel signals: noop (nothing; the kill request is only "
            "reported and audited), local (process groups) or docker (containers).",
            metavar="noop|local|docker",
        ),
    ] = "noop",
    codex_events: Annotated[
        Path | None,
        typer.Option("--codex-events", help="Codex app-server events (JSONL).", metavar="FILE"),
    ] = None,
    turn: Annotated[
        str | None,
        typer.Option("--turn", help="Codex turn id (default: the last completed).", metavar="ID"),
    ] = None,
    turn_id: Annotated[
        str | None,
        typer.Option(
            "--turn-id",
            help="Deliver exactly once (TRN-9): the same sender and turn id again prints the "
            "first report, marked as a replay, and changes nothing.",
            metavar="ID",
        ),
    ] = None,
    deadline: Annotated[
        str | None,
        typer.Option(
            "--deadline",
            help="Stop every poll and wait once the delivery has run this many seconds "
            f"(TRN-11; default {DEFAULT_DELIVERY_DEADLINE:g}, the library's default; "
            "none = no bound).",
            metavar="SECONDS|none",
        ),
    ] = None,
) -> None:
    """Deliver one turn as SENDER against a world file or a database; print the report.

    Prints the report queued for the sender and what changed in the world (with --json,
    the `deliver --json` document of docs/cli.md)."""
    try:
        run_deliver(
            file=file,
            world=world,
            db=db,
            sender=sender,
            outcome=outcome,
            locale=locale,
            as_json=as_json,
            worktrees=worktrees,
            host=host,
            executor=executor,
            codex_events=codex_events,
            turn=turn,
            touched_only=touched_only,
            turn_id=turn_id,
            deadline=parse_deadline(deadline),
        )
    except UsageFailure as exc:
        fail(str(exc))


def show_waiting(world: Path | None, as_json: bool) -> bool:
    """Rule 5: the status line is for a person at a terminal watching a delivery on the
    real clock (`--db`); never with --json, never on a pipe, never in virtual time."""
    return world is None and not as_json and sys.stderr.isatty()


def wait_line(text: str, sender: str, clock: Clock, deadline: float | None) -> Any:
    """Rule 5: the WaitLine of this delivery, drawing on stderr."""
    from rich.console import Console

    from markertools_adapters.cli._waitline import WaitLine, rich_status

    show = rich_status(Console(stderr=True))
    return WaitLine(parse_turn(text), sender, clock, deadline=deadline, show=show)


def parse_deadline(text: str | None) -> float | None:
    """`--deadline`: absent = the library's default (DEFAULT_DELIVERY_DEADLINE), `none` =
    no bound, else a finite number of seconds >= 0."""
    if text is None:
        return DEFAULT_DELIVERY_DEADLINE
    if text.strip().lower() == "none":
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not (seconds >= 0 and seconds != float("inf")):
        raise UsageFailure(
            f"--deadline SECONDS must be a finite number >= 0, or none for no bound; got {text!r}"
        )
    return seconds


def check_options(
    *,
    sender: str | None,
    world: Path | None,
    db: Path | str | None,
    locale: str,
    outcome: str | None,
    turn: str | None,
    codex_events: Path | None,
    touched_only: bool = False,
    as_json: bool = False,
) -> str:
    """The option rules of `deliver` that need no file; returns the sender id."""
    if sender is None or not sender.strip():
        raise UsageFailure("--sender ID is required (the task whose turn this is)")
    if (world is None) == (db is None):
        raise UsageFailure("give exactly one of --world WORLD.json or --db PATH")
    if locale not in LOCALES:
        raise UsageFailure(f"--locale {locale!r}: expected one of {', '.join(LOCALES)}")
    if outcome is not None and outcome not in TURN_OUTCOMES:
        raise UsageFailure(f"--outcome {outcome!r}: expected one of {', '.join(TURN_OUTCOMES)}")
    if turn is not None and codex_events is None:
        raise UsageFailure("--turn needs --codex-events")
    if touched_only and not as_json:
        raise UsageFailure("--touched-only goes with --json (it chooses what `world` holds)")
    return sender


def read_turn(
    file: str | None, outcome: str | None, codex_events: Path | None, turn: str | None
) -> tuple[str, str]:
    """(the turn's text, its outcome): from FILE / stdin, or from a Codex event stream."""
    if codex_events is not None:
        if file is not None:
            raise UsageFailure("give either a transcript FILE or --codex-events, not both")
        if outcome is not None:
            raise UsageFailure(
                "--outcome cannot be combined with --codex-events (its turn status is the outcome)"
            )
        return codex_turn(codex_events, turn)
    if file is None:
        raise UsageFailure("give the turn's transcript FILE (- for stdin) or --codex-events FILE")
    return read_text(file), outcome or "completed"


def run_deliver(
    *,
    file: str | None,
    world: Path | None,
    db: Path | str | None,
    sender: str | None,
    outcome: str | None,
    locale: str,
    as_json: bool,
    worktrees: Path | None,
    host: str | None,
    executor: str,
    codex_events: Path | None,
    turn: str | None,
    touched_only: bool = False,
    turn_id: str | None = None,
    deadline: float | None = DEFAULT_DELIVERY_DEADLINE,
) -> None:
    """`markertools deliver` after option parsing: read the turn, open the store, deliver
    through a TouchRecorder (what changed comes from what the delivery wrote, never from
    exporting the database twice) and print the report (or the --json document)."""
    sender = check_options(
        sender=sender,
        world=world,
        db=db,
        locale=locale,
        outcome=outcome,
        turn=turn,
        codex_events=codex_events,
        touched_only=touched_only,
        as_json=as_json,
    )
    text, turn_outcome = read_turn(file, outcome, codex_events, turn)
    files = make_files(worktrees, host or socket.gethostname()) if worktrees is not None else None
    kill = make_executor(executor)

    if turn_id is not None and not turn_id.strip():
        raise UsageFailure("--turn-id must not be blank")
    if deadline is not None and not (deadline >= 0 and deadline != float("inf")):
        raise UsageFailure("--deadline SECONDS must be a finite number >= 0 (or none)")
    clock: VirtualClock | SystemClock
    if world is not None:
        loaded = load_world_path(world)
        store, now = fresh_store(loaded), loaded.now
        clock = VirtualClock(now)
    else:
        assert db is not None
        store = open_db(db)
        now = time.time()
        clock = SystemClock()  # real time: polls and waits really wait (fix (e), issue 18)
    try:
        if store.get_task(sender) is None:
            raise UsageFailure(f"--sender {sender}: no such task")
        recorder = TouchRecorder(store)
        line = wait_line(text, sender, clock, deadline) if show_waiting(world, as_json) else None
        ports = store_ports(
            recorder,
            clock=clock if line is None else line.watched,
            random=SystemRandom(),
            executor=kill,
            files=files,
            waiter=line,  # Rule 5: the status line sees every round of a poll or wait
        )
        try:
            with line if line is not None else contextlib.nullcontext():
                report = deliver_turn(
                    text,
                    sender=sender,
                    outcome=turn_outcome,
                    ports=ports,
                    locale=locale,
                    turn_id=turn_id,
                    deadline=deadline,
                )
        except ValueError as exc:  # TRN-10: a value the library refuses
            raise UsageFailure(str(exc)) from None
        except KeyboardInterrupt:  # Rule 1: Ctrl-C is one line and exit 130
            finished = [
                f"{a.kind} → {a.target}" if a.target else a.kind
                for a in recorder.audit
                if a.outcome == "done"
            ]
            sys.stderr.write(interrupted_line(turn_id, finished) + "\n")
            raise typer.Exit(INTERRUPTED) from None
        touched = touched_world(recorder, clock.now())
        changes = touched_changes(recorder, now, touched, virtual=world is not None)
        full = store.export_world(clock.now()) if as_json and not touched_only else None
    finally:
        close_store(store)
    if as_json:
        after = full if full is not None else touched
        scope = "full" if full is not None else "touched"
        emit_json(deliver_json(report, after, changes=changes, world_scope=scope))
    else:
        sys.stdout.write(report_text(sender, report, changes, recorder.audit) + "\n")
    if not report.report_queued:  # TRN-9: the agent has not heard what its turn did
        sys.stderr.write(f"markertools: the report was not queued: {report.report_error}\n")
        raise typer.Exit(REPORT_NOT_QUEUED)


__all__ = [
    "deliver_command",
    "deliver_json",
    "entries_json",
    "human_output",
    "interrupted_line",
    "parse_deadline",
    "report_text",
    "run_deliver",
]
