# Owns: catalogue rows for the attempts area (en + zh). Keys are prefixed "attempts.".
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {}
