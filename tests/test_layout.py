"""The layout's promises, checked from outside the code: the import contracts in
pyproject.toml hold (import-linter), no two modules of src/ import each other through
any chain (grimp's graph), and the core imports no adapter and does no I/O."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

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


def _contract(contract_id: str) -> dict[str, Any]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c["id"] == contract_id)


def test_every_contract_of_pyproject_is_reported_kept() -> None:
    """lint-imports picks up every contract of pyproject.toml, the adapters' one too."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    names = [c["name"] for c in config["tool"]["importlinter"]["contracts"]]
    lint = Path(sys.executable).with_name("lint-imports")
    run = subprocess.run(
        [str(lint), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    flat = " ".join(run.stdout.split())  # lint-imports wraps long contract names
    assert [n for n in names if f"{n} KEPT" not in flat] == [], run.stdout
    assert "adapters: import the core only through markertools and markertools.plans" in names


def test_adapters_contract_forbids_every_core_module_but_the_public_ones() -> None:
    """The adapters-public-core contract names every top-level module of the core except
    `markertools` and `markertools.plans`, and every private `markertools/plans/_*.py`: a
    new private module cannot slip past it unlisted."""
    contract = _contract("adapters-public-core")
    core = ROOT / "src" / "markertools"
    top = {
        f"markertools.{p.stem}"
        for p in core.iterdir()
        if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").is_file()
    }
    private_plans = {f"markertools.plans.{p.stem}" for p in (core / "plans").glob("_*.py")}
    expected = (top - {"markertools.plans"}) | (private_plans - {"markertools.plans.__init__"})
    listed = set(contract["forbidden_modules"])
    unlisted = sorted(expected - listed)
    assert unlisted == [], f"add {unlisted} to forbidden_modules of adapters-public-core"
    assert sorted(listed - expected) == []  # no stale entry (a module that is gone)
    assert "markertools.plans._machines" in listed and "markertools.deliver" in listed
    assert contract["source_modules"] == ["markertools_adapters"]
    assert contract["allow_indirect_imports"] is True


def test_adapters_contract_breaks_on_a_private_core_import(tmp_path: Path) -> None:
    """The contract is not vacuous: on a copy of src/ where one adapter module imports
    `markertools.plans._state` and `markertools.deliver.paths`, lint-imports names both."""
    src = tmp_path / "src"
    for package in PACKAGES:
        shutil.copytree(
            ROOT / "src" / package, src / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    planted = src / "markertools_adapters" / "executors.py"
    planted.write_text(
        planted.read_text(encoding="utf-8")
        + "\nfrom markertools.plans._state import Notice  # noqa: E402\n"
        + "from markertools.deliver.paths import display_name  # noqa: E402\n",
        encoding="utf-8",
    )
    contract = _contract("adapters-public-core")
    config = tmp_path / "contracts.toml"
    config.write_text(
        "[tool.importlinter]\n"
        'root_packages = ["markertools", "markertools_adapters"]\n'
        "[[tool.importlinter.contracts]]\n"
        f'name = "{contract["name"]}"\n'
        'type = "forbidden"\n'
        'source_modules = ["markertools_adapters"]\n'
        "allow_indirect_imports = true\n"
        f"forbidden_modules = {json.dumps(contract['forbidden_modules'])}\n",
        encoding="utf-8",
    )
    lint = Path(sys.executable).with_name("lint-imports")
    run = subprocess.run(
        [str(lint), "--config", str(config), "--no-cache"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
        check=False,
    )
    flat = " ".join(run.stdout.split())
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Contracts: 0 kept, 1 broken." in flat
    assert "markertools_adapters is not allowed to import markertools.plans._state" in flat
    assert "markertools_adapters is not allowed to import markertools.deliver" in flat
    assert "markertools_adapters.executors -> markertools.plans._state" in flat


# ---- the README's architecture tree -------------------------------------------------

# directories the tree shows completely (every module and subdirectory); the others
# show only the modules the README names
FULLY_DRAWN = (
    "src/markertools",
    "src/markertools_adapters",
    "src/markertools_adapters/codex",
    "src/markertools_adapters/planstore",
    "src/markertools_adapters/dots",
)


def architecture_tree() -> list[str]:
    """The paths docs/architecture.md's tree draws ("src/markertools/deliver/loop.py",
    ...), from its indentation (two spaces a level)."""
    readme = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = re.search(r"^```\n(src/\n.*?)^```$", readme, re.S | re.M)
    assert block is not None, "docs/architecture.md: the tree (a block starting src/)"
    paths: list[str] = []
    stack: list[str] = []
    for line in block.group(1).splitlines():
        match = re.match(r"( *)(\S+)", line)
        assert match is not None and len(match.group(1)) % 2 == 0, line
        depth = len(match.group(1)) // 2
        stack[depth:] = [match.group(2).rstrip("/")]
        paths.append("/".join(stack))
    return paths


def on_disk(directory: Path) -> set[str]:
    """What `ls` shows of a source directory that a tree should: modules and
    subdirectories (no caches, no py.typed marker; `__init__.py` is the directory's
    own line)."""
    return {
        str(p.relative_to(ROOT))
        for p in directory.iterdir()
        if (p.is_dir() and p.name != "__pycache__")
        or (p.suffix == ".py" and p.name != "__init__.py")
    }


def test_the_readme_architecture_tree_matches_the_files() -> None:
    drawn = architecture_tree()
    assert len(drawn) > 60  # the whole tree was read
    assert sorted(p for p in drawn if not (ROOT / p).exists()) == []  # nothing stale
    packages = {
        str(init.parent.relative_to(ROOT))
        for package in PACKAGES
        for init in (ROOT / "src" / package).rglob("__init__.py")
    }
    assert sorted(packages - set(drawn)) == [], "draw every package of src/"
    for directory in FULLY_DRAWN:
        missing = sorted(on_disk(ROOT / directory) - set(drawn))
        assert missing == [], f"docs/architecture.md tree: add {missing}"
    named = {"deliver/codec.py", "deliver/automations_fire.py", "deliver/automations_admin.py"}
    assert {f"src/markertools/{n}" for n in named} <= set(drawn)
    codecs = {str(p.relative_to(ROOT)) for p in (ROOT / "src").rglob("*codec.py")}
    assert sorted(codecs - set(drawn)) == [], "draw every codec module"
    workers = {str(p.relative_to(ROOT)) for p in (ROOT / "src").rglob("_worker.py")}
    assert sorted(workers - set(drawn)) == [], "draw every worker-loop module"
