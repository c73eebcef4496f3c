# Owns: catalogue rows for the inject area (en + zh). Keys are prefixed "inject.".
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {}
