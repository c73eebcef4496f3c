"""markertools.domain — the vocabulary every stage shares.

Owns: the domain model (`model`: tasks, todos, automations, attempts, grants, …), the
ports a worker implements (`ports`), permission decisions (`decision`), time-string
parsing (`timeparse`, AUT-2), the automation schedule (`schedule`, AUT-3) and the one-line
summary of a caught exception (`errors.summarize_error`, TRN-8). These are
kept apart from the pipeline stages because parse, inject, deliver and plans all read
them, and none of them reads a stage: a separate layer makes that one-way rule visible
and checkable (`pyproject.toml`, import-linter).

May import: `markertools.text`.
Module paths are internal; the stable names are re-exported by `markertools`.
"""
