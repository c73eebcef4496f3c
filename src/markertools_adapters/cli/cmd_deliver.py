# Owns: `markertools deliver` (docs/cli.md): read one turn (a transcript file, stdin, or a Codex
# event stream), open a store (a world file loaded fresh, or an existing database), deliver
# the turn as the sender with a virtual clock, print the report and what changed (or the
# `deliver --json` document). Thin: options -> library calls -> output.
#
# Invariants:
#   Rule 1: every usage error or unreadable input is one stderr line and exit 2; skipped
#           or rejected blocks are still success (exit 0); never a traceback.
#   Rule 2: time is virtual (VirtualClock from the world's `now`): waits finish at once.
#   Rule 3: optional adapters (SQLite, executors, worktrees, Codex) are imported lazily,
#           so a missing one is a clear usage error, never an import crash.
from __future__ import annotations

import importlib
import socket
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from markertools import deliver_turn
from markertools.deliver.report import DeliveryReport
from markertools.domain.model import TURN_OUTCOMES
from markertools.domain.ports import TaskExecutor, TaskFiles
from markertools.text.msg import LOCALES
from markertools_adapters.cli._app import UsageFailure, app, emit_json, fail
from markertools_adapters.clock import SystemRandom, VirtualClock
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World, WorldFileError, loads_world, world_to_json
from markertools_adapters.worlddiff import world_changes


