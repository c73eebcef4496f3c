# Owns: `markertools world load WORLD.json --db PATH` (a NEW SQLite database from a world
# file) and `markertools world dump --db PATH` (the database's content as a world file).
# Thin: options -> markertools_adapters.sqlite / world -> output.
#
# Must never: overwrite or change an existing file on `load` (refused before anything is
# written; a failed load removes the new file again); create a database on `dump`.
#
# Invariants:
#   Rule 1: `world load W --db P` then `world dump --db P` prints the canonical form of W
#           (records in canonical order; `now` kept): it loads back to an equal World.
#   Rule 2: every failure is one stderr line and exit 2, never a traceback.
from __future__ import annotations

import sqlite3
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from markertools_adapters.cli._app import UsageFailure, fail, world_app
from markertools_adapters.world import World, dumps_world


def _plural(name: str) -> str:
    return name[:-1] + "ies" if name.endswith("y") else name + "s"


def _summary(world: World) -> str:
    counts = [
        (len(world.projects), "project"),
        (len(world.tasks), "task"),
        (len(world.todos), "todo"),
        (len(world.automations), "automation"),
        (len(world.permissions), "permission entry"),
        (len(world.costs), "cost row"),
        (len(world.quotas), "quota"),
        (len(world.attempts), "attempt"),
        (len(world.audit), "audit record"),
        (len(world.followups), "follow-up"),
    ]
    parts = [f"{n} {name if n == 1 else _plural(name)}" for n, name in counts if n]
    return ", ".join(parts) if parts else "an empty world"


def load_command(world_file: Path, db: Path | str) -> str:
    """Create `db` (a file, or a postgresql:// URL's empty schema) from `world_file`;
    returns the confirmation line."""
    from markertools_adapters.cli.cmd_deliver import load_world_path
    from markertools_adapters.stores import create_db_from_world, is_postgres_url, redact

    url = is_postgres_url(db)
    if not url and (Path(db).exists() or Path(db).is_symlink()):
        raise UsageFailure(
            f"--db {db}: already exists; `world load` only creates new databases "
            "(use `deliver --db` to change an existing one)"
        )
    world = load_world_path(world_file)
    try:
        store = create_db_from_world(world, db)
    except FileExistsError as exc:
        raise UsageFailure(f"--db {db}: {exc}") from None
    except (ValueError, TypeError, sqlite3.Error, OSError) as exc:
        raise UsageFailure(f"{world_file}: cannot be stored: {exc}") from None
    except Exception as exc:  # PostgreSQL: server unreachable, schema refused, ...
        raise UsageFailure(f"--db {redact(db)}: {exc}") from None
    store.close()
    return f"created {redact(db)} from {world_file}: {_summary(world)}"


def dump_command(db: Path | str) -> str:
    """The world file text of `db` (an existing markertools database: a file or a
    postgresql:// URL)."""
    from markertools_adapters.stores import is_postgres_url, open_db, redact

    if not is_postgres_url(db) and not Path(db).is_file():
        raise UsageFailure(f"--db {db}: no such database file")
    try:
        store: Any = open_db(db, must_exist=True)
    except Exception as exc:  # sqlite3 / psycopg errors, a refused schema
        raise UsageFailure(f"--db {redact(db)}: cannot open: {exc}") from None
    try:
        recorded = store.world_now()
        world = store.export_world(recorded if recorded is not None else time.time())
    except Exception as exc:
        raise UsageFailure(f"--db {redact(db)}: cannot read: {exc}") from None
    finally:
        store.close()
    return dumps_world(world)


@world_app.command("load")
def world_load(
    world_file: Annotated[Path, typer.Argument(help="The world file (JSON) to load.")],
    db: Annotated[
        str,
        typer.Option("--db", help="The NEW database file (or an empty postgresql:// schema)."),
    ],
) -> None:
    """Create a new SQLite database from a world file (an existing PATH is refused)."""
    try:
        line = load_command(world_file, db)
    except UsageFailure as exc:
        fail(str(exc))
    sys.stdout.write(line + "\n")


@world_app.command("dump")
def world_dump(
    db: Annotated[
        str, typer.Option("--db", help="The database to print (a file or a postgresql:// URL).")
    ],
) -> None:
    """Print the database's content as a world file (same shape; round-trips exactly)."""
    try:
        text = dump_command(db)
    except UsageFailure as exc:
        fail(str(exc))
    sys.stdout.write(text + "\n")


__all__ = ["dump_command", "load_command", "world_dump", "world_load"]
