# Owns: the values the Codex readers produce — one `CodexTurn` per turn that ended (or
# was still open when the input ended), one `CodexProblem` per input line that could not
# be used — plus the one table mapping a Codex turn status to a markertools turn outcome
# and the one rule joining a turn's agent messages into the turn's text.
#
# Must never: do I/O, raise on any value it is given, or invent a "completed" outcome.
#
# Invariants:
#   Rule 1: only the Codex status "completed" maps to the outcome "completed" (TRN-3);
#           every other status, known or not, maps to an outcome delivery discards, and
#           so does a completed turn that may have lost a message ("incomplete").
#   Rule 2: a turn's text is its agent messages, in order, joined by one blank line
#           ("\n\n"); empty messages add nothing.
#   Rule 3: every string stored in a record is valid Unicode (lone surrogates, which
#           JSON can smuggle in as "\ud800", become U+FFFD), so printing never fails.
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

import attrs

# Codex `TurnStatus` values (app-server v2 schema) that end a turn.
STATUS_COMPLETED: Final = "completed"
STATUS_INTERRUPTED: Final = "interrupted"
STATUS_FAILED: Final = "failed"
# A turn still open when the input ended (no turn/completed, no task_complete).
STATUS_IN_PROGRESS: Final = "inProgress"

ENDING_STATUSES: Final[frozenset[str]] = frozenset(
    {STATUS_COMPLETED, STATUS_INTERRUPTED, STATUS_FAILED}
)

# Codex status -> markertools turn outcome (the `outcome` argument of deliver_turn).
# One table; anything not in it is "unfinished" (never delivered).
OUTCOME_OF_STATUS: Final[dict[str, str]] = {
    STATUS_COMPLETED: "completed",
    STATUS_INTERRUPTED: "interrupted",
    STATUS_FAILED: "failed",
    STATUS_IN_PROGRESS: "unfinished",
}
OUTCOME_UNFINISHED: Final = "unfinished"
# A completed turn that overlaps a skipped malformed line: possibly missing a message.
OUTCOME_INCOMPLETE: Final = "incomplete"

MESSAGE_SEPARATOR: Final = "\n\n"

_SURROGATES = re.compile("[\ud800-\udfff]")


def clean_text(value: str) -> str:
    """`value` with lone surrogates replaced by U+FFFD (Rule 3)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATES.sub("\ufffd", value)
    return value


def join_messages(messages: Iterable[str]) -> str:
    """Rule 2: the turn text made of its agent messages."""
    return MESSAGE_SEPARATOR.join(m for m in messages if m)


def outcome_of(status: str) -> str:
    """Rule 1: the markertools turn outcome for a Codex turn status."""
    return OUTCOME_OF_STATUS.get(status, OUTCOME_UNFINISHED)


@attrs.frozen
class CodexProblem:
    """An input line that was skipped (or, for invalid UTF-8, repaired), and why."""

    line: int  # 1-based line number in the input
    reason: str

    def to_json(self) -> dict[str, object]:
        return {"line": self.line, "reason": self.reason}


@attrs.frozen
class CodexTurn:
    """One Codex turn: who, how it ended, and the agent text markertools parses.

    `problem_lines` are the lines of problems that may have cost this turn some of its
    content (a malformed line seen while the turn was open that could not be attributed
    to another turn, or one attributed to this turn). Such a turn is never `deliverable`:
    delivering a turn with a missing message could execute half of what the agent meant.
    """

    thread_id: str
    turn_id: str
    status: str  # "completed" | "interrupted" | "failed" | "inProgress"
    text: str
    error: str | None = None
    line: int = 0  # the line that ended the turn (0 when the input ended first)
    problem_lines: tuple[int, ...] = ()

    @property
    def outcome(self) -> str:
        return outcome_of(self.status)

    @property
    def finished(self) -> bool:
        return self.status in ENDING_STATUSES

    @property
    def deliverable(self) -> bool:
        return self.outcome == "completed" and not self.problem_lines

    @property
    def delivery_outcome(self) -> str:
        """What to pass to `deliver_turn(outcome=...)`: `outcome`, except that a completed
        turn with `problem_lines` is "incomplete" (so delivery discards it, TRN-3)."""
        if self.outcome == "completed" and self.problem_lines:
            return OUTCOME_INCOMPLETE
        return self.outcome


@attrs.frozen
class CodexTranscript:
    """Everything read from one file: turns in the order they ended (turns still open
    at the end of the input come last, in the order they began) and problems."""

    turns: tuple[CodexTurn, ...] = ()
    problems: tuple[CodexProblem, ...] = ()

    def find(self, turn_id: str) -> tuple[CodexTurn, ...]:
        return tuple(t for t in self.turns if t.turn_id == turn_id)

    def last_completed(self) -> CodexTurn | None:
        for turn in reversed(self.turns):
            if turn.status == STATUS_COMPLETED:
                return turn
        return None
