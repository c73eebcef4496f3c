"""markertools.text — every user-visible sentence (INJ-6).

Owns: the message catalogue (`catalog`) merged from the per-area en/zh tables
(`messages_<area>`), the `Msg` value and its rendering (`msg`), and `inline.shown`,
which puts text taken from a turn safely on one line.

May import: nothing else of markertools (it is the bottom layer).
Module paths are internal; the stable names are re-exported by `markertools`.
"""
