# Owns: running the `markertools` command: importing a command module registers its
# commands on the typer app (`register`); `run` registers only the module of the command
# on the command line (every module for help, completion or an unknown name), invokes
# the app and turns every way out into an exit code and at most one stderr line
# (docs/cli.md "General rules").
#
# Invariants:
#   Rule 1: exit 0 success; 1 invalid input where the contract says so (`plan
#           validate`); 2 usage error or unreadable input - a library UsageFailure, a
#           click usage error (unknown option, missing argument, bad value: click would
#           draw a multi-line box), a missing optional extra; 3 an internal error.
#   Rule 2: an internal error is one line, "internal error: <type>: <text>; please report
#           it ...", and the traceback follows only with `--debug` or MARKERTOOLS_DEBUG=1.
from __future__ import annotations

import os
import pkgutil
import sys
import traceback
from importlib import import_module
from pathlib import Path
from typing import Final, NoReturn

import typer

from markertools_adapters.cli._app import UsageFailure, app, debug_requested
from markertools_adapters.stores import EXTRA_MODULES, MissingExtra

__all__ = ["COMMAND_MODULES", "all_modules", "app", "register", "run"]

# first command-line word -> the modules (of this package) that register its commands;
# a word not listed here (a new command, a typo, help) registers every module
COMMAND_MODULES: Final[dict[str, tuple[str, ...]]] = {
    "deliver": ("cmd_deliver",),
    "demo": ("cmd_demo",),
    "parse": ("cmd_parse",),
    "guide": ("cmd_guide",),
    "schema": ("cmd_guide",),
    "prompt": ("cmd_prompt",),
    "plan": ("cmd_plan",),
    "world": ("cmd_world",),
    "automations": ("cmd_automations",),
    "approvals": ("cmd_approvals",),
    "dots": ("cmd_dots", "cmd_dots_serve", "cmd_dots_view"),
    "view": ("cmd_view",),
    "tools": ("cmd_tools",),
    "worker": ("cmd_worker",),
}


def all_modules() -> tuple[str, ...]:
    """Every command module of this package (`cmd_*.py`), found on disk, so a new one
    registers without being listed anywhere."""
    here = [str(Path(__file__).resolve().parent)]  # this package, without importing it
    return tuple(sorted(m.name for m in pkgutil.iter_modules(here) if m.name.startswith("cmd_")))


EXIT_USAGE: Final[int] = 2
EXIT_INTERNAL: Final[int] = 3
ISSUES_URL: Final[str] = "https://github.com/markertools/markertools/issues"

# click's base error class (typer may vendor its own click, so it is found through the
# public typer.BadParameter rather than imported from `click`).
_CLICK_ERROR: Final[type[Exception]] = next(
    (c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"), typer.BadParameter
)


def register(argv: list[str] | None = None) -> None:
    """Import the command modules `argv` (the arguments after the program name) needs,
    registering their commands on `app`; None or no known command word: all of them."""
    words = [a for a in argv or [] if not a.startswith("-")]
    known = COMMAND_MODULES.get(words[0]) if words else None
    wanted = known if known is not None and argv is not None else all_modules()
    for name in wanted:
        import_module(f"markertools_adapters.cli.{name}")


def run() -> None:
    """Run the CLI on `sys.argv` and exit (Rule 1)."""
    completing = any(k.endswith("_COMPLETE") and k.startswith("_") for k in os.environ)
    try:
        register(None if completing else sys.argv[1:])
    except KeyboardInterrupt:  # Ctrl-C while the command modules load: no traceback
        _one_line("interrupted")
        sys.exit(130)
    try:
        code = app(standalone_mode=False)
    except _CLICK_ERROR as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            sys.exit(EXIT_USAGE)  # a bare command group: click has already printed its help
        _one_line(str(getattr(exc, "format_message", exc.__str__)()) + _help_hint(exc))
        sys.exit(EXIT_USAGE)
    except typer.Abort:
        _one_line("aborted")
        sys.exit(130)
    except KeyboardInterrupt:
        _one_line("interrupted")
        sys.exit(130)
    except (UsageFailure, MissingExtra) as exc:
        _one_line(str(exc) or "error")
        sys.exit(EXIT_USAGE)
    except ImportError as exc:  # an optional dependency a command needs is not installed
        extra = _extra_of(exc)
        if extra is None:
            _internal(exc)
        _one_line(str(MissingExtra(extra, "this command", (exc.name or "").split(".")[0])))
        sys.exit(EXIT_USAGE)
    except Exception as exc:
        _internal(exc)
    sys.exit(code if isinstance(code, int) else 0)


def _internal(exc: BaseException) -> NoReturn:
    """Rule 2: one line, the traceback only when asked for; exit 3."""
    _one_line(
        f"internal error: {type(exc).__name__}: {exc}; please report it at {ISSUES_URL}"
        + ("" if _debug() else " (run with --debug or MARKERTOOLS_DEBUG=1 for the traceback)")
    )
    if _debug():
        traceback.print_exception(exc, file=sys.stderr)
    sys.exit(EXIT_INTERNAL)


def _extra_of(exc: ImportError) -> str | None:
    """The extra that provides the module `exc` could not import, if one does."""
    root = (exc.name or "").split(".")[0]
    for extra in ("mcp", "postgres", "zstd", "views", "cli", "sqlite"):
        if root in EXTRA_MODULES[extra]:
            return extra
    return None


def _debug() -> bool:
    return debug_requested() or os.environ.get("MARKERTOOLS_DEBUG", "") not in ("", "0")


def _help_hint(exc: Exception) -> str:
    ctx = getattr(exc, "ctx", None)
    return f" (see '{ctx.command_path} --help')" if ctx is not None else ""


def _one_line(message: str) -> None:
    sys.stderr.write("markertools: " + (" ".join(message.split()) or "error") + "\n")
