# Owns: the report message (TRN-6) rendered from report entries in a locale. Data that
# another task produced arrives already framed (INJ-7, `framing`); this module only
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

from collections import Counter
from typing import Final

from markertools.deliver.report import ReportEntry
from markertools.inject.inert import inert
from markertools.text.inline import shown
from markertools.text.msg import msg

__all__ = ["render_report", "shown"]

_OUTCOME_ORDER: Final[tuple[str, ...]] = ("done", "rejected", "skipped", "ignored")


def render_report(entries: tuple[ReportEntry, ...], locale: str = "en") -> str:
    """The one report message for the sender: a summary line, then each entry's header
    line and its reason or result."""
    counts: Counter[str] = Counter()
    for e in entries:  # a TRN-12 summary entry counts every block it stands for
        counts[e.outcome] += e.count
    parts = tuple(
        msg(f"report.count_{outcome}", n=counts[outcome])
        for outcome in _OUTCOME_ORDER
        if counts[outcome]
    )
    total = sum(counts.values())
    lines = [msg("report.header", blocks=total, counts=parts).render(locale)]
    for index, entry in enumerate(entries, start=1):
        if entry.count != 1 or entry.last_line is not None:
            head_key = "report.entry_summary"
        elif entry.target is not None:
            head_key = "report.entry_target"
        else:
            head_key = "report.entry"
        lines.append("")
        lines.append(
            msg(
                head_key,
                n=index,
                kind=shown(entry.kind),
                line=entry.line,
                last=entry.line if entry.last_line is None else entry.last_line,
                count=entry.count,
                outcome=msg(f"report.outcome_{entry.outcome}"),
                target=shown(entry.target, 400),
            ).render(locale)
        )
        lines.append(entry.reason.render(locale))
    return inert("\n".join(lines))
