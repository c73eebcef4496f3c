# Owns: `markertools prompt` (docs/cli.md): show exactly what a task will be told on a claim -
# load the world (or open a database read-only in effect), gather the injection inputs
# through the ports and print the assembled first-turn prompt (and goal, for goal tasks).
# Thin: options -> markertools_adapters.first_turn -> output.
#
# Invariants:
#   Rule 1: stdout carries the prompt verbatim (goal tasks: the prompt, then the goal after
#           a "--- goal ---" line); why a section is absent goes to stderr as "note:" lines,
#           so `markertools prompt ... > file` captures exactly the prompt.
#   Rule 2: usage errors (unknown task, bad option, unreadable world) are one stderr line
#           and exit 2, never a traceback.
#   Rule 3: nothing is written to the world or database.
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from markertools import LOCALES, START_KINDS, FirstTurnPrompt
from markertools_adapters.cli._app import UsageFailure, app, fail
from markertools_adapters.cli._io import close_store, emit_json, load_world_path, open_db
from markertools_adapters.clock import SystemRandom
from markertools_adapters.first_turn import first_turn_prompt

GOAL_SEPARATOR = "--- goal ---"


def _read_world_store(path: Path) -> Any:
    from markertools_adapters.memory import MemoryStore

    return MemoryStore.from_world(load_world_path(path, f"--world {path}"))


def prompt_json(task_id: str, start: str, locale: str, out: FirstTurnPrompt) -> dict[str, Any]:
    return {
        "task": task_id,
        "start": start,
        "locale": locale,
        "prompt": out.prompt,
        "goal": out.goal,
        "sections": list(out.sections),
        "notes": [n.render(locale) for n in out.notes],
    }


def run_prompt(
    *,
    world: Path | None,
    db: Path | str | None,
    task_id: str | None,
    start: str,
    locale: str,
    memory: list[str],
    as_json: bool,
) -> None:
    if task_id is None or not task_id.strip():
        raise UsageFailure("--task ID is required (the task whose first-turn prompt to show)")
    if start not in START_KINDS:
        raise UsageFailure(f"--start {start!r}: expected one of {', '.join(START_KINDS)}")
    if locale not in LOCALES:
        raise UsageFailure(f"--locale {locale!r}: expected one of {', '.join(LOCALES)}")
    if world is not None and db is None:
        store = _read_world_store(world)
    elif db is not None and world is None:
        store = open_db(db)
    else:
        raise UsageFailure("give exactly one of --world WORLD.json or --db PATH")
    try:
        task = store.get_task(task_id)
        if task is None:
            raise UsageFailure(f"--task {task_id}: no such task")
        out = first_turn_prompt(
            task,
            start,
            projects=store,
            todos=store,
            attempts=store,
            random=SystemRandom(),
            memory=memory,
            locale=locale,
        )
    finally:
        close_store(store)
    if as_json:
        emit_json(prompt_json(task_id, start, locale, out))
        return
    for note in out.notes:
        sys.stderr.write("note: " + " ".join(note.render(locale).split()) + "\n")
    text = out.prompt
    if out.goal is not None:
        text = f"{text}\n{GOAL_SEPARATOR}\n{out.goal}"
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


@app.command("prompt")
def prompt_command(
    world: Annotated[
        Path | None, typer.Option("--world", help="World file to read (- = stdin).")
    ] = None,
    task: Annotated[str | None, typer.Option("--task", help="The task being claimed.")] = None,
    start: Annotated[
        str,
        typer.Option(
            "--start",
            help=(
                "How the task starts (what `claim_task` says): fresh (first claim), retry "
                "(after a task-retry or other manual retry), resume (after a platform "
                "restart), continuation, checkpoint or manual; only fresh, retry and resume "
                "get an injection."
            ),
        ),
    ] = "fresh",
    locale: Annotated[str, typer.Option("--locale", help="Language: en or zh.")] = "en",
    memory: Annotated[
        list[str] | None,
        typer.Option("--memory", help="A memory snippet to inject (repeatable)."),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            "--db", help="Existing SQLite database or postgresql:// URL instead of --world."
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print prompt, goal, sections and notes as JSON.")
    ] = False,
) -> None:
    """Print the assembled first-turn prompt for TASK (what it is told when claimed)."""
    try:
        run_prompt(
            world=world,
            db=db,
            task_id=task,
            start=start,
            locale=locale,
            memory=list(memory or ()),
            as_json=as_json,
        )
    except UsageFailure as exc:
        fail(str(exc))


__all__ = ["prompt_command", "run_prompt"]
