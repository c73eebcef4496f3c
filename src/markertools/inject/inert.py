# Owns: `inert`, the last defence of INJ-7 for text the library queues as an agent's
# next message (reports, first-turn prompts): parsed as a turn, it holds no marker block
# and no near miss. Pure; calls the parse layer (it is above it), never delivery.
#
# Invariants:
#   Rule 1: text in which the parser finds nothing is returned unchanged.
#   Rule 2: otherwise the opening fence of each block or near miss found is escaped,
#           re-checked, and after a few rounds every fence-like line is escaped, so the
#           result never acts as a block.
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

__all__ = ["inert"]

_LINE_BREAK: Final = re.compile(r"(\r\n|\r|\n)")  # EXT-4: CRLF, CR and LF each end a line
_FENCE_RUN: Final = re.compile(r"`{3,}|~{3,}")
_INERT_PASSES: Final[int] = 4


def _escape_fences(text: str, line_numbers: Iterable[int] | None) -> str:
    """A backslash before the first run of 3+ backticks / tildes of the given 1-based
    lines (None: of every line holding such a run). An escaped fence character is
    literal text in CommonMark, so such a line can no longer open a fence."""
    wanted = None if line_numbers is None else frozenset(line_numbers)
    parts = _LINE_BREAK.split(text)  # line, break, line, break, ..., line
    for index in range(0, len(parts), 2):
        if wanted is not None and index // 2 + 1 not in wanted:
            continue
        match = _FENCE_RUN.search(parts[index])
        if match is not None:
            line = parts[index]
            parts[index] = line[: match.start()] + "\\" + line[match.start() :]
    return "".join(parts)


def inert(text: str) -> str:
    """Rule 2: `text` unchanged when parsing it as a turn finds no marker block and no
    near miss (every correct report); otherwise the opening fence of each one found is
    escaped, re-checking, and after a few rounds every fence-like line is escaped."""
    from markertools.parse.turn import parse_turn  # lazy: parsing loads only when used

    for _ in range(_INERT_PASSES):
        plan = parse_turn(text)
        found = {c.line for c in plan.commands} | {i.line for i in plan.issues}
        if not found:
            return text
        text = _escape_fences(text, found)
    return _escape_fences(text, None)
