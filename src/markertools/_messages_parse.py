# Owns: catalogue rows for the parse area (en + zh). Keys are prefixed "parse.".
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {}
