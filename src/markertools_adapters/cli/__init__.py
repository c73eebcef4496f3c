# Owns: the `markertools` console entry point. Importing this package registers every
# command module on the typer app; `main` runs it and turns any unexpected error into
# a one-line message with exit code 2 (never a traceback).
from __future__ import annotations

import sys

from markertools_adapters.cli import (  # noqa: F401  (imported to register commands)
    cmd_codex,
    cmd_deliver,
    cmd_demo,
    cmd_guide,
    cmd_parse,
    cmd_plan,
    cmd_prompt,
    cmd_world,
)
from markertools_adapters.cli._app import UsageFailure, app

__all__ = ["app", "main"]


def main() -> None:
    try:
        app()
    except UsageFailure as exc:
        sys.stderr.write("markertools: " + (" ".join(str(exc).split()) or "error") + "\n")
        sys.exit(2)
    except Exception as exc:  # last resort: one line, never a traceback
        sys.stderr.write(f"markertools: internal error: {type(exc).__name__}: {exc}\n")
        sys.exit(2)
