# Owns: `markertools dots serve` (docs/cli.md): the supervisor as an MCP server on stdio.
# (Being written: see markertools_adapters.dots.mcp.)
from __future__ import annotations