def read_text(source: str, label: str | None = None) -> str:
    """A transcript: a file path, or `-` for stdin; UTF-8 (a BOM is dropped). Errors name
    `label` (default: the source itself)."""
    shown = source if label is None else label
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as exc:
        raise UsageFailure(f"{shown}: cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageFailure(f"{shown}: not UTF-8 text (byte {exc.start})") from None


def load_world_path(path: Path, label: str | None = None) -> World:
    """The world file at `path` (`-` = stdin); errors name `label` (default: the path)."""
    shown = str(path) if label is None else label
    text = read_text(str(path), shown)
    try:
        return loads_world(text)
    except WorldFileError as exc:
        raise UsageFailure(f"{shown}: {exc}") from None


def fresh_store(world: World) -> Any:
    """The store a `--world` run delivers against: a fresh embedded SQLite database (in
    memory) holding the world."""
    from markertools_adapters.sqlite import create_store_from_world

    try:
        return create_store_from_world(world)
    except ValueError as exc:  # e.g. an integer beyond SQLite's 64 bits
        raise UsageFailure(f"world: cannot be stored: {exc}") from None


def open_db(path: Path | str) -> Any:
    """An existing database - a SQLite file or a postgresql:// URL (it is changed)."""
    from markertools_adapters.stores import is_postgres_url, redact
    from markertools_adapters.stores import open_db as open_any_db

    if not is_postgres_url(path) and not Path(path).exists():
        raise UsageFailure(f"--db {path}: no such database (create one with `world load`)")
    try:
        return open_any_db(path, must_exist=True)
    except ImportError as exc:
        raise UsageFailure(f"--db: storage adapter not available in this build ({exc})") from None
    except Exception as exc:
        raise UsageFailure(f"--db {redact(path)}: cannot open: {exc}") from None


def make_executor(name: str) -> TaskExecutor:
    try:
        executors = importlib.import_module("markertools_adapters.executors")
    except ImportError:
        raise UsageFailure(
            f"--executor {name}: executors are not available in this build"
        ) from None
    try:
        executor: TaskExecutor = executors.make_executor(name)
    except Exception as exc:
        raise UsageFailure(f"--executor {name}: {exc}") from None
    return executor


def make_files(root: Path, host: str) -> TaskFiles:
    if not root.is_dir():
        raise UsageFailure(f"--worktrees {root}: not a directory")
    try:
        worktrees = importlib.import_module("markertools_adapters.worktrees")
    except ImportError:
        raise UsageFailure(
            "--worktrees: the worktree reader is not available in this build"
        ) from None
    files: TaskFiles = worktrees.WorktreeFiles(root, host)
    return files


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


def deliver_json(report: DeliveryReport, after: World) -> dict[str, Any]:
    """The `deliver --json` document (docs/cli.md)."""
    return {
        "delivered": report.delivered,
        "entries": entries_json(report),
        "message": report.message,
        "followups": list(report.followups),
        "world": world_to_json(after),
    }


def close_store(store: Any) -> None:
    """Close `store` if it holds a connection (MemoryStore has nothing to close)."""
    close = getattr(store, "close", None)
    if callable(close):
        close()


def human_output(sender: str, report: DeliveryReport, before: World, after: World) -> str:
    lines: list[str] = []
    if report.delivered:
        lines.append(f"Report queued for {sender}:")
        lines.append("")
        lines.append(report.message or "")
    else:
        discards = [a for a in after.audit[len(before.audit) :] if a.outcome == "discarded"]
        why = discards[-1].reason if discards else "nothing ran"
        lines.append(f"Not delivered: {why}")
    lines.append("")
    changes = world_changes(before, after)
    lines.append("What changed:" if changes else "What changed: nothing")
    lines += [f"  {line}" for line in changes]
    return "\n".join(lines)


@app.command("deliver")
def deliver_command(
    file: Annotated[str | None, typer.Argument(help="The turn's text (a file; - = stdin).")] = None,
    world: Annotated[Path | None, typer.Option("--world", help="World file to load fresh.")] = None,
    db: Annotated[
        str | None,
        typer.Option("--db", help="Existing SQLite database or postgresql:// URL (changed)."),
    ] = None,
    sender: Annotated[
        str | None, typer.Option("--sender", help="The task that wrote the turn.")
    ] = None,
    outcome: Annotated[
        str | None,
        typer.Option(
            "--outcome",
            help=f"How the turn ended: {', '.join(TURN_OUTCOMES)} (default completed).",
        ),
    ] = None,
    locale: Annotated[str, typer.Option("--locale", help="Report language: en or zh.")] = "en",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the deliver --json document.")
    ] = False,
    worktrees: Annotated[
        Path | None, typer.Option("--worktrees", help="Root of the task worktrees (task-files).")
    ] = None,
    host: Annotated[
        str | None,
        typer.Option("--host", help="The local host for task-files (default: hostname)."),
    ] = None,
    executor: Annotated[str, typer.Option("--executor", help="noop (default) or local.")] = "noop",
    codex_events: Annotated[
        Path | None, typer.Option("--codex-events", help="Codex app-server events (JSONL).")
    ] = None,
    turn: Annotated[
        str | None, typer.Option("--turn", help="Codex turn id (default: the last completed).")
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
        )
    except UsageFailure as exc:
        fail(str(exc))


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
) -> None:
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
    if codex_events is not None:
        if file is not None:
            raise UsageFailure("give either a transcript FILE or --codex-events, not both")
        if outcome is not None:
            raise UsageFailure(
                "--outcome cannot be combined with --codex-events (its turn status is the outcome)"
            )
        text, outcome = codex_turn(codex_events, turn)
    elif file is None:
        raise UsageFailure("give the turn's transcript FILE (- for stdin) or --codex-events FILE")
    else:
        text = read_text(file)
    files = make_files(worktrees, host or socket.gethostname()) if worktrees is not None else None
    kill = make_executor(executor)

    recorded: float | None = None  # the virtual time a `world load` database keeps
    if world is not None:
        loaded = load_world_path(world)
        store, now = fresh_store(loaded), loaded.now
    else:
        assert db is not None
        store = open_db(db)
        recorded = store.world_now()
        now = recorded if recorded is not None else time.time()
    try:
        if store.get_task(sender) is None:
            raise UsageFailure(f"--sender {sender}: no such task")
        clock = VirtualClock(now)
        ports = store_ports(store, clock=clock, random=SystemRandom(), executor=kill, files=files)
        before = store.export_world(clock.now())
        report = deliver_turn(
            text, sender=sender, outcome=outcome or "completed", ports=ports, locale=locale
        )
        after = store.export_world(clock.now())
        if db is not None and recorded is not None:
            store.set_world_now(clock.now())
    finally:
        close_store(store)
    if as_json:
        emit_json(deliver_json(report, after))
    else:
        sys.stdout.write(human_output(sender, report, before, after) + "\n")


__all__ = ["deliver_command", "run_deliver"]
