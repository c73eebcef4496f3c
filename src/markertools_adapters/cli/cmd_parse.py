# Owns: `markertools parse` (docs/cli.md): extract and validate one turn's blocks and print
# the plan: a readable table, or with `--json` the contract
#   {"commands": [{"kind", "line", "params", "written_kind", "notes"}],
#    "issues": [{"kind", "line", "outcome", "reason"}]}
# (`written_kind` and `notes` are additive). The Codex sources (`--codex-events`,
# `--codex-rollout`, `--turn`) are declared here and handled by `cmd_codex`.
#
# Must never: print a traceback, decide anything itself (the library parses), or run a
# block. Exit 0 whenever the input was read (skipped blocks are still success); exit 2
# with one stderr line for a usage error or unreadable input (missing file, directory,
# invalid UTF-8).
#
# Invariants:
#   Rule 1: JSON commands are in execution order with canonical kinds and every params
#           field (tuples as lists); issues in order of appearance.
#   Rule 2: the table lists every block by line, so a person sees the text's order,
#           with the execution position of each command.
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from markertools import LOCALES, parse_turn
from markertools_adapters.cli._app import app, fail
from markertools_adapters.cli._planout import print_plan, read_turn_text


@app.command("parse")
def parse_cmd(
    file: Annotated[
        str | None, typer.Argument(help="the turn's text: a file, or '-' for stdin")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the plan as JSON")] = False,
    codex_events: Annotated[
        Path | None,
        typer.Option("--codex-events", help="a Codex app-server notification stream (JSONL)"),
    ] = None,
    codex_rollout: Annotated[
        Path | None, typer.Option("--codex-rollout", help="a Codex rollout file")
    ] = None,
    turn: Annotated[
        str | None, typer.Option("--turn", help="the Codex turn to parse (default: list turns)")
    ] = None,
    locale: Annotated[str, typer.Option("--locale", help="language of reasons: en or zh")] = "en",
) -> None:
    """Extract and validate the marker blocks of one turn (no world needed)."""
    if locale not in LOCALES:
        fail(f"--locale must be one of {', '.join(LOCALES)}, got {locale!r}")
    codex = codex_events is not None or codex_rollout is not None
    if codex and file is not None:
        fail("give either FILE or a Codex option (--codex-events / --codex-rollout), not both")
    if not codex and file is None:
        fail("missing FILE (a transcript, or '-' for stdin) or --codex-events/--codex-rollout")
    if turn is not None and not codex:
        fail("--turn needs --codex-events FILE or --codex-rollout FILE")
    if codex:
        from markertools_adapters.cli.cmd_codex import run_codex_parse

        run_codex_parse(events=codex_events, rollout=codex_rollout, turn=turn, as_json=as_json)
        return
    assert file is not None
    print_plan(parse_turn(read_turn_text(file)), as_json, locale)
