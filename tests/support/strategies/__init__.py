"""Hypothesis strategies and world builders, one module per area: `core` (worlds, rigs,
tasks for delivery), `parse`, `todo`, `files`, `plans`, `codex`, `sqlite`, and `hostile`
(text built to open fences, containers and HTML blocks: INJ-7, EXT-2)."""
