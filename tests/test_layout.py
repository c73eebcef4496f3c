"""The layout's promises, checked from outside the code: the import contracts in
pyproject.toml hold (import-linter), no two modules of src/ import each other through
any chain (grimp's graph), and the core imports no adapter and does no I/O."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("markertools", "markertools_adapters")


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_anywhere_in_src() -> None:
    graph = grimp.build_graph(*PACKAGES)
    assert len(graph.modules) > 100  # the whole of src/, not an empty graph
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "cyclepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyclepkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from cyclepkg import a\n")  # lazy imports count
    (pkg / "c.py").write_text("from cyclepkg import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _cycles(grimp.build_graph("cyclepkg", cache_dir=None)) == [["cyclepkg.a", "cyclepkg.b"]]


def test_import_contracts_in_pyproject_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    run = subprocess.run(
        [str(lint), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    kept = re.findall(r"^(.*) KEPT$", run.stdout, re.M)
    assert len(kept) >= 6, run.stdout  # every contract of pyproject.toml was checked
    assert "Contracts: " in run.stdout and " 0 broken." in run.stdout


def test_core_purity_contract_would_catch_an_os_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The purity contract is not vacuous: the same kind of contract over a copy of a
    core-shaped package breaks on `import os` and on an adapter import."""
    pkg = tmp_path / "purecore"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ok.py").write_text("import re\n")
    (pkg / "bad.py").write_text("import os\nimport subprocess\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("purecore", include_external_packages=True, cache_dir=None)
    assert graph.find_modules_that_directly_import("os") == {"purecore.bad"}
    assert "purecore.ok" not in graph.find_modules_that_directly_import("subprocess")


def test_core_modules_import_nothing_forbidden_even_lazily() -> None:
    graph = grimp.build_graph(*PACKAGES, include_external_packages=True)
    forbidden = ("os", "subprocess", "sqlite3", "sqlite_utils", "typer", "psycopg", "socket")
    offenders = {
        (importer, name)
        for name in forbidden
        if name in graph.modules
        for importer in graph.find_modules_that_directly_import(name)
        if importer.split(".")[0] == "markertools"
    }
    assert offenders == set()
