# Owns: the report message (TRN-6) rendered from report entries in a locale. Data that
# another task produced arrives already framed (INJ-7, `_framing`); this module only
# lays entries out, and makes sure text taken from a turn (ids, names) can never break a
# report line (`shown`). Pure.
from __future__ import annotations

from collections import Counter
from typing import Final

from markertools._msg import msg
from markertools._report import ReportEntry

_OUTCOME_ORDER: Final[tuple[str, ...]] = ("done", "rejected", "skipped", "ignored")


def shown(text: str | None, limit: int = 120) -> str | None:
    """Text from a turn (an id, a name) made safe to show on one report line: control
    characters escaped, cut to `limit` code points. Never lets a newline or fence through."""
    if text is None:
        return None
    out: list[str] = []
    for ch in text[:limit]:
        if ch in "\r\n\t" or ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 or ch in "\u2028\u2029":
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out) + ("…" if len(text) > limit else "")


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
                target=shown(entry.target, 400),
            ).render(locale)
        )
        lines.append(entry.reason.render(locale))
    return "\n".join(lines)
