# Owns: the default state directory of the supervisor (DOT-1): this project's per-user
# state path from platformdirs (`~/.local/state/markertools/dots` on Linux), not the
# seed's `~/.dsh/codex-dots/v2`.
from __future__ import annotations

from pathlib import Path


def default_state_dir() -> Path:
    """The per-user state directory of the supervisor (platformdirs: `…/markertools/dots`)."""
    import platformdirs

    return Path(platformdirs.user_state_dir("markertools", appauthor=False)) / "dots"
