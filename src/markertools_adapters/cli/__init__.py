# Owns: the `markertools` console entry point. Importing this package registers every
# command module on the typer app; `main` runs it and turns any unexpected error into
# a one-line message with exit code 2 (never a traceback), click's usage errors included.
from __future__ import annotations

import sys
from typing import Final

import typer

from markertools_adapters.cli import (  # noqa: F401  (imported to register commands)
    cmd_codex,
    cmd_deliver,
    cmd_demo,
    cmd_dots,
    cmd_dots_serve,
    cmd_guide,
    cmd_parse,
    cmd_plan,
    cmd_prompt,
    cmd_world,
)
from markertools_adapters.cli._app import UsageFailure, app

__all__ = ["app", "main"]

# click's base error class (typer may vendor its own click, so it is found through the
# public typer.BadParameter rather than imported from `click`).
_CLICK_ERROR: Final[type[Exception]] = next(
    (c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"), typer.BadParameter
)


def main() -> None:
    """Run the CLI. Every error leaves as ONE stderr line and exit code 2 (docs/cli.md): a
    library usage failure, a click usage error (unknown option, missing argument, bad
    value: click would draw a multi-line box) and, as a last resort, any other error."""
    try:
        code = app(standalone_mode=False)
    except _CLICK_ERROR as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            sys.exit(2)  # a bare command group: click has already printed its help
        _one_line(str(getattr(exc, "format_message", exc.__str__)()) + _help_hint(exc))
        sys.exit(2)
    except typer.Abort:
        _one_line("aborted")
        sys.exit(130)
    except UsageFailure as exc:
        _one_line(str(exc) or "error")
        sys.exit(2)
    except Exception as exc:  # last resort: one line, never a traceback
        _one_line(f"internal error: {type(exc).__name__}: {exc}")
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)


def _help_hint(exc: Exception) -> str:
    ctx = getattr(exc, "ctx", None)
    return f" (see '{ctx.command_path} --help')" if ctx is not None else ""


def _one_line(message: str) -> None:
    sys.stderr.write("markertools: " + (" ".join(message.split()) or "error") + "\n")
