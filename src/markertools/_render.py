# Owns: the report message (TRN-6) rendered from report entries in a locale. Data that
# another task produced arrives already framed (INJ-7, `_framing`); this module only
# lays entries out, and makes sure text taken from a turn (ids, names) can never break a
# report line (`shown`). Pure.
#
# Invariants:
#   Rule 1: `shown` output never holds a line break or control character.
#   Rule 2 (INJ-7, defence in depth): a rendered report, parsed as a turn, holds no
#           marker block and no near miss. Handlers already escape or frame everything
#           that did not come from the library; `inert` checks the finished text with
#           the parser itself and escapes the opening fence of anything it still finds,
#           so a value that slipped through unescaped can never act as a block.
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Final

from markertools._inline import shown
from markertools._msg import msg
from markertools._report import ReportEntry

__all__ = ["inert", "render_report", "shown"]

_OUTCOME_ORDER: Final[tuple[str, ...]] = ("done", "rejected", "skipped", "ignored")
_LINE_BREAK: Final = re.compile(r"(\r\n|\r|\n)")  # EXT-4: CRLF, CR and LF each end a line
_FENCE_RUN: Final = re.compile(r"`{3,}|~{3,}")
_INERT_PASSES: Final[int] = 4


def render_report(entries: tuple[ReportEntry, ...], locale: str = "en") -> str:
    """The one report message for the sender: a summary line, then each entry's header
    line and its reason or result."""
    counts: Counter[str] = Counter(e.outcome for e in entries)
    parts = tuple(
        msg(f"report.count_{outcome}", n=counts[outcome])
        for outcome in _OUTCOME_ORDER
        if counts[outcome]
    )
    lines = [msg("report.header", blocks=len(entries), counts=parts).render(locale)]
    for index, entry in enumerate(entries, start=1):
        head_key = "report.entry_target" if entry.target is not None else "report.entry"
        lines.append("")
        lines.append(
            msg(
                head_key,
                n=index,
                kind=shown(entry.kind),
                line=entry.line,
                outcome=msg(f"report.outcome_{entry.outcome}"),
                target=shown(entry.target, 400),
            ).render(locale)
        )
        lines.append(entry.reason.render(locale))
    return inert("\n".join(lines))


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
    from markertools._parse import parse_turn  # lazy: the parse layer never imports this

    for _ in range(_INERT_PASSES):
        plan = parse_turn(text)
        found = {c.line for c in plan.commands} | {i.line for i in plan.issues}
        if not found:
            return text
        text = _escape_fences(text, found)
    return _escape_fences(text, None)
