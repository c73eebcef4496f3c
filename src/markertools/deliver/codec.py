# Owns: report entries and delivery reports as JSON text and back, for the delivery
# journal (TRN-9): a block's stored entry, and the finished report a replay returns.
# Pure.
#
# Invariants:
#   Rule 1: entry_from_json(entry_to_json(e)) == e; report_from_json(report_to_json(r))
#           == r except `replayed`, which the caller sets.
#   Rule 2: the *_from_json functions raise ValueError (only) for damaged text.
from __future__ import annotations

import json
from typing import Any

import attrs

from markertools._root import InvalidArgument
from markertools.deliver.report import DeliveryReport, NotDelivered, ReportEntry
from markertools.text.msgjson import msg_from_json, msg_to_json

_OUTCOMES = ("done", "rejected", "skipped", "ignored")


def _entry_out(entry: ReportEntry) -> dict[str, Any]:
    return {
        "kind": entry.kind,
        "line": entry.line,
        "outcome": entry.outcome,
        "target": entry.target,
        "reason": msg_to_json(entry.reason),
        "count": entry.count,
        "last_line": entry.last_line,
    }


def _entry_in(value: Any) -> ReportEntry:
    if not isinstance(value, dict):
        raise InvalidArgument("an entry must be an object")
    outcome = value.get("outcome")
    if outcome not in _OUTCOMES:
        raise InvalidArgument(f"bad entry outcome {outcome!r}")
    kind, line, target = value.get("kind"), value.get("line"), value.get("target")
    if not isinstance(kind, str) or not isinstance(line, int) or isinstance(line, bool):
        raise InvalidArgument("an entry needs a string kind and an integer line")
    if target is not None and not isinstance(target, str):
        raise InvalidArgument("an entry's target must be a string or null")
    count, last = value.get("count", 1), value.get("last_line")
    if not isinstance(count, int) or (last is not None and not isinstance(last, int)):
        raise InvalidArgument("an entry's count and last_line must be integers")
    return ReportEntry(
        kind, line, outcome, target, msg_from_json(value.get("reason")), count=count, last_line=last
    )


def entry_to_json(entry: ReportEntry) -> str:
    return json.dumps(_entry_out(entry), ensure_ascii=False, separators=(",", ":"))


def entry_from_json(text: str) -> ReportEntry:
    try:
        return _entry_in(json.loads(text))
    except (TypeError, RecursionError) as exc:
        raise InvalidArgument(f"damaged journal entry: {exc}") from None


def report_to_json(report: DeliveryReport) -> str:
    nd = report.not_delivered
    body = {
        "delivered": report.delivered,
        "entries": [_entry_out(e) for e in report.entries],
        "message": report.message,
        "followups": list(report.queued_followups),
        "locale": report.locale,
        "turn_id": report.turn_id,
        "report_queued": report.report_queued,
        "report_error": report.report_error,
        "not_delivered": None
        if nd is None
        else {"code": nd.code, "reason": msg_to_json(nd.reason)},
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def report_from_json(text: str) -> DeliveryReport:
    try:
        body = json.loads(text)
        if not isinstance(body, dict):
            raise InvalidArgument("a report must be an object")
        nd = body.get("not_delivered")
        return DeliveryReport(
            delivered=bool(body["delivered"]),
            entries=tuple(_entry_in(e) for e in body.get("entries") or []),
            message=body.get("message"),
            queued_followups=tuple(str(f) for f in body.get("followups") or []),
            locale=str(body.get("locale") or "en"),
            turn_id=body.get("turn_id"),
            report_queued=bool(body.get("report_queued", True)),
            report_error=body.get("report_error"),
            not_delivered=None
            if nd is None
            else NotDelivered(str(nd["code"]), msg_from_json(nd["reason"])),
        )
    except (KeyError, TypeError, RecursionError) as exc:
        raise InvalidArgument(f"damaged journal report: {exc}") from None


def replayed(report: DeliveryReport) -> DeliveryReport:
    return attrs.evolve(report, replayed=True)
