# Owns: how delivery speaks of a failure: `summarize_error` (TRN-8: one line, never
# raises) and the "markertools" logger - a WARNING per failing port call (`warn`) and an
# INFO record per delivered turn (`log_turn`).
#
# Must never: configure logging beyond a NullHandler (the embedding application decides
# where records go), create the logger at import, or raise.
#
# Invariants:
#   Rule 1: `summarize_error` never raises, whatever the exception (TRN-8).
#   Rule 2: the logger is made on first use, never at import.
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from markertools.deliver.report import DeliveryReport

ERROR_SUMMARY_CHARS: Final[int] = 300


def summarize_error(exc: BaseException) -> str:
    """One line, at most ERROR_SUMMARY_CHARS code points: `TypeName: message`.

    Never raises (TRN-8): an exception whose `str()` itself fails, or returns something
    other than a str, is summarised by its type name alone."""
    name = getattr(type(exc), "__name__", "Exception")
    try:
        detail = str(exc)
    except Exception:  # str() also raises when __str__ returns something else
        detail = "(the error message could not be read)"
    text = " ".join(f"{name}: {detail}".split())
    return text if len(text) <= ERROR_SUMMARY_CHARS else text[: ERROR_SUMMARY_CHARS - 1] + "…"


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
