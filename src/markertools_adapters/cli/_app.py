# Owns: the typer application object and the helpers every command module shares:
# a usage failure (one line on stderr, exit 2, no traceback) and JSON output.
# Commands live in sibling modules; each only parses options, calls library
# functions and prints (fastapi-cli style).
from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer

app = typer.Typer(
    name="markertools",
    help="Inspect what markertools does with an agent turn: parse, deliver, prompts, plans.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
plan_app = typer.Typer(help="Orchestration proposals (docs/rules.md PLN).", no_args_is_help=True)
world_app = typer.Typer(help="World files and SQLite databases.", no_args_is_help=True)
dots_app = typer.Typer(
    help="The orchestration supervisor: run plans on Codex workers (docs/rules.md DOT).",
    no_args_is_help=True,
)
app.add_typer(plan_app, name="plan")
app.add_typer(dots_app, name="dots")
app.add_typer(world_app, name="world")


class UsageFailure(Exception):
    """Raised by library glue for a usage error or unreadable input (exit 2)."""


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line message to stderr and exit (2 = usage error / unreadable input)."""
    line = " ".join(str(message).split()) or "error"
    sys.stderr.write(f"markertools: {line}\n")
    raise typer.Exit(code)


def emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")
