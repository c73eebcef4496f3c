"""`markertools view` and `markertools dots view` as a person runs them (the installed
console script, a process of its own): one confirmation line, the page written
atomically (an old page replaced whole; a directory above it that does not exist is
refused, nothing created - issue 36 item 9); every
failure one stderr line and exit 2 - an unknown project names the projects there, a
state directory or run that does not exist creates nothing, a missing `views` extra
names the install; the database and the state directory are only read."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import cli, one_line_failure
from support.postgres import connect, dsn, schema
from support.views import demo_run, fleet_world

from markertools_adapters.sqlite import create_store_from_world
from markertools_adapters.world import dumps_world

__all__ = ["dsn", "schema"]  # fixtures


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.rule("VEW-1")
def test_view_writes_one_page_and_only_reads_the_database(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    create_store_from_world(fleet_world(60), db).close()
    before = _digest(db)
    out = tmp_path / "new" / "fleet.html"
    out.parent.mkdir()
    done = cli("view", "--db", str(db), "--out", str(out))
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith(f"wrote {out} (") and done.stdout.count("\n") == 1
    assert "60 tasks, " in done.stdout and "every project (1)" in done.stdout
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and 'id="fleet-data"' in page
    for outside in ("http://", "https://", "//cdn", "@import", "url("):  # nothing to fetch
        assert outside not in page
    assert _digest(db) == before
    assert [p.name for p in out.parent.iterdir()] == ["fleet.html"]  # no temporary file left
    out.write_text("old page")
    again = cli("view", "--db", str(db), "--project", "p-fleet", "--out", str(out))
    assert again.returncode == 0 and "project p-fleet (fleet)" in again.stdout
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.rule("VEW-1")
def test_view_usage_errors_are_one_line(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    create_store_from_world(fleet_world(5), db).close()
    out = tmp_path / "fleet.html"
    one_line_failure(
        cli("view", "--db", str(db), "--project", "p-none", "--out", str(out)),
        "--project p-none: no such project in the database (projects: p-fleet)",
    )
    one_line_failure(cli("view", "--db", str(tmp_path / "missing.db"), "--out", str(out)), "no such database")
    one_line_failure(cli("view", "--db", str(db), "--out", str(tmp_path)), "is a directory")
    one_line_failure(cli("view", "--db", str(db)), "--out")
    blocked = tmp_path / "file"
    blocked.write_text("x")
    one_line_failure(cli("view", "--db", str(db), "--out", str(blocked / "x.html")), "is not a directory")
    assert not out.exists()


@pytest.mark.rule("VEW-2")
def test_dots_view_reads_the_state_directory_and_creates_nothing(tmp_path: Path) -> None:
    state = tmp_path / "state"
    run_id = demo_run(state)
    files = sorted((p.name, _digest(p)) for p in state.iterdir())
    out = tmp_path / "run.html"
    done = cli("dots", "view", run_id, "--state-dir", str(state), "--out", str(out))
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == (
        f"wrote {out} ({out.stat().st_size / 1000:.1f} KB): run {run_id} running "
        "(in progress: what is known so far), 6 turns in 3 lanes, 11 marks\n"
    )
    assert sorted((p.name, _digest(p)) for p in state.iterdir()) == files
    missing = tmp_path / "nowhere"
    one_line_failure(
        cli("dots", "view", run_id, "--state-dir", str(missing), "--out", str(out)),
        f"no run '{run_id}' in {missing} (the directory does not exist)",
    )
    assert not missing.exists()
    one_line_failure(cli("dots", "view", "r-none", "--state-dir", str(state), "--out", str(out)), "no run 'r-none'")
    one_line_failure(cli("dots", "view", "../up", "--state-dir", str(state), "--out", str(out)), "invalid run id")
    one_line_failure(cli("dots", "view", "--state-dir", str(state), "--out", str(out)), "RUN")


@pytest.mark.rule("VEW-1", "VEW-2")
def test_a_missing_views_extra_names_it(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    create_store_from_world(fleet_world(5), db).close()
    run = subprocess.run(
        [sys.executable, "-c",
         "import sys\nsys.modules['jinja2'] = None\n"
         f"sys.argv = ['markertools', 'view', '--db', {str(db)!r}, '--out', {str(tmp_path / 'f.html')!r}]\n"
         "from markertools_adapters.cli import main\nmain()"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.strip() == (
        "markertools: drawing a view needs the 'views' extra (jinja2 is not installed): "
        "pip install 'markertools[views]'"
    )
    assert not (tmp_path / "f.html").exists()


@pytest.mark.rule("VEW-1", "VEW-2")
def test_help_lists_both_commands() -> None:
    top = cli("--help")
    dots = cli("dots", "--help")
    assert top.returncode == 0 and " view " in top.stdout
    assert dots.returncode == 0 and " view " in dots.stdout


@pytest.mark.rule("VEW-1")
def test_a_postgres_database_draws_the_same_page_as_sqlite(dsn: str, schema: str, tmp_path: Path) -> None:
    with connect(dsn) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    url = f"{dsn}{'&' if '?' in dsn else '?'}options=-csearch_path%3D{schema}"
    world = tmp_path / "w.json"
    world.write_text(dumps_world(fleet_world(40)), encoding="utf-8")
    pages = []
    for db in (url, str(tmp_path / "w.db")):
        assert cli("world", "load", str(world), "--db", db).returncode == 0
        out = tmp_path / f"page-{len(pages)}.html"
        done = cli("view", "--db", db, "--out", str(out))
        assert done.returncode == 0 and done.stderr == "", done.stderr
        pages.append(out.read_text(encoding="utf-8"))
    assert pages[0] == pages[1] and "t00039" in pages[0]


@pytest.mark.rule("VEW-1", "VEW-2")
def test_an_out_path_whose_directory_does_not_exist_is_refused_and_nothing_is_created(
    tmp_path: Path,
) -> None:
    """Issue 36 item 9: `--out /nonexistent/dir/x.html` used to create the directories.
    Both views now refuse it in one line (exit 2) and create nothing."""
    db = tmp_path / "fleet.db"
    create_store_from_world(fleet_world(5), db).close()
    out = tmp_path / "typo" / "dir" / "x.html"
    one_line_failure(
        cli("view", "--db", str(db), "--out", str(out)),
        f"--out {out}: the directory {out.parent} does not exist; nothing was written "
        "(create it first: view never creates directories)",
    )
    state = tmp_path / "state"
    run_id = demo_run(state)
    one_line_failure(
        cli("dots", "view", run_id, "--state-dir", str(state), "--out", str(out)),
        f"--out {out}: the directory {out.parent} does not exist; nothing was written "
        "(create it first: view never creates directories)",
    )
    assert not (tmp_path / "typo").exists()
