# Owns: how delivery speaks of a failure: the "markertools" logger - a WARNING per
# failing port call (`warn`, with `summarize_error` of domain/errors.py) and an INFO
# record per delivered turn (`log_turn`).
#
# Must never: configure logging beyond a NullHandler (the embedding application decides
# where records go), create the logger at import, or raise.
#
# Invariants:
#   Rule 1: the logger is made on first use, never at import.
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from markertools.domain.errors import summarize_error

if TYPE_CHECKING:
    from markertools.deliver.report import DeliveryReport

__all__ = ["log_turn", "summarize_error", "warn"]


def warn(what: str, exc: BaseException) -> None:
    """A WARNING per failing port call, with its summary (logger "markertools")."""
    _logger().warning("port call failed: %s: %s", what, summarize_error(exc))


def log_turn(report: DeliveryReport, sender: str, start: float | None, end: float | None) -> None:
    """One INFO record per delivered turn: sender, turn id, counts per outcome, ms."""
    counts: dict[str, int] = {}
    for e in report.entries:
        counts[e.outcome] = counts.get(e.outcome, 0) + e.count
    ms = (end - start) * 1000.0 if start is not None and end is not None else -1.0
    _logger().info(
        "delivered turn of %s (turn id %s): %s; report %s; %.1f ms",
        sender,
        report.turn_id,
        ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "no blocks",
        "queued" if report.report_queued else f"NOT queued ({report.report_error})",
        ms,
    )


_LOGGER: list[Any] = []


def _logger() -> Any:
    """Rule 2: the "markertools" logger, with a NullHandler (library convention: the
    embedding application decides where records go). Made on first use."""
    if not _LOGGER:
        import logging

        logger = logging.getLogger("markertools")
        logger.addHandler(logging.NullHandler())
        _LOGGER.append(logger)
    return _LOGGER[0]
