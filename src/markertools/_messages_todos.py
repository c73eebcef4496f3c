# Owns: catalogue rows for the todos area (en + zh). Keys are prefixed "todos.".
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {}
