"""The store methods the docs name are the ones the stores have (issue 35): the table of
docs/worker-loop.md "The store methods" gives each method's signature, and each must be
exactly what every bundled store (memory, SQLite, PostgreSQL) and the `WorkerStore`
Protocol define - the parameter names in order, where the keyword-only ones begin, the
defaults shown. Every other call of a store method the docs show in inline code
(`store.requeue_expired(task_id, dead_host, now, affinity_seconds=...)`) passes no more
positional arguments than the method takes and only keywords it has. A doc that names a
parameter the code renamed fails here, not in a reader's program."""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest
from support.paths import REPO

from markertools_adapters.memory import MemoryStore
from markertools_adapters.postgres import PostgresStore
from markertools_adapters.sqlite import SqliteStore
from markertools_adapters.wiring import WorkerStore

STORES: tuple[type[Any], ...] = (WorkerStore, MemoryStore, SqliteStore, PostgresStore)
DOCS = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))
SPAN = re.compile(r"`(?:store\.)?([a-z_]+)\(([^`]*)\)`")
# a library function of the same name takes the store first: `update_automation(store, ...)`
LIBRARY_CALL = re.compile(r"^\s*(store|ports)\b")
METHODS = {name for name in dir(MemoryStore) if not name.startswith("_")}


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _table_signatures() -> list[tuple[str, str]]:
    """(method, parameter text) of each signature in the first column of worker-loop.md's
    "The store methods" table."""
    page = (REPO / "docs" / "worker-loop.md").read_text(encoding="utf-8")
    found = []
    for row in _section(page, "The store methods").splitlines():
        if not row.startswith("| `"):
            continue
        first = row.split(" | ")[0]
        found += SPAN.findall(first)
    return found


def _real(name: str) -> list[inspect.Signature]:
    """The method's signature on every store (and the Protocol) that has it."""
    return [
        inspect.signature(getattr(cls, name))
        for cls in STORES
        if callable(getattr(cls, name, None))
    ]


def _shape(signature: inspect.Signature) -> list[tuple[str, bool, str | None]]:
    """(name, keyword-only, default as written) of each parameter but self."""
    return [
        (
            p.name,
            p.kind is inspect.Parameter.KEYWORD_ONLY,
            None if p.default is inspect.Parameter.empty else repr(p.default),
        )
        for p in signature.parameters.values()
        if p.name != "self"
    ]


def _documented_shape(params: str) -> list[tuple[str, bool, str | None]]:
    tree = ast.parse(f"def f({params}): pass").body[0]
    assert isinstance(tree, ast.FunctionDef)
    args = tree.args
    positional = [(a.arg, False) for a in args.args]
    keyword = [(a.arg, True) for a in args.kwonlyargs]
    defaults: list[ast.expr | None] = [None] * (len(args.args) - len(args.defaults))
    defaults += list(args.defaults)
    defaults += list(args.kw_defaults)
    return [
        (name, kw_only, None if default is None else repr(ast.literal_eval(default)))
        for (name, kw_only), default in zip([*positional, *keyword], defaults, strict=True)
    ]


TABLE = _table_signatures()


def test_the_table_names_the_worker_methods() -> None:
    names = {name for name, _ in TABLE}
    assert {"claim_task", "renew_leases", "requeue_expired", "list_tasks", "finish_turn"} <= names
    assert len(TABLE) >= 30


@pytest.mark.parametrize(("name", "params"), TABLE, ids=[name for name, _ in TABLE])
def test_each_documented_signature_is_the_stores_own(name: str, params: str) -> None:
    real = _real(name)
    assert real, f"docs/worker-loop.md names store.{name}, which no store has"
    documented = _documented_shape(params)
    for signature in real:
        assert _shape(signature) == documented, f"{name}{signature} is documented as ({params})"


def _calls() -> list[tuple[str, str, str]]:
    found = []
    for path in DOCS:
        for name, args in SPAN.findall(path.read_text(encoding="utf-8")):
            if name in METHODS and (name, args) not in TABLE and not LIBRARY_CALL.match(args):
                found.append((path.name, name, args))
    return found


CALLS = _calls()


def _call_fits(name: str, args: str) -> str | None:
    """Why the documented call does not fit the method, or None when it does."""
    try:
        call = ast.parse(f"f({args})", mode="eval").body
    except SyntaxError:
        return None  # prose inside the parentheses, not a call
    assert isinstance(call, ast.Call)
    for signature in _real(name):
        params = [p for p in signature.parameters.values() if p.name != "self"]
        positional = [p for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
        shown = [a for a in call.args if not (isinstance(a, ast.Constant) and a.value is ...)]
        if len(shown) > len(positional):
            return f"{len(shown)} positional arguments, {name} takes {len(positional)}"
        names = {p.name for p in params}
        unknown = [k.arg for k in call.keywords if k.arg not in names]
        if unknown:
            return f"{name} has no parameter {unknown}"
    return None


def test_the_docs_show_store_calls() -> None:
    assert len(CALLS) >= 20


@pytest.mark.parametrize(
    ("page", "name", "args"), CALLS, ids=[f"{p}:{n}({a})" for p, n, a in CALLS]
)
def test_each_documented_call_fits_the_method(page: str, name: str, args: str) -> None:
    assert _call_fits(name, args) is None, f"{page}: `{name}({args})`: {_call_fits(name, args)}"


def test_a_renamed_parameter_would_fail() -> None:
    check: Callable[[str, str], str | None] = _call_fits
    assert check("renew_leases", "host, claims=[claim]") == (
        "renew_leases has no parameter ['claims']"
    )
    assert _documented_shape("task_id, *, claim=None") == [
        ("task_id", False, None),
        ("claim", True, "None"),
    ]
