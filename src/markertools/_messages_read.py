# Owns: catalogue rows for the read area (en + zh). Keys are prefixed "read.".
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {}
