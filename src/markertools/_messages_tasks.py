# Owns: catalogue rows for the tasks area (en + zh). Keys are prefixed "tasks.".
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {}
