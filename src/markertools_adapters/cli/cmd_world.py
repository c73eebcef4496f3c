# Owns: `markertools world load WORLD.json --db PATH` (a NEW SQLite database from a world
# file), `world load --merge WORLD.json --db PATH` (add a world to an existing SQLite
# database) and `markertools world dump --db PATH` (the database's content as a world
# file). Thin: options -> markertools_adapters.sqlite / world -> output.
#
# Must never: overwrite or change an existing file on `load` without `--merge` (refused
# before anything is written; a failed load removes the new file again); change
# anything on a `--merge` that conflicts; create a database on `dump`.
#
# Invariants:
#   Rule 1: `world load W --db P` then `world dump --db P` prints the canonical form of W
#           (records in canonical order; `now` kept): it loads back to an equal World.
#   Rule 2: every failure is one stderr line and exit 2, never a traceback.
from __future__ import annotations

import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from markertools_adapters.cli._app import UsageFailure, fail, world_app
from markertools_adapters.cli._io import db_location, make_parent_dirs
from markertools_adapters.errors import StoreError, StoreUnavailable
from markertools_adapters.world import World, WorldFileError, dumps_world, merge_worlds


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
    from markertools_adapters._sql import SchemaError
    from markertools_adapters.cli._io import load_world_path
    from markertools_adapters.stores import create_db_from_world, is_postgres_url, redact

    db = db_location(db)
    url = is_postgres_url(db)
    if not url and (Path(db).exists() or Path(db).is_symlink()):
        raise UsageFailure(
            f"--db {db}: already exists; `world load` only creates new databases "
            "(add a world to it with `world load --merge`; `deliver --db` changes it)"
        )
    world = load_world_path(world_file)
    if not url:
        make_parent_dirs(Path(db), "--db")  # load creates the database, and its directory
    try:
        store = create_db_from_world(world, db)
    except FileExistsError as exc:
        raise UsageFailure(f"--db {db}: {exc}") from None
    except (SchemaError, StoreUnavailable) as exc:  # the database, not the world
        raise UsageFailure(f"--db {redact(db)}: {exc}") from None
    except (ValueError, TypeError, sqlite3.Error, StoreError, OSError) as exc:
        raise UsageFailure(f"{world_file}: cannot be stored: {exc}") from None
    except Exception as exc:  # PostgreSQL: server unreachable, schema refused, ...
        raise UsageFailure(f"--db {redact(db)}: {exc}") from None
    store.close()
    return f"created {redact(db)} from {world_file}: {_summary(world)}"


def merge_command(world_file: Path, db: Path | str) -> str:
    """Add the records of `world_file` to the existing SQLite database `db` (Rule 6 of
    markertools_adapters.world): a record already there with the same content is kept
    once; any id there with different content refuses the whole merge, listing them.

    The new records are first written to a fresh temporary database by the SQLite store
    itself (so they are encoded exactly as a `world load` would), then copied into `db`
    table by table inside ONE write transaction (`BEGIN IMMEDIATE`, ATTACH): `db` is
    either unchanged or fully merged, and its other tables are never touched. The
    database keeps its own virtual time (`now`)."""
    from markertools_adapters._sql._world import WORLD_TABLES
    from markertools_adapters.cli._io import load_world_path
    from markertools_adapters.stores import create_db_from_world, is_postgres_url, open_db, redact

    db = db_location(db)
    if is_postgres_url(db):
        raise UsageFailure(
            f"--db {redact(db)}: --merge works on SQLite files (for PostgreSQL, merge the "
            "world files and load the result into an empty schema)"
        )
    path = Path(db)
    if not path.is_file():
        raise UsageFailure(f"--db {db}: no such database file (without --merge, load creates one)")
    extra = load_world_path(world_file)
    try:
        store: Any = open_db(path, must_exist=True)  # also migrates it to this version
    except Exception as exc:
        raise UsageFailure(f"--db {db}: cannot open: {exc}") from None
    try:
        recorded = store.world_now()
        base = store.export_world(recorded if recorded is not None else time.time())
    finally:
        store.close()
    try:
        _, added = merge_worlds(base, extra)
    except WorldFileError as exc:
        raise UsageFailure(f"{world_file}: cannot be merged into {db}: {exc}") from None
    if added == World(now=added.now):
        return f"{db} already holds every record of {world_file}: nothing added"
    with tempfile.TemporaryDirectory(prefix="markertools-merge-") as scratch:
        staged = Path(scratch) / "added.db"
        try:
            create_db_from_world(added, staged).close()
            _copy_tables(staged, path, WORLD_TABLES)
        except (ValueError, TypeError, sqlite3.Error, StoreError, OSError) as exc:
            raise UsageFailure(f"{world_file}: cannot be merged into {db}: {exc}") from None
    return f"merged {world_file} into {db}: added {_summary(added)}"


def _copy_tables(source: Path, target: Path, tables: tuple[str, ...]) -> None:
    """Append every row of `tables` in `source` to the same tables of `target`, in one
    transaction; integer primary keys (sequence numbers) are left to `target`."""
    conn = sqlite3.connect(target, isolation_level=None, timeout=30)
    try:
        conn.execute("ATTACH DATABASE ? AS staged", (str(source),))
        conn.execute("BEGIN IMMEDIATE")
        try:
            for table in tables:
                columns = [
                    f'"{name}"'
                    for _, name, kind, _, _, pk in conn.execute(
                        f"PRAGMA staged.table_info({table})"
                    )
                    if not (pk == 1 and kind.upper() == "INTEGER")
                ]
                if columns:
                    listed = ", ".join(columns)
                    conn.execute(
                        f"INSERT INTO main.{table} ({listed}) SELECT {listed} FROM staged.{table}"
                    )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("DETACH DATABASE staged")
    finally:
        conn.close()


def dump_command(db: Path | str) -> str:
    """The world file text of `db` (an existing markertools database: a file or a
    postgresql:// URL)."""
    from markertools_adapters.stores import is_postgres_url, open_db, redact

    db = db_location(db)
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
    world_file: Annotated[
        Path, typer.Argument(help="The world file (JSON) to load.", metavar="WORLD.json")
    ],
    db: Annotated[
        str,
        typer.Option(
            "--db",
            help="The NEW database file (or an empty postgresql:// schema); with --merge, "
            "an existing SQLite database.",
            metavar="PATH|URL",
        ),
    ],
    merge: Annotated[
        bool,
        typer.Option(
            "--merge",
            help="Add the world to an existing database (refused, with the list, when an "
            "id exists there with different content).",
        ),
    ] = False,
) -> None:
    """Create a new SQLite database from a world file (an existing PATH is refused, unless
    --merge adds the world to it)."""
    try:
        line = merge_command(world_file, db) if merge else load_command(world_file, db)
    except UsageFailure as exc:
        fail(str(exc))
    sys.stdout.write(line + "\n")


@world_app.command("dump")
def world_dump(
    db: Annotated[
        str,
        typer.Option(
            "--db",
            help="The database to print (a file or a postgresql:// URL).",
            metavar="PATH|URL",
        ),
    ],
) -> None:
    """Print the database's content as a world file (same shape; round-trips exactly)."""
    try:
        text = dump_command(db)
    except UsageFailure as exc:
        fail(str(exc))
    sys.stdout.write(text + "\n")


__all__ = ["dump_command", "load_command", "merge_command", "world_dump", "world_load"]
