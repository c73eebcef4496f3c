"""markertools.inject — what the library writes into an agent's input.

Owns: first-turn prompt injection (`first_turn`, INJ-*), the attempts ledger and resume
preamble (`attempts`, ATT-*), data framing of text another task or model wrote
(`framing`, INJ-7) and the last check that queued text holds no marker block
(`inert`).

May import: `markertools.parse` (only `inert`, to re-parse), `markertools.domain`,
`markertools.text`. Never delivery.
Module paths are internal; the stable names are re-exported by `markertools`.
"""
