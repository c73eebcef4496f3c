"""One documented root for the library's exceptions (issue 25, part 4; issue 27 item 5;
FLT-8): every exception class defined under src/markertools and src/markertools_adapters
derives from `markertools.MarkertoolsError` (but a documented allow-list of private
ones), keeps the standard base it had, sits in its family, and is named in the tree of
errors.py and docs/errors.md."""

from __future__ import annotations

import builtins
import importlib
import inspect
import pkgutil
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import markertools
import markertools_adapters
from markertools_adapters import errors
from markertools_adapters.errors import (
    ALLOWED_OUTSIDE_THE_ROOT,
    CodexError,
    MarkertoolsError,
    StoreError,
    StoreUnavailable,
)

ROOT = Path(__file__).resolve().parents[2]


def library_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class defined at module level anywhere in markertools (the core)
    and markertools_adapters, by its dotted name (each module imported, so nothing is
    missed by a text search)."""
    found: dict[str, type[BaseException]] = {}
    modules = [
        name
        for package in (markertools, markertools_adapters)
        for name in [
            package.__name__,
            *(m.name for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")),
        ]
    ]
    for name in modules:
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == name
            ):
                found[f"{name}.{obj.__qualname__}"] = obj
    return found


@pytest.mark.rule("FLT-8")
def test_every_exception_of_the_core_and_the_adapters_derives_from_the_root() -> None:
    found = library_exceptions()
    assert len(found) >= 45  # the walk saw both packages, not an empty corner
    assert any(name.startswith("markertools.plans.") for name in found)  # the core too
    outside = {name for name, cls in found.items() if not issubclass(cls, MarkertoolsError)}
    assert sorted(outside - ALLOWED_OUTSIDE_THE_ROOT) == [], "derive them from MarkertoolsError"
    assert sorted(ALLOWED_OUTSIDE_THE_ROOT - outside) == []  # no stale allow-list entry
    assert all(name.rsplit(".", 1)[1].startswith("_") for name in ALLOWED_OUTSIDE_THE_ROOT)


@pytest.mark.parametrize(
    ("dotted", "old_base"),
    [
        ("markertools_adapters.codex.client.RequestTimeout", TimeoutError),
        ("markertools_adapters.permissions.PermissionLookupTimeout", TimeoutError),
        ("markertools_adapters.permissions.PermissionLookupError", RuntimeError),
        ("markertools_adapters.executors.ExecutorUnavailable", RuntimeError),
        ("markertools_adapters.stores.MissingExtra", ImportError),
        ("markertools_adapters.world.WorldFileError", ValueError),
        ("markertools_adapters.world.MergeConflict", ValueError),
    ],
)
@pytest.mark.rule("FLT-8")
def test_re_parenting_keeps_the_old_base(dotted: str, old_base: type[BaseException]) -> None:
    module, name = dotted.rsplit(".", 1)
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, old_base) and issubclass(cls, MarkertoolsError)
    assert cls.__mro__.index(old_base) < cls.__mro__.index(MarkertoolsError)


@pytest.mark.rule("FLT-8")
@pytest.mark.parametrize(
    ("dotted", "old_base"),
    [
        ("markertools.TaskTokenRefused", ValueError),
        ("markertools.UnknownKindError", ValueError),
        ("markertools.TurnIdReused", ValueError),
        ("markertools.TurnFinishedDifferently", ValueError),
        ("markertools.CallIdReused", ValueError),
        ("markertools.plans.NotJson", ValueError),
        ("markertools.plans.ScheduleError", ValueError),
        ("markertools.AutomationNameTaken", Exception),
        ("markertools.LeaseLost", Exception),
        ("markertools_adapters.BadDatabaseUrl", ValueError),
        ("markertools_adapters.stores.DatabaseNotFound", FileNotFoundError),
        ("markertools_adapters.stores.NotAMarkertoolsDatabase", ValueError),
        ("markertools_adapters.executors.UnknownExecutor", ValueError),
        ("markertools_adapters.wiring.NoExecutor", TypeError),
    ],
)
def test_the_root_comes_first_and_the_old_base_second(
    dotted: str, old_base: type[BaseException]
) -> None:
    """The core's classes (and the refusals of `connect` named for FLT-8) put the root
    first and keep the standard base they had second."""
    module, name = dotted.rsplit(".", 1)
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, markertools.MarkertoolsError) and issubclass(cls, old_base)
    assert cls.__mro__.index(MarkertoolsError) < cls.__mro__.index(old_base)
    assert markertools.MarkertoolsError is MarkertoolsError  # one root, two import paths


def test_an_except_clause_written_against_an_old_base_still_catches() -> None:
    from markertools_adapters.codex.client import RequestTimeout
    from markertools_adapters.stores import MissingExtra

    with pytest.raises(TimeoutError, match=r"no response to 'thread/start' within 2\.0s"):
        raise RequestTimeout("thread/start", 2.0)
    with pytest.raises(CodexError, match=r"no response to 'thread/start' within 2\.0s"):
        raise RequestTimeout("thread/start", 2.0)
    missing = MissingExtra("postgres", "the PostgreSQL store", "psycopg")
    assert missing.name == "psycopg"  # ImportError's own field, as before
    with pytest.raises(ImportError, match=r"pip install 'markertools\[postgres\]'"):
        raise missing


def test_the_families() -> None:
    from markertools_adapters import planstore, postgres, sqlite
    from markertools_adapters.codex._files import CodexInputError
    from markertools_adapters.codex.client import AppServerError, AppServerExited
    from markertools_adapters.dots import DotsError, NotConfirmed, ProposalInvalid
    from markertools_adapters.dots import RunNotFound as DotsRunNotFound

    assert sqlite.SchemaError is postgres.SchemaError  # defined once, in _sql
    assert sqlite.SchemaTooNew is postgres.SchemaTooNew
    assert issubclass(sqlite.SchemaTooNew, sqlite.SchemaError)
    assert issubclass(sqlite.SchemaError, StoreError)
    assert issubclass(StoreUnavailable, StoreError) and issubclass(StoreError, MarkertoolsError)
    for cls in (
        planstore.RunExists,
        planstore.RunNotFound,
        planstore.StaleRevision,
        planstore.CorruptStore,
        planstore.HostLockHeld,
    ):
        assert issubclass(cls, planstore.PlanStoreError)
    assert issubclass(planstore.PlanStoreError, MarkertoolsError)
    assert not issubclass(planstore.PlanStoreError, StoreError)  # a family of its own
    for cls in (DotsRunNotFound, ProposalInvalid, NotConfirmed):
        assert issubclass(cls, DotsError)
    assert issubclass(DotsError, MarkertoolsError)
    for cls in (AppServerError, AppServerExited, CodexInputError):
        assert issubclass(cls, CodexError)
    # the families stay apart: a new common base never makes one class catch another
    assert not issubclass(AppServerExited, AppServerError)
    assert not issubclass(DotsRunNotFound, planstore.RunNotFound)


def test_a_refused_database_is_caught_by_the_root_with_its_reason(tmp_path: Path) -> None:
    from markertools_adapters.sqlite import LATEST_VERSION, open_store

    path = tmp_path / "new.db"
    open_store(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE schema_version SET version = ?", (LATEST_VERSION + 1,))
    conn.close()
    with pytest.raises(MarkertoolsError) as caught:
        open_store(path)
    assert isinstance(caught.value, StoreError)
    assert str(caught.value) == (
        f"database schema version {LATEST_VERSION + 1} is newer than this markertools "
        f"supports ({LATEST_VERSION}); upgrade markertools to open it"
    )


def test_a_missing_run_and_a_bad_world_file_are_caught_by_the_root(tmp_path: Path) -> None:
    from markertools_adapters.planstore import PlanStore
    from markertools_adapters.world import loads_world

    with pytest.raises(MarkertoolsError, match=r"^no run 'nope' in "):
        PlanStore(tmp_path / "state").load("nope")
    with pytest.raises(MarkertoolsError, match=r"^world: not JSON: "):
        loads_world("{")


@pytest.mark.rule("FLT-8")
def test_the_tree_is_documented_in_errors_py_and_docs() -> None:
    """Every class of the tree - the core's and the adapters' - is named in errors.py's
    docstring tree and in docs/errors.md, so the documentation cannot fall behind the
    code."""
    doc = errors.__doc__ or ""
    page = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    names = {
        cls.__name__
        for name, cls in library_exceptions().items()
        if name not in ALLOWED_OUTSIDE_THE_ROOT
    }
    assert {"NotJson", "ScheduleError", "AutomationNameTaken", "TaskTokenRefused"} <= names
    assert sorted(n for n in names if not re.search(rf"\b{n}\b", doc)) == []
    assert sorted(n for n in names if not re.search(rf"\b{n}\b", page)) == []
    assert "docs/errors.md" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.rule("TRN-8")
def test_the_snippet_of_docs_errors_md_runs_and_names_the_reason(tmp_path: Path) -> None:
    """docs/errors.md's program, run as written: it opens (creates) markertools.db; on a
    database a newer markertools wrote it exits with the one line it promises, and on a
    database another process holds locked with the StoreUnavailable line."""
    page = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    (snippet,) = re.findall(r"^```python \{run\}\n(.*?)^```$", page, re.S | re.M)
    script = tmp_path / "snippet.py"
    script.write_text(snippet, encoding="utf-8")
    first = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert (first.returncode, first.stderr) == (0, "")
    from markertools_adapters.sqlite import LATEST_VERSION

    assert first.stdout == f"schema version {LATEST_VERSION}\n"

    conn = sqlite3.connect(tmp_path / "markertools.db", isolation_level=None)
    conn.execute("UPDATE schema_version SET version = ?", (LATEST_VERSION + 1,))
    conn.close()
    second = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert second.returncode == 1
    assert second.stderr == (
        f"upgrade markertools: database schema version {LATEST_VERSION + 1} is newer than "
        f"this markertools supports ({LATEST_VERSION}); upgrade markertools to open it\n"
    )
    (tmp_path / "markertools.db").unlink()
    locked = sqlite3.connect(tmp_path / "markertools.db", isolation_level=None)
    locked.execute("PRAGMA journal_mode = WAL")
    locked.execute("CREATE TABLE held (x)")
    locked.execute("BEGIN EXCLUSIVE")
    try:
        script.write_text(
            snippet.replace('executor="local")', 'executor="local", busy_timeout=0.05)'),
            encoding="utf-8",
        )
        third = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True
        )
    finally:
        locked.execute("ROLLBACK")
        locked.close()
    assert third.returncode == 1
    assert third.stderr == (
        "the database is not available now: OperationalError: database is locked\n"
    )


# The `raise` of a standard exception class that stays: consistency checks of the
# library's own tables at import time (a bug in markertools, never a caller's input),
# abstract stubs, and an unreachable branch.
STANDARD_RAISES_ALLOWED = {
    ("src/markertools/text/catalog.py", "RuntimeError"),
    ("src/markertools/deliver/handlers/registry.py", "RuntimeError"),
    ("src/markertools/deliver/context.py", "RuntimeError"),
    ("src/markertools/parse/kinds.py", "RuntimeError"),
    ("src/markertools/domain/change.py", "RuntimeError"),
    ("src/markertools_adapters/cli/_dots_terminal.py", "EOFError"),  # input()'s protocol
}
# protocols that name their exception: attribute lookup (PEP 562's module __getattr__),
# mapping lookup (__getitem__, a lookup by name), and unreachable branches
PROTOCOL_RAISES = {"AttributeError", "KeyError", "AssertionError", "StopIteration"}
STANDARD = {
    name
    for name, obj in vars(builtins).items()
    if isinstance(obj, type) and issubclass(obj, BaseException)
}


@pytest.mark.rule("FLT-8")
def test_nothing_raises_a_bare_standard_exception_on_purpose() -> None:
    """FLT-8 to the letter: every `raise` of a new exception in the core and the
    adapters raises one of the tree (an argument error is `InvalidArgument`, still a
    ValueError, or `InvalidType`, still a TypeError), not a bare ValueError, TypeError,
    RuntimeError or OSError - so `except MarkertoolsError` catches it. Found by reading
    every module's syntax tree; re-raising a caught exception (`raise`, `raise exc`) is
    not a new one."""
    import ast

    found: list[str] = []
    for path in sorted((ROOT / "src").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = target.id if isinstance(target, ast.Name) else None
            allowed = (rel, name) in STANDARD_RAISES_ALLOWED or name in PROTOCOL_RAISES
            if name in STANDARD and name != "NotImplementedError" and not allowed:
                found.append(f"{rel}:{node.lineno}: raise {name}")
    assert found == [], "raise an exception of the tree (markertools.InvalidArgument, ...)"


@pytest.mark.rule("FLT-8")
def test_an_argument_error_is_caught_by_the_root_and_by_its_old_base() -> None:
    from markertools import InvalidArgument, InvalidType, TurnCost

    with pytest.raises(MarkertoolsError) as caught:
        markertools.deliver_call("task-list", {}, sender="t1", ports=None, locale="xx")  # type: ignore[arg-type]
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, InvalidArgument)
    assert "locale" in str(caught.value)
    with pytest.raises(TypeError) as typed:
        TurnCost(tokens="12")  # type: ignore[arg-type]
    assert isinstance(typed.value, InvalidType) and isinstance(typed.value, MarkertoolsError)
    assert str(typed.value) == "TurnCost.tokens: expected an integer, got str"
