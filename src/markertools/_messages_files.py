# Owns: catalogue rows for the files area (en + zh). Keys are prefixed "files.".
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {}
