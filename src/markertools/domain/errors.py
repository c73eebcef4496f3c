# Owns: how the library speaks of a failure it caught: `summarize_error` (TRN-8), the one
# line a report, an audit record, a requeue result or a prompt note shows for an
# exception. Delivery, the injection assembly and the stores all use it, so it lives in
# the shared domain layer and is public (`markertools.summarize_error`).
#
# Must never: raise, whatever the exception (TRN-8); import a pipeline stage.
#
# Invariants:
#   Rule 1: the summary is one line of at most ERROR_SUMMARY_CHARS code points.
from __future__ import annotations

from typing import Final

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
