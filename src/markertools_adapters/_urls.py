# Owns: telling a PostgreSQL connection URL from a SQLite path (`is_postgres_url`), for
# `stores` (which opens either) and the `postgres` package (which re-exports it). A leaf
# module: it imports nothing of markertools_adapters, so neither of them imports the
# other to ask.
from __future__ import annotations

import re
from pathlib import Path
from typing import Final

__all__ = ["is_postgres_url"]

_URL: Final[re.Pattern[str]] = re.compile(r"^postgres(?:ql)?://", re.IGNORECASE)


def is_postgres_url(text: str | Path) -> bool:
    """True for a `postgresql://` or `postgres://` connection URL (a `Path` never is)."""
    return isinstance(text, str) and _URL.match(text) is not None
