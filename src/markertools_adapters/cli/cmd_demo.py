# Owns: the `demo` CLI commands (not yet registered: see the issue that builds them).
from __future__ import annotations
