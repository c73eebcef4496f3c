# Owns: `markertools view --db URL [--project ID] --out FILE.html` (VEW-1, docs/cli.md):
# read the store's world (`export_world`), build the fleet page model, render it and
# write the self-contained page. Thin: options -> stores / views -> one file.
#
# Must never: change the database (it is only read); write the page when the input is
# unusable (an unknown project, an unreadable database: one stderr line, exit 2); print
# a traceback.
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from markertools_adapters.cli._app import UsageFailure, app, fail
from markertools_adapters.cli._viewio import rendered, size_text, write_page


def read_world(db: str) -> Any:
    """The world of an existing database (a SQLite file or a postgresql:// URL), at its
    recorded time (a world-file database) or now."""
    return read_fleet(db)[0]


def read_fleet(db: str) -> tuple[Any, tuple[Any, ...]]:
    """The world of an existing database and its approval requests (APR-4), read from
    one opened store."""
    from markertools_adapters.cli._io import close_store, open_db
    from markertools_adapters.stores import redact

    store = open_db(db)
    try:
        recorded = store.world_now()
        world = store.export_world(recorded if recorded is not None else time.time())
        lister = getattr(store, "list_approvals", None)
        approvals = tuple(lister()) if callable(lister) else ()
        return world, approvals
    except Exception as exc:
        raise UsageFailure(f"--db {redact(db)}: cannot read: {exc}") from None
    finally:
        close_store(store)


def view_command(db: str, project: str | None, out: Path) -> str:
    """Write the fleet page of `db` to `out`; returns the confirmation line."""
    from markertools_adapters.views import fleet_model, render_fleet

    world, approvals = read_fleet(db)
    if project is not None:
        known = sorted({p.id for p in world.projects} | {t.project_id for t in world.tasks})
        if project not in known:
            listed = ", ".join(known[:10]) + (", …" if len(known) > 10 else "")
            raise UsageFailure(
                f"--project {project}: no such project in the database"
                + (f" (projects: {listed})" if known else " (it holds no project)")
            )
    model = fleet_model(world, project, approvals=approvals)
    size = write_page(out, rendered(lambda: render_fleet(model)))
    s = model.summary
    return (
        f"wrote {out} ({size_text(size)}): {s.tasks} tasks, {s.actions} marker actions, "
        f"{model.scope}"
    )


@app.command("view")
def view_cmd(
    db: Annotated[
        str,
        typer.Option(
            "--db", help="The database to draw (a file or a postgresql:// URL).", metavar="PATH|URL"
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out", help="The HTML file to write (replaced when it exists).", metavar="FILE.html"
        ),
    ],
    project: Annotated[
        str | None,
        typer.Option(
            "--project", help="Only this project's tasks (default: every project).", metavar="ID"
        ),
    ] = None,
) -> None:
    """Draw the fleet as one self-contained HTML page (no network, opens offline): the
    lineage tree coloured by status, each task's marker actions by turn, attempts, cost
    and quota, and a summary. Collapse subtrees, filter by status or creator, search by
    id or name."""
    try:
        line = view_command(db, project, out)
    except UsageFailure as exc:
        fail(str(exc))
    sys.stdout.write(line + "\n")


__all__ = ["read_fleet", "read_world", "view_cmd", "view_command"]
