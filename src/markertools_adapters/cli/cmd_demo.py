# Owns: `markertools demo` - the first thing a new user runs: the bundled world
# (data/demo_world.json: a project, a small task lineage, todos, quotas, permissions, an
# automation, costs) is loaded into a fresh SQLite database, the bundled turn
# (data/demo_turn.md) is delivered as its lead task, and the report and what changed are
# printed exactly as `deliver` prints them.
#
# Must never: depend on the machine it runs on: time is a VirtualClock starting at the
# world's `now`, ids and nonces come from a SeededRandom, kills go to the no-op executor,
# so two runs print the same bytes.
#
# Invariants:
#   Rule 1: the demo uses the same library calls as `deliver --world` (deliver_turn over
#           store_ports(SqliteStore)); it is a showcase, not a second code path.
#   Rule 3: `--live` is the worker story on the real Codex CLI, or Claude Code with
#           `--engine claude-code` (cli/_demo_live.py, cli/_demo_claude.py).
#   Rule 2: `--keep PATH` writes the resulting database to a NEW file (an existing PATH
#           is refused before anything runs) so `world dump --db PATH` can inspect it.
from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Final

import typer

from markertools import LOCALES, DeliveryReport, FiredRun, deliver_turn, fire_due_automations
from markertools_adapters.cli._app import UsageFailure, app, fail
from markertools_adapters.cli._io import emit_json, make_parent_dirs
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World, loads_world

DEMO_SENDER: Final[str] = "t-lead"
DEMO_SEED: Final[int] = 20261229
WORLD_RESOURCE: Final[str] = "demo_world.json"
TURN_RESOURCE: Final[str] = "demo_turn.md"


def bundled_text(name: str) -> str:
    return (resources.files("markertools_adapters") / "data" / name).read_text(encoding="utf-8")


def demo_world() -> World:
    return loads_world(bundled_text(WORLD_RESOURCE))


def demo_turn() -> str:
    return bundled_text(TURN_RESOURCE)


def run_demo(
    *, locale: str = "en", keep: Path | None = None
) -> tuple[DeliveryReport, World, World]:
    """Deliver the bundled turn on the bundled world, then fire the due automations;
    returns (report, before, after)."""
    report, before, after, _ = run_demo_with_automations(locale=locale, keep=keep)
    return report, before, after


def run_demo_with_automations(
    *, locale: str = "en", keep: Path | None = None
) -> tuple[DeliveryReport, World, World, tuple[FiredRun, ...]]:
    """`run_demo` plus what `fire_due_automations` made of each due automation (SCH-6):
    the automation the turn registers is due at once and fires after the delivery."""
    from markertools_adapters.sqlite import create_store_from_world

    if keep is not None and (keep.exists() or keep.is_symlink()):
        raise UsageFailure(f"--keep {keep}: already exists (the demo only writes new files)")
    if keep is not None:
        make_parent_dirs(keep, "--keep")
    world = demo_world()
    store: Any = create_store_from_world(world, keep if keep is not None else ":memory:")
    try:
        clock = VirtualClock(world.now)
        ports = store_ports(
            store, clock=clock, random=SeededRandom(DEMO_SEED), executor=NoopExecutor()
        )
        before = store.export_world(clock.now())
        report = deliver_turn(
            demo_turn(), sender=DEMO_SENDER, outcome="completed", ports=ports, locale=locale
        )
        fired = fire_due_automations(ports, clock.now())
        after = store.export_world(clock.now())
        store.set_world_now(clock.now())
    finally:
        store.close()
    return report, before, after, fired


def _intro(world: World) -> str:
    project = world.projects[0].name if world.projects else "?"
    return (
        f"markertools demo: project {project!r} with {len(world.tasks)} tasks, "
        f"{len(world.todos)} todos and {len(world.automations)} automation, loaded into a "
        f"fresh SQLite database. Task {DEMO_SENDER} just finished a turn (print it with "
        "`markertools demo --print-turn`); its marker blocks are delivered now, with virtual "
        "time (the 60-second wait finishes at once).\n"
        "Things to notice: the cancel of t-bob is rejected (another user's task, outside "
        f"{DEMO_SENDER}'s lineage); the block with invalid JSON and the near-miss fence "
        "'Task-Cancel' are skipped with their reasons; the task-cancel inside a quote never "
        "runs and is not in the report; the 'IGNORE PREVIOUS INSTRUCTIONS' line that t-docs "
        "wrote only ever appears inside data delimiters. After the delivery, the "
        "automation the turn registered is due and fires once: `markertools automations "
        "fire` creates its task (SCH-6).\n"
    )


@app.command("demo")
def demo_command(
    locale: Annotated[str, typer.Option("--locale", help="Report language: en or zh.")] = "en",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the deliver --json document.")
    ] = False,
    keep: Annotated[
        Path | None,
        typer.Option("--keep", help="Also write the resulting database to this NEW file."),
    ] = None,
    print_turn: Annotated[
        bool, typer.Option("--print-turn", help="Print the bundled turn's text and exit.")
    ] = False,
    print_world: Annotated[
        bool, typer.Option("--print-world", help="Print the bundled world file and exit.")
    ] = False,
    live: Annotated[
        bool,
        typer.Option(
            "--live",
            help="Run a lead task and its two children on the real Codex CLI (or Claude "
            "Code: --engine), offline, with the worker host (--keep is then a NEW directory).",
        ),
    ] = False,
    codex_bin: Annotated[
        str | None,
        typer.Option("--codex-bin", help="--live: the codex executable (default: pinned install)."),
    ] = None,
    engine: Annotated[
        str,
        typer.Option("--engine", help="--live: codex or claude-code (the engine of the story)."),
    ] = "codex",
    claude_bin: Annotated[
        str | None,
        typer.Option("--claude-bin", help="--live --engine claude-code: the claude executable."),
    ] = None,
) -> None:
    """Deliver a bundled turn against a bundled world, end to end (start here).

    Prints the report queued for the sender and what changed in the world."""
    if live:
        if as_json or print_turn or print_world:
            fail("--live: --json, --print-turn and --print-world belong to the canned demo")
        from markertools_adapters.cli._demo_live import main_live

        raise typer.Exit(main_live(codex_bin, keep, engine, claude_bin))
    if print_turn or print_world:
        sys.stdout.write(demo_turn() if print_turn else bundled_text(WORLD_RESOURCE))
        return
    if locale not in LOCALES:
        fail(f"--locale {locale!r}: expected one of {', '.join(LOCALES)}")
    from markertools_adapters.cli.cmd_deliver import deliver_json, human_output

    try:
        report, before, after, fired = run_demo_with_automations(locale=locale, keep=keep)
    except UsageFailure as exc:
        fail(str(exc))
    from markertools_adapters.cli.cmd_automations import fired_json

    if as_json:
        emit_json(
            {**deliver_json(report, after), "automations_fired": [fired_json(r) for r in fired]}
        )
        return
    sys.stdout.write(_intro(before) + "\n")
    sys.stdout.write(human_output(DEMO_SENDER, report, before, after) + "\n")
    sys.stdout.write("\nAutomations fired after the delivery (markertools automations fire):\n")
    for run in fired:
        sys.stdout.write(f"  {run.automation_id}: {run.result}: {run.reason.render(locale)}\n")
    if keep is not None:
        sys.stdout.write(f"\nThe database is kept at {keep}: markertools world dump --db {keep}\n")


__all__ = ["demo_command", "demo_turn", "demo_world", "run_demo", "run_demo_with_automations"]
