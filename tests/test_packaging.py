"""Install shape (issue 19): a light core, extras for the rest, a version, entry points.
Each check runs in a fresh interpreter so that nothing this test process already
imported hides a dependency."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("typer", "rich", "pydantic", "sqlite_utils", "psycopg", "click")


def _python(code: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, **kw  # type: ignore[call-overload]
    )


@pytest.mark.parametrize("module", ["markertools", "markertools.plans"])
def test_the_core_imports_no_optional_dependency(module: str) -> None:
    probe = f"import sys, json, {module}\nprint(json.dumps(sorted(sys.modules)))"
    run = _python(probe)
    assert run.returncode == 0, run.stderr
    loaded = set(json.loads(run.stdout))
    assert {m for m in loaded if m.split(".")[0] in HEAVY} == set()


def test_parse_turn_needs_none_of_them() -> None:
    blocked = "".join(f"sys.modules[{m!r}] = None\n" for m in HEAVY)
    run = _python(
        "import sys\n" + blocked + "import markertools\n"
        "plan = markertools.parse_turn('```task-poll\\n{\"task_id\": \"t1\"}\\n```')\n"
        "print(plan.commands[0].kind)"
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "task-poll"


def test_base_dependencies_and_extras() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = " ".join(project["dependencies"])
    for heavy in ("sqlite-utils", "typer", "platformdirs", "psycopg", "mcp", "rich"):
        assert heavy not in base
    assert "markdown-it-py" in base and "attrs" in base and "cattrs" in base
    extras = project["optional-dependencies"]
    assert {"sqlite", "cli", "postgres", "mcp", "all", "dev"} <= set(extras)
    assert any("sqlite-utils" in d for d in extras["sqlite"])
    assert {"markertools[sqlite]"} <= set(extras["cli"]) and any("platformdirs" in d for d in extras["cli"])
    assert any(d.startswith("psycopg[") for d in extras["postgres"])
    assert "mcp==2.3.0" in extras["mcp"]
    assert any(d.startswith("markertools[all]") for d in extras["dev"])
    assert project["license"] and project["classifiers"] and project["urls"]


def test_version_from_the_package_metadata() -> None:
    run = _python("import markertools; print(markertools.__version__)")
    assert run.stdout.strip() == version("markertools")


@pytest.mark.parametrize(
    "argv",
    [[sys.executable, "-m", "markertools", "--version"], [str(Path(sys.executable).with_name("markertools")), "--version"]],
)
def test_version_option_and_python_m(argv: list[str]) -> None:
    run = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"markertools {version('markertools')}\n"


def test_a_missing_cli_extra_names_it() -> None:
    run = _python(
        "import sys\nsys.modules['typer'] = None\nsys.argv = ['markertools', 'parse', '-']\n"
        "from markertools_adapters.cli import main\nmain()"
    )
    assert run.returncode == 2
    assert run.stderr.strip().endswith("pip install 'markertools[cli]'"), run.stderr
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize(
    ("blocked", "target", "extra"),
    [("psycopg", "postgresql://u@127.0.0.1:1/db", "postgres"), ("sqlite_utils", "x.db", "sqlite")],
)
def test_a_missing_store_extra_names_it(tmp_path: Path, blocked: str, target: str, extra: str) -> None:
    run = _python(
        f"import sys\nsys.modules[{blocked!r}] = None\n"
        "from markertools_adapters.stores import MissingExtra, open_db\n"
        f"try:\n    open_db({target!r})\nexcept MissingExtra as exc:\n"
        "    print(exc.extra); print(exc)\n",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    name, message = run.stdout.splitlines()
    assert name == extra and f"pip install 'markertools[{extra}]'" in message


def test_the_cli_reports_a_missing_postgres_extra_in_one_line(tmp_path: Path) -> None:
    world = tmp_path / "w.json"
    world.write_text('{"now": 1}')
    run = _python(
        "import sys\nsys.modules['psycopg'] = None\n"
        "sys.argv = ['markertools', 'world', 'dump', '--db', 'postgresql://u@127.0.0.1:1/db']\n"
        "from markertools_adapters.cli import main\nmain()"
    )
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "markertools[postgres]" in run.stderr, run.stderr


def test_a_command_whose_extra_is_missing_names_it(tmp_path: Path) -> None:
    run = _python(
        "import sys\nsys.modules['mcp'] = None\n"
        f"sys.argv = ['markertools', 'dots', 'serve', '--state-dir', {str(tmp_path / 's')!r}]\n"
        "from markertools_adapters.cli import main\nmain()",
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip().endswith("pip install 'markertools[mcp]'") and "Traceback" not in run.stderr
