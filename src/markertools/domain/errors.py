# Owns: the root of the exception tree (`MarkertoolsError`, FLT-8) and the fencing refusal
# (`LeaseLost`, FLT-1), and how the library speaks of a failure it caught: `summarize_error` (TRN-8), the one
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

from markertools._root import InvalidArgument as InvalidArgument
from markertools._root import InvalidType as InvalidType
from markertools._root import MarkertoolsError as MarkertoolsError

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


class LeaseLost(MarkertoolsError):
    """FLT-1: a write carried a claim that no longer holds its task - the task was
    requeued and claimed again (a newer epoch), or left `running` - so the write was
    refused and nothing changed. The runner must stand down: stop the attempt and write
    nothing more for the task. `current_epoch` is None when the task is gone."""

    def __init__(
        self, task_id: str, epoch: int, current_epoch: int | None, status: str | None
    ) -> None:
        super().__init__(task_id, epoch, current_epoch, status)  # picklable
        self.task_id = task_id
        self.epoch = epoch
        self.current_epoch = current_epoch
        self.status = status

    def __str__(self) -> str:
        if self.current_epoch is None:
            now = "the task no longer exists"
        elif self.current_epoch != self.epoch:
            now = f"it is claim {self.current_epoch} now, {self.status}"
        else:
            now = f"the task is {self.status}, no longer running under this claim"
        return (
            f"lease lost: task {self.task_id!r} is no longer held by claim {self.epoch} "
            f"({now}); nothing was written - stop this attempt and write nothing more for it"
        )


def _head(digest: str) -> str:
    kind, _, hexdigest = digest.partition(":")
    return f"{kind}:{hexdigest[:12]}" if hexdigest else digest[:17]


class TurnFinishedDifferently(MarkertoolsError, ValueError):
    """FLT-6: `finish_turn` (or `charge_turn`) was called again for a finished turn id
    with another outcome, result, error or cost: refused, nothing written. `stored` and
    `given` are the two digests (`markertools.finish_digest`)."""

    def __init__(self, task_id: str, turn_id: str, stored: str, given: str) -> None:
        super().__init__(task_id, turn_id, stored, given)
        self.task_id = task_id
        self.turn_id = turn_id
        self.stored = stored
        self.given = given

    def __str__(self) -> str:
        return (
            f"turn {self.turn_id!r} of task {self.task_id!r} was already finished with other"
            f" input (stored digest {_head(self.stored)}…, this one {_head(self.given)}…):"
            " nothing was written; a turn id is finished once - give a new turn its own id"
        )


class CallIdReused(MarkertoolsError, ValueError):
    """FLT-6: a same-turn tool call id came again with other arguments: refused, nothing
    run or written. `stored` and `given` are the digests of the two argument sets."""

    def __init__(self, sender: str, call_id: str, stored: str, given: str) -> None:
        super().__init__(sender, call_id, stored, given)
        self.sender = sender
        self.call_id = call_id
        self.stored = stored
        self.given = given

    def __str__(self) -> str:
        return (
            f"call id {self.call_id!r} of task {self.sender!r} was already used with other"
            f" arguments (stored digest {_head(self.stored)}…, this one {_head(self.given)}…):"
            " nothing was run or replayed; give each call its own id"
        )
