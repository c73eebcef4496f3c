# Owns: `markertools dots view RUN --state-dir D --out FILE.html` (VEW-2, docs/cli.md):
# read a run from its state directory (the record and the event log, as `dots status`
# does), build the timeline page model, render it and write the self-contained page.
#
# Must never: take the host lock, create the state directory, or change any file in it
# (a run in progress is read as it stands: what is known so far); write the page for a
# run that cannot be read (one stderr line, exit 2); print a traceback.
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from markertools_adapters.cli._app import UsageFailure, dots_app, fail
from markertools_adapters.cli._viewio import rendered, size_text, write_page


def dots_view_command(run: str, state_dir: Path | None, out: Path) -> str:
    """Write the timeline page of run `run` in `state_dir` to `out`; returns the
    confirmation line."""
    from markertools_adapters.dots import default_state_dir
    from markertools_adapters.planstore import PlanStore, PlanStoreError
    from markertools_adapters.views import render_run, run_model

    root = Path(state_dir or default_state_dir()).expanduser()
    if not root.is_dir():
        if root.exists():
            raise UsageFailure(f"--state-dir {root}: not a directory")
        raise UsageFailure(f"no run {run!r} in {root} (the directory does not exist)")
    store = PlanStore(root)  # an existing directory: nothing is created or changed
    try:
        state = store.load_current(run)
        events = store.read_events(run)
    except (PlanStoreError, ValueError) as exc:  # ValueError: not a run id at all
        raise UsageFailure(str(exc)) from None
    finally:
        store.close()
    now = time.time()
    model = run_model(state, events, now)
    size = write_page(out, rendered(lambda: render_run(model, made_at=now)))
    known = " (in progress: what is known so far)" if model.live else ""
    return (
        f"wrote {out} ({size_text(size)}): run {model.run_id} {model.status}{known}, "
        f"{_count(len(model.bars), 'turn')} in {_count(len(model.lanes) - 1, 'lane')}, "
        f"{_count(len(model.marks), 'mark')}"
    )


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@dots_app.command("view")
def dots_view_cmd(
    run: Annotated[str, typer.Argument(metavar="RUN", help="the run id", show_default=False)],
    out: Annotated[
        Path,
        typer.Option(
            "--out", help="the HTML file to write (replaced when it exists)", metavar="FILE.html"
        ),
    ],
    state_dir: Annotated[
        Path | None,
        typer.Option(
            "--state-dir", help="the supervisor's state directory (default: per-user state path)"
        ),
    ] = None,
) -> None:
    """Draw a run as a timeline in one self-contained HTML page: one lane per role, each
    turn a bar coloured by outcome, decisions, dispatches, pauses, alerts and quota
    observations as marks; select a turn to see its instruction and the head of its
    reply. Read-only: works while a supervisor runs the run."""
    try:
        line = dots_view_command(run, state_dir, out)
    except UsageFailure as exc:
        fail(str(exc))
    sys.stdout.write(line + "\n")


__all__ = ["dots_view_cmd", "dots_view_command"]
