"""`python -m markertools ...`: the `markertools` command without its console script.

An entry point, not part of the library: it hands over to the CLI adapter, found by
name at run time so that the pure core (everything else in `markertools`) keeps
importing no adapter (the `core-pure` contract of pyproject.toml). Without the `cli`
extra it prints what to install and exits 2.
"""

from __future__ import annotations

from importlib import import_module


def main() -> None:
    """Run the `markertools` command with this process's arguments."""
    import_module("markertools_adapters.cli").main()


if __name__ == "__main__":
    main()
