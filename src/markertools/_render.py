# Owns: the report message (TRN-6) rendered from report entries in a locale. Data that
# another task produced arrives already framed (INJ-7, `_framing`); this module only
# lays entries out. Pure.
from __future__ import annotations

from collections import Counter
from typing import Final

from markertools._msg import msg
from markertools._report import ReportEntry

_OUTCOME_ORDER: Final[tuple[str, ...]] = ("done", "rejected", "skipped", "ignored")


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
                kind=entry.kind,
                line=entry.line,
                outcome=msg(f"report.outcome_{entry.outcome}"),
                target=entry.target,
            ).render(locale)
        )
        lines.append(entry.reason.render(locale))
    return "\n".join(lines)
