"""The `markertools` command (docs/cli.md). It needs the `cli` extra
(`pip install 'markertools[cli]'`): typer, rich, the SQLite store and platformdirs.

`main()` is the console entry point (also `python -m markertools`); `app` is the typer
application, loaded on first access so that importing this package costs nothing and
`main()` can say which extra is missing instead of failing with an ImportError.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["app", "main"]

CLI_EXTRA_HINT = "pip install 'markertools[cli]'"
# the top-level modules the `cli` extra provides: a missing one is an install problem
_CLI_EXTRA_MODULES = frozenset({"typer", "click", "rich", "shellingham", "sqlite_utils"})


def main() -> None:
    """Run the `markertools` command with `sys.argv` and exit with its code: 0 success,
    1 invalid input where docs/cli.md says so, 2 usage error or unreadable input (also:
    the `cli` extra is not installed), 3 internal error."""
    try:
        from markertools_adapters.cli._main import run
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in _CLI_EXTRA_MODULES:
            raise
        sys.stderr.write(
            f"markertools: the command line needs the 'cli' extra ({exc.name} is not "
            f"installed): {CLI_EXTRA_HINT}\n"
        )
        sys.exit(2)
    run()


def __getattr__(name: str) -> Any:
    """PEP 562: `app` (the typer application with every command registered)."""
    if name == "app":
        from markertools_adapters.cli._main import app, register

        register(None)  # every command
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
