# Owns: choosing the storage adapter from what a user typed for `--db`: a
# `postgresql://` / `postgres://` URL opens the PostgreSQL adapter, anything else is a
# SQLite database path. One place, so every command accepts both the same way.
#
# Must never: print or return a password (`redact` removes it from every URL shown);
# import an adapter the caller did not ask for (psycopg is optional).
#
# Invariants:
#   Rule 1: the choice depends only on the text's scheme prefix (case-insensitive).
#   Rule 2: `create_db_from_world` never changes an existing database: SQLite refuses an
#           existing path, PostgreSQL refuses a schema that already holds records.
#   Rule 3: opening with `must_exist` never creates or migrates anything in a file that
#           is not already a markertools database (an empty file stays empty); the
#           refusal is DatabaseNotFound or NotAMarkertoolsDatabase, StoreErrors no retry
#           cures (FLT-8).
#   Rule 4: a store whose optional dependencies are not installed raises MissingExtra,
#           whose message names the extra to install (`pip install 'markertools[postgres]'`).
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

from markertools_adapters._urls import is_postgres_url as is_postgres_url
from markertools_adapters.errors import MarkertoolsError, StoreError, StoreUnavailable

# extra -> the top-level modules it provides (a missing one of these is an install problem)
EXTRA_MODULES: Final[dict[str, frozenset[str]]] = {
    "sqlite": frozenset({"sqlite_utils", "sqlite_fts4", "tabulate", "click", "pluggy"}),
    "postgres": frozenset({"psycopg", "psycopg_pool", "psycopg_binary", "psycopg_c"}),
    "cli": frozenset({"typer", "click", "rich", "shellingham", "platformdirs"}),
    "mcp": frozenset({"mcp", "mcp_types", "anyio", "pydantic", "httpx", "starlette"}),
    "zstd": frozenset({"zstandard"}),
    "views": frozenset({"jinja2", "markupsafe"}),
}


class MissingExtra(ImportError, MarkertoolsError):
    """An optional dependency is not installed; the message names the extra to install.

    `extra` is the extra's name (e.g. "postgres"), `install` the pip command line."""

    def __init__(self, extra: str, what: str, missing: str | None = None) -> None:
        self.extra = extra
        self.install = f"pip install 'markertools[{extra}]'"
        because = f" ({missing} is not installed)" if missing else ""
        super().__init__(f"{what} needs the '{extra}' extra{because}: {self.install}", name=missing)


class DatabaseNotFound(StoreError, FileNotFoundError):
    """Rule 3: `must_exist` and no database file at the path (or a directory there).
    A StoreError no retry cures; also a FileNotFoundError, as before (FLT-8)."""


class NotAMarkertoolsDatabase(StoreError, ValueError):
    """Rule 3: `must_exist` and the file is not a markertools database (empty, no tables,
    other tables, or not SQLite at all); nothing was written to it. A StoreError no
    retry cures; also a ValueError, as before (FLT-8)."""


def missing_extra(exc: ImportError, extra: str, what: str) -> ImportError:
    """`exc` as a MissingExtra when the module it could not import belongs to `extra`,
    else `exc` itself (a bug inside an installed adapter stays visible)."""
    root = (exc.name or "").split(".")[0]
    if root in EXTRA_MODULES.get(extra, frozenset()):
        return MissingExtra(extra, what, root)
    return exc


_PASSWORD_IN_URL: Final[re.Pattern[str]] = re.compile(r"^([a-z]+://[^:/@]*):[^@/]*@", re.IGNORECASE)
_PASSWORD_PARAM: Final[re.Pattern[str]] = re.compile(r"([?&]password=)[^&]*", re.IGNORECASE)


def redact(text: str | Path) -> str:
    """`text` fit for messages: a URL's password (user:PASSWORD@ or ?password=) is hidden."""
    shown = str(text)
    if not is_postgres_url(shown):
        return shown
    shown = _PASSWORD_IN_URL.sub(r"\1:***@", shown)
    return _PASSWORD_PARAM.sub(r"\1***", shown)


def _postgres_dsn(url: str) -> str:
    # libpq understands both schemes; normalise the case of the scheme only.
    scheme, rest = url.split("://", 1)
    return f"{scheme.lower()}://{rest}"


def open_db(url_or_path: str | Path, *, must_exist: bool = False) -> Any:
    """Open a markertools database: PostgreSQL for a URL, else a SQLite file.

    Without `must_exist` a missing database (file, or schema without markertools tables)
    is created; with it, FileNotFoundError (SQLite) or SchemaError (PostgreSQL) is raised
    instead. Raises the adapter's own errors (psycopg.Error, sqlite3.Error, ...)."""
    if is_postgres_url(url_or_path):
        try:
            from markertools_adapters.postgres import open_store as open_postgres
        except ImportError as exc:
            raise missing_extra(exc, "postgres", "a postgresql:// database") from exc

        return open_postgres(_postgres_dsn(str(url_or_path)), must_exist=must_exist)
    try:
        from markertools_adapters.sqlite import open_store as open_sqlite
    except ImportError as exc:
        raise missing_extra(exc, "sqlite", "a SQLite database") from exc

    path = Path(url_or_path)
    if must_exist:
        require_markertools_sqlite(path)
    return open_sqlite(path)


def require_markertools_sqlite(path: Path) -> None:
    """Rule 3: `must_exist` never turns a file into a database. A missing path or a
    directory is DatabaseNotFound (a FileNotFoundError); SQLite treats an empty file (or
    a database without tables) as a new database that opening would migrate, so such a
    file - or one that is not SQLite at all - is NotAMarkertoolsDatabase (a ValueError),
    refused WITHOUT writing to it (read-only look at its tables)."""
    import sqlite3

    if not path.is_file():
        what = "a directory, not a database file" if path.is_dir() else "no such database file"
        raise DatabaseNotFound(f"{path}: {what}")

    if path.stat().st_size == 0:
        raise NotAMarkertoolsDatabase("not a markertools database: the file is empty")
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            names = {
                row[0]
                for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        finally:
            conn.close()
    except sqlite3.OperationalError as exc:  # locked, unreadable: the store's own errors
        from markertools_adapters.sqlite._conn import driver_detail, retryable

        failure = StoreUnavailable if retryable(exc) else StoreError
        raise failure(driver_detail(exc)) from exc
    except sqlite3.DatabaseError as exc:  # "file is not a database"
        raise NotAMarkertoolsDatabase(
            f"not a markertools database: {type(exc).__name__}: {exc}"
        ) from exc
    if "schema_version" not in names:
        if not names:
            raise NotAMarkertoolsDatabase("not a markertools database: it has no tables")
        shown = ", ".join(sorted(names)[:5])
        raise NotAMarkertoolsDatabase(
            f"not a markertools database: it has tables ({shown}) but no schema_version"
        )


def create_db_from_world(world: Any, url_or_path: str | Path) -> Any:
    """A database holding `world` (Rule 2: an existing one is refused, never changed)."""
    if is_postgres_url(url_or_path):
        try:
            from markertools_adapters.postgres import create_store_from_world as create_postgres
        except ImportError as exc:
            raise missing_extra(exc, "postgres", "a postgresql:// database") from exc

        return create_postgres(world, _postgres_dsn(str(url_or_path)))
    try:
        from markertools_adapters.sqlite import create_store_from_world as create_sqlite
    except ImportError as exc:
        raise missing_extra(exc, "sqlite", "a SQLite database") from exc

    return create_sqlite(world, Path(url_or_path))
