# Owns: the input and output helpers the command modules share: reading a turn or world
# file (or stdin) as UTF-8, loading a world file, opening the store a command works on (a
# fresh in-memory SQLite database holding a world, or an existing SQLite file /
# postgresql:// URL) and closing it, what a `--db` value names (`db_location`: one
# reading of SQLite paths, sqlite:/// and postgresql:// URLs for every command), building the executor and worktree reader of
# `--executor` / `--worktrees`, creating the directories above a database file about to
# be created, and printing a JSON document.
#
# Must never: print anything but the JSON it is asked to print; turn a failure into a
# traceback (an unreadable input, a refused database or a missing optional adapter is a
# UsageFailure: one stderr line and exit 2); import an optional adapter (SQLite,
# PostgreSQL, executors, worktrees) before a command asks for it.
from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markertools import TaskExecutor, TaskFiles
from markertools_adapters.cli._app import UsageFailure

if TYPE_CHECKING:
    from markertools_adapters.world import World


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
    from markertools_adapters.world import WorldFileError, loads_world

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


DB_FORMS = "a SQLite file path, sqlite:///PATH, or a postgresql:// (postgres://) URL"
_PASSWORD_IN_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:/@]*):[^@/]*@")


def db_location(db: Path | str, option: str = "--db") -> Path | str:
    """What a `--db` value names: a SQLite file (a plain path or `sqlite:///PATH`) as a
    Path, or a PostgreSQL URL as the text. Any other URL scheme (`mysql://`), `memory:`
    (an in-memory store starts empty and ends with the command) or a blank value is a
    UsageFailure naming the forms markertools reads - never a file of that name."""
    from markertools_adapters.opener import database_kind

    if isinstance(db, Path):
        return db
    if not db.strip():
        raise UsageFailure(f"{option}: no database named; give {DB_FORMS}")
    shown = _PASSWORD_IN_URL.sub(r"\1:***@", db)
    try:
        kind, target = database_kind(db)
    except ValueError as exc:
        scheme = db.split("://", 1)[0]
        if scheme.lower() != "sqlite":
            raise UsageFailure(
                f"{option} {shown}: unsupported database URL scheme {scheme!r}; markertools "
                f"stores its data in SQLite or PostgreSQL: give {DB_FORMS}"
            ) from None
        raise UsageFailure(f"{option} {exc}") from None  # sqlite://PATH: the three slashes
    if kind == "memory" or target == ":memory:":
        raise UsageFailure(
            f"{option} {db} is an in-memory database: it starts empty and ends with the "
            f"command; give {DB_FORMS}"
        )
    return target if kind == "postgres" else Path(target)


def open_db(path: Path | str) -> Any:
    """An existing database - a SQLite file or a postgresql:// URL (it is changed)."""
    from markertools_adapters.stores import is_postgres_url, redact
    from markertools_adapters.stores import open_db as open_any_db

    path = db_location(path)
    if not is_postgres_url(path) and not Path(path).exists():
        raise UsageFailure(f"--db {path}: no such database (create one with `world load`)")
    try:
        return open_any_db(path, must_exist=True)
    except ImportError as exc:
        raise UsageFailure(f"--db: storage adapter not available in this build ({exc})") from None
    except Exception as exc:
        raise UsageFailure(f"--db {redact(path)}: cannot open: {exc}") from None


@contextmanager
def opened_store(db: str) -> Iterator[Any]:
    """An existing database for one command (approvals, automations), closed after;
    anything that stops it opening is one `--db ...: cannot open: ...` line."""
    from markertools_adapters.stores import open_db as open_any_db
    from markertools_adapters.stores import redact

    location = db_location(db)
    try:
        store: Any = open_any_db(location, must_exist=True)
    except Exception as exc:  # sqlite3 / psycopg errors, a refused schema, a missing file
        raise UsageFailure(f"--db {redact(db)}: cannot open: {exc}") from None
    try:
        yield store
    finally:
        store.close()


def close_store(store: Any) -> None:
    """Close `store` if it holds a connection (MemoryStore has nothing to close)."""
    close = getattr(store, "close", None)
    if callable(close):
        close()


def make_executor(name: str) -> TaskExecutor:
    """The executor `--executor NAME` names (noop, local or docker)."""
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
    """The worktree reader of `--worktrees ROOT` on the local host `host` (task-files)."""
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


def make_parent_dirs(path: Path, label: str) -> None:
    """Create the missing directories above `path`, a database file a command is about
    to create (`world load --db`, `demo --keep`); a parent that cannot be made is a usage
    failure naming `label` (the option), never a traceback."""
    parent = path.parent
    if parent.is_dir():
        return
    blocking = next((p for p in (parent, *parent.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise UsageFailure(f"{label} {path}: {blocking} is not a directory")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageFailure(
            f"{label} {path}: cannot create its directory {parent}: {exc.strerror or exc}"
        ) from None


def emit_json(obj: Any) -> None:
    """Print `obj` as indented JSON (non-ASCII kept) and a newline."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")


__all__ = [
    "close_store",
    "db_location",
    "emit_json",
    "fresh_store",
    "load_world_path",
    "make_executor",
    "make_files",
    "make_parent_dirs",
    "open_db",
    "read_text",
]
