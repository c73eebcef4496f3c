# Owns: catalogue rows for the automations area (en + zh). Keys are prefixed "automations.".
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {}
