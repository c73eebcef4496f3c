# Owns: reading a Codex rollout file (`rollout-*.jsonl`: one `{"timestamp", "type",
# "payload"}` object per line, as codex writes under ~/.codex/sessions) into turns.
# Sans-I/O like the app-server reader: bytes in (`feed`), turns out.
#
# Must never: raise on any input, take agent text from anything but `event_msg` payloads
# of type `agent_message` (the same text is also persisted as a `response_item`; reading
# both would double every block), or report a turn still open at the end as finished.
#
# Invariants:
#   Rule 1: a turn opens at `task_started` / `turn_started` and ends at `task_complete` /
#           `turn_complete` (completed; failed when an `error` event that affects the
#           turn status came first) or `turn_aborted` (interrupted). A turn superseded by
#           the next start, or open at the end of the input, ends "inProgress".
#   Rule 2: turn id = the event's `turn_id` (else a `turn_context`'s `turn_id` seen in
#           the turn), else the stable synthesized `line-N` (N = line that opened it).
#   Rule 3: thread id = the first `session_meta` payload's `id`, else the hint given by
#           the caller (the uuid in the file name), else "".
#   Rule 4: a malformed line is a problem and is skipped; it taints the open turn.
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from markertools_adapters.codex._lines import (
    MAX_LINE_BYTES,
    Line,
    LineReader,
    LineSplitter,
    line_object,
)
from markertools_adapters.codex._records import (
    STATUS_COMPLETED,
    STATUS_FAILED,
    STATUS_IN_PROGRESS,
    STATUS_INTERRUPTED,
    CodexProblem,
    CodexTurn,
    clean_text,
    join_messages,
)

# `codex_error_info` values (snake_case in rollouts) that do not fail the turn, as in
# codex's `CodexErrorInfo::affects_turn_status`.
_NON_TERMINAL_ERRORS: Final[frozenset[str]] = frozenset(
    {"thread_rollback_failed", "active_turn_not_steerable"}
)


@attrs.define
class _OpenTurn:
    turn_id: str
    synthesized: bool
    explicit: bool  # opened by task_started (False: implicit, opened by an agent_message)
    messages: list[str] = attrs.Factory(list)
    error: str | None = None
    failed: bool = False
    problem_lines: list[int] = attrs.Factory(list)


class _Shape(Exception):
    pass


class RolloutTurnReader(LineReader):
    """Incremental reader of a rollout JSONL file (same API as AppServerTurnReader).

    `late_aborts` maps a turn id to the line of a `turn_aborted` that named a turn which
    had already ended; whole-file readers downgrade such a turn to "interrupted".
    """

    def __init__(self, *, thread_id: str | None = None, max_line_bytes: int = MAX_LINE_BYTES):
        self._splitter = LineSplitter(max_line_bytes)
        self._hint = thread_id or ""
        self._session: str | None = None
        self._current: _OpenTurn | None = None
        self._ended: dict[str, int] = {}  # turn id -> line that ended it
        self.problems: list[CodexProblem] = []
        self.late_aborts: dict[str, int] = {}

    @property
    def thread_id(self) -> str:
        return self._session if self._session is not None else self._hint

    def _finish(self, out: list[CodexTurn]) -> None:
        self._end(STATUS_IN_PROGRESS, 0, out)

    # ---- lines ---------------------------------------------------------------------

    def _line(self, line: Line, out: list[CodexTurn]) -> None:
        obj, reason = line_object(line)
        if obj is None:
            self._problem(line.number, reason)
            return
        if line.problem is not None:
            self._problem(line.number, line.problem, taint=_carries_turn_text(obj))
        kind = obj.get("type")
        payload = obj.get("payload")
        if not isinstance(kind, str) or not isinstance(payload, dict):
            self._problem(
                line.number, "not a rollout line (expected 'type' and an object 'payload'); skipped"
            )
            return
        try:
            if kind == "session_meta":
                self._session_meta(payload)
            elif kind == "turn_context":
                self._turn_context(payload)
            elif kind == "event_msg":
                event = payload.get("type")
                if not isinstance(event, str):
                    raise _Shape("event_msg payload has no string 'type'")
                handler = _EVENTS.get(event)
                if handler is not None:
                    handler(self, payload, line.number, out)
            # response_item, compacted and unknown line types carry nothing we read
        except _Shape as exc:
            self._problem(line.number, f"{exc}; skipped")

    def _session_meta(self, payload: Mapping[str, Any]) -> None:
        session = payload.get("id")
        if not isinstance(session, str):
            meta = payload.get("meta")  # tolerate a nested shape
            session = meta.get("id") if isinstance(meta, dict) else None
        if not isinstance(session, str):
            raise _Shape("session_meta payload has no string 'id'")
        if self._session is None:
            self._session = clean_text(session)

    def _turn_context(self, payload: Mapping[str, Any]) -> None:
        turn_id = _opt_id(payload)
        if turn_id and self._current is not None and self._current.synthesized:
            self._current.turn_id, self._current.synthesized = turn_id, False

    # ---- events (one handler per event type; table below) ---------------------------

    def _started(self, p: Mapping[str, Any], n: int, out: list[CodexTurn]) -> None:
        self._end(STATUS_IN_PROGRESS, 0, out)  # a turn superseded before it ended
        turn_id = _opt_id(p)
        self._current = _OpenTurn(turn_id or f"line-{n}", turn_id is None, explicit=True)

    def _complete(self, p: Mapping[str, Any], n: int, out: list[CodexTurn]) -> None:
        turn_id = _opt_id(p)
        current = self._current
        if current is None:
            if turn_id not in self._ended:
                self._problem(n, "turn_complete while no turn is open; ignored", taint=False)
            return
        self._adopt_or_check(current, turn_id, n, "turn_complete")
        self._end(STATUS_FAILED if current.failed else STATUS_COMPLETED, n, out)

    def _aborted(self, p: Mapping[str, Any], n: int, out: list[CodexTurn]) -> None:
        turn_id = _opt_id(p)
        current = self._current
        if current is not None and (
            turn_id is None or turn_id == current.turn_id or current.synthesized
        ):
            self._adopt_or_check(current, turn_id, n, "turn_aborted")
            self._end(STATUS_INTERRUPTED, n, out)
        elif turn_id is not None and turn_id in self._ended:
            self.late_aborts[turn_id] = n
        elif current is None:
            self._problem(n, "turn_aborted while no turn is open; ignored", taint=False)
        else:
            self._problem(
                n, f"turn_aborted names turn {turn_id} but turn {current.turn_id} is open; ignored"
            )

    def _error(self, p: Mapping[str, Any], n: int, out: list[CodexTurn]) -> None:
        message = p.get("message")
        if not isinstance(message, str):
            raise _Shape("error event has no string 'message'")
        info = p.get("codex_error_info")
        name = next(iter(info), None) if isinstance(info, dict) else info
        if (isinstance(name, str) and name in _NON_TERMINAL_ERRORS) or self._current is None:
            return
        self._current.failed = True
        self._current.error = clean_text(message)

    def _agent_message(self, p: Mapping[str, Any], n: int, out: list[CodexTurn]) -> None:
        message = p.get("message")
        if not isinstance(message, str):
            raise _Shape("agent_message event has no string 'message'")
        if self._current is None:  # older rollouts: turns were not opened explicitly
            self._current = _OpenTurn(f"line-{n}", True, explicit=False)
        self._current.messages.append(clean_text(message))

    def _user_message(self, p: Mapping[str, Any], n: int, out: list[CodexTurn]) -> None:
        if self._current is not None and not self._current.explicit:
            self._end(STATUS_IN_PROGRESS, 0, out)  # an implicit turn never ended properly

    # ---- helpers -------------------------------------------------------------------

    def _adopt_or_check(self, current: _OpenTurn, turn_id: str | None, n: int, what: str) -> None:
        if turn_id is None or turn_id == current.turn_id:
            return
        if current.synthesized:
            current.turn_id, current.synthesized = turn_id, False
            return
        self._problem(n, f"{what} names turn {turn_id} but turn {current.turn_id} is open")

    def _end(self, status: str, n: int, out: list[CodexTurn]) -> None:
        current, self._current = self._current, None
        if current is None:
            return
        if n:
            self._ended[current.turn_id] = n
        out.append(
            CodexTurn(
                thread_id=self.thread_id,
                turn_id=clean_text(current.turn_id),
                status=status,
                text=join_messages(current.messages),
                error=current.error if status != STATUS_COMPLETED else None,
                line=n,
                problem_lines=tuple(current.problem_lines),
            )
        )

    def _problem(self, n: int, reason: str, *, taint: bool = True) -> None:
        self.problems.append(CodexProblem(n, clean_text(reason)))
        if taint and self._current is not None:
            self._current.problem_lines.append(n)


Handler = Callable[[RolloutTurnReader, Mapping[str, Any], int, list[CodexTurn]], None]

_EVENTS: Final[dict[str, Handler]] = {
    "task_started": RolloutTurnReader._started,
    "turn_started": RolloutTurnReader._started,
    "task_complete": RolloutTurnReader._complete,
    "turn_complete": RolloutTurnReader._complete,
    "turn_aborted": RolloutTurnReader._aborted,
    "error": RolloutTurnReader._error,
    "agent_message": RolloutTurnReader._agent_message,
    "user_message": RolloutTurnReader._user_message,
}


def _opt_id(payload: Mapping[str, Any]) -> str | None:
    value = payload.get("turn_id")
    return value if isinstance(value, str) and value.strip() else None


def _carries_turn_text(obj: Mapping[str, Any]) -> bool:
    payload = obj.get("payload")
    return (
        obj.get("type") == "event_msg"
        and isinstance(payload, dict)
        and payload.get("type") in _EVENTS
    )
