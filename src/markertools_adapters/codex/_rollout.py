# Owns: reading a Codex rollout file (`rollout-*.jsonl`: one `{"timestamp", "type",
# "payload"}` object per line, as codex writes under ~/.codex/sessions) into turns.
# Sans-I/O like the app-server reader: bytes in (`feed`), turns out.
#
# Must never: raise on any input, add up two copies of the same agent text (codex
# persists each agent message up to three times, see Rule 5), report a turn still open
# at the end as finished, return a turn it knows was reverted, or present a completed
# turn whose text it could not find as a clean "completed, 0 blocks".
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
#   Rule 5: a turn's text comes from ONE source, the first of these the turn has:
#           (a) `response_item` assistant `message`s (content `output_text`), the
#           history codex replays to the model; (b) `event_msg` `item_completed` items
#           of type AgentMessage (content `Text`; codex >= 0.1xx, e.g. 0.169); (c)
#           `event_msg` `agent_message` events (older rollouts); (d) the
#           `last_agent_message` of the turn's `task_complete`. Messages are joined as
#           `join_messages` says. When (a) and (b) both exist and disagree, the turn is
#           tainted (one of them lost a message). A completed turn with no text from
#           any source is a problem on its completion line and is tainted, so it is
#           never delivered as an empty turn.
#   Rule 6: reverted turns are never returned once the reader knows they are reverted.
#           `thread_rolled_back {num_turns}` (older codex) reverts the last num_turns
#           turns that ended before it: they were already returned, so they are listed
#           in `reverted` and whole-file readers drop them. `reverted_from_ordinal`
#           (set by the file reader from a later segment's `history_base`, codex
#           >= 0.169 `thread/revert`) reverts every turn from the first line whose
#           `ordinal` reaches it: those are never returned. Each dropped turn is a
#           problem naming it.
#   Rule 7: a file whose first JSON object is not enveloped (`{"record_type": ...}`, a
#           bare response item, no `payload`: rollouts written before 2025) is refused:
#           one problem says so and no line of it is read.
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
# `item_completed` item types that are the agent's answer (0.169 writes "AgentMessage").
_AGENT_ITEM_TYPES: Final[frozenset[str]] = frozenset({"AgentMessage", "agentMessage"})
# `response_item` message content part types that are assistant text.
_OUTPUT_TEXT_TYPES: Final[frozenset[str]] = frozenset({"output_text", "text"})

NO_TEXT_REASON: Final = (
    "turn {turn} completed but no agent text was found for it (no assistant "
    "response_item message, AgentMessage item_completed, agent_message or "
    "last_agent_message): the file may come from a Codex version this reader does not "
    "know; the turn is not deliverable"
)
LEGACY_REASON: Final = (
    "not a rollout this reader can read: the first record has no "
    '{{"timestamp", "type", "payload"}} envelope ({found}); rollouts written by Codex '
    "before 2025 are not supported, so no turn of this file was read"
)


@attrs.define
class _OpenTurn:
    turn_id: str
    synthesized: bool
    explicit: bool  # opened by task_started (False: implicit, opened by an agent_message)
    line: int = 0  # the line that opened it
    responses: list[str] = attrs.Factory(list)  # Rule 5 (a)
    items: list[str] = attrs.Factory(list)  # Rule 5 (b)
    item_positions: dict[str, int] = attrs.Factory(dict)
    messages: list[str] = attrs.Factory(list)  # Rule 5 (c)
    last_message: str | None = None  # Rule 5 (d)
    error: str | None = None
    failed: bool = False
    reverted: bool = False
    problem_lines: list[int] = attrs.Factory(list)


class _Shape(Exception):
    pass


class RolloutTurnReader(LineReader):
    """Incremental reader of a rollout JSONL file (same API as AppServerTurnReader).

    `late_aborts` maps a turn id to the line of a `turn_aborted` that named a turn which
    had already ended; whole-file readers downgrade such a turn to "interrupted".
    `reverted` maps (turn id, line that ended it) of an already returned turn to the
    line of the `thread_rolled_back` that reverted it; whole-file readers drop it.
    `reverted_from_ordinal`: every turn from the first line whose `ordinal` is at least
    this is reverted and never returned (`revert_note` says by what, for the problems).
    """

    def __init__(
        self,
        *,
        thread_id: str | None = None,
        max_line_bytes: int = MAX_LINE_BYTES,
        reverted_from_ordinal: int | None = None,
        revert_note: str = "",
    ):
        self._splitter = LineSplitter(max_line_bytes)
        self._hint = thread_id or ""
        self._session: str | None = None
        self._current: _OpenTurn | None = None
        self._ended: dict[str, int] = {}  # turn id -> line that ended it
        self._returned: list[tuple[str, int]] = []  # (turn id, end line), not reverted
        self._cut = reverted_from_ordinal
        self._past_cut = False
        self._revert_note = revert_note
        self._legacy: bool | None = None  # None: no JSON object seen yet
        self.problems: list[CodexProblem] = []
        self.late_aborts: dict[str, int] = {}
        self.reverted: dict[tuple[str, int], int] = {}

    @property
    def thread_id(self) -> str:
        return self._session if self._session is not None else self._hint

    def _finish(self, out: list[CodexTurn]) -> None:
        self._end(STATUS_IN_PROGRESS, 0, out)

    # ---- lines ---------------------------------------------------------------------

    def _line(self, line: Line, out: list[CodexTurn]) -> None:
        if self._legacy:
            return  # Rule 7: the file was refused
        obj, reason = line_object(line)
        if obj is None:
            self._problem(line.number, reason)
            return
        kind = obj.get("type")
        payload = obj.get("payload")
        enveloped = isinstance(kind, str) and isinstance(payload, dict)
        if self._legacy is None:
            self._legacy = not enveloped
            if self._legacy:
                self._problem(line.number, LEGACY_REASON.format(found=_legacy_evidence(obj)))
                return
        if line.problem is not None:
            self._problem(line.number, line.problem, taint=_carries_turn_text(obj))
        if not isinstance(kind, str) or not isinstance(payload, dict):
            self._problem(
                line.number, "not a rollout line (expected 'type' and an object 'payload'); skipped"
            )
            return
        self._check_cut(obj, line.number)
        try:
            if kind == "session_meta":
                self._session_meta(payload)
            elif kind == "turn_context":
                self._turn_context(payload)
            elif kind == "response_item":
                self._response_item(payload, line.number)
            elif kind == "event_msg":
                event = payload.get("type")
                if not isinstance(event, str):
                    raise _Shape("event_msg payload has no string 'type'")
                handler = _EVENTS.get(event)
                if handler is not None:
                    handler(self, payload, line.number, out)
            # compacted, world_state, token_usage_record and unknown line types carry
            # nothing we read
        except _Shape as exc:
            self._problem(line.number, f"{exc}; skipped")

    def _check_cut(self, obj: Mapping[str, Any], n: int) -> None:
        """Rule 6: from the first line at or past the cut, everything is reverted."""
        if self._cut is None or self._past_cut:
            return
        ordinal = obj.get("ordinal")
        if isinstance(ordinal, int) and not isinstance(ordinal, bool) and ordinal >= self._cut:
            self._past_cut = True
            if self._current is not None:
                self._current.reverted = True

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

    def _response_item(self, payload: Mapping[str, Any], n: int) -> None:
        if payload.get("type") != "message" or payload.get("role") != "assistant":
            return  # user/developer messages, reasoning, tool calls: not agent text
        current = self._current
        if current is None:
            return  # not inside a started turn (older rollouts: agent_message opens it)
        content = payload.get("content")
        if not isinstance(content, list):
            raise _Shape("assistant message has no 'content' list")
        meta = payload.get("internal_chat_message_metadata_passthrough")
        owner = _opt_id(meta) if isinstance(meta, dict) else None
        if owner is not None and not current.synthesized and owner != current.turn_id:
            self._problem(
                n, f"assistant message of turn {owner} while turn {current.turn_id} is open"
            )
            return
        current.responses.append(clean_text(_joined_parts(content, _OUTPUT_TEXT_TYPES)))

    # ---- events (one handler per event type; table below) ---------------------------

    def _started(self, p: Mapping[str, Any], n: int, out: list[CodexTurn]) -> None:
        self._end(STATUS_IN_PROGRESS, 0, out)  # a turn superseded before it ended
        turn_id = _opt_id(p)
        if turn_id is None:
            attribution = p.get("turn_attribution")
            turn_id = _opt_id(attribution) if isinstance(attribution, dict) else None
        self._current = _OpenTurn(
            turn_id or f"line-{n}", turn_id is None, explicit=True, line=n, reverted=self._past_cut
        )

    def _complete(self, p: Mapping[str, Any], n: int, out: list[CodexTurn]) -> None:
        turn_id = _opt_id(p)
        current = self._current
        if current is None:
            if turn_id not in self._ended:
                self._problem(n, "turn_complete while no turn is open; ignored", taint=False)
            return
        self._adopt_or_check(current, turn_id, n, "turn_complete")
        last = p.get("last_agent_message")
        if isinstance(last, str):
            current.last_message = clean_text(last)
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
            self._current = _OpenTurn(
                f"line-{n}", True, explicit=False, line=n, reverted=self._past_cut
            )
        self._current.messages.append(clean_text(message))

    def _item_completed(self, p: Mapping[str, Any], n: int, out: list[CodexTurn]) -> None:
        item = p.get("item")
        if not isinstance(item, dict):
            raise _Shape("item_completed event has no object 'item'")
        if item.get("type") not in _AGENT_ITEM_TYPES:
            return  # the user's message, reasoning, commands, ...: not agent text
        content = item.get("content")
        if isinstance(content, list):
            text = _joined_parts(content, frozenset({"Text", "text"}))
        elif isinstance(item.get("text"), str):
            text = item["text"]
        else:
            raise _Shape("AgentMessage item has neither a 'content' list nor a 'text'")
        current = self._current
        turn_id = _opt_id(p)
        if current is None:
            if turn_id not in self._ended:
                self._problem(n, "agent message item while no turn is open; ignored")
            return
        if turn_id is not None and turn_id != current.turn_id and not current.synthesized:
            self._problem(
                n, f"agent message item of turn {turn_id} while {current.turn_id} is open"
            )
            return
        item_id = item.get("id")
        key = item_id if isinstance(item_id, str) else f"line-{n}"
        position = current.item_positions.get(key)
        if position is None:
            current.item_positions[key] = len(current.items)
            current.items.append(clean_text(text))
        else:
            current.items[position] = clean_text(text)

    def _user_message(self, p: Mapping[str, Any], n: int, out: list[CodexTurn]) -> None:
        if self._current is not None and not self._current.explicit:
            self._end(STATUS_IN_PROGRESS, 0, out)  # an implicit turn never ended properly

    def _rolled_back(self, p: Mapping[str, Any], n: int, out: list[CodexTurn]) -> None:
        count = p.get("num_turns")
        valid = isinstance(count, int) and not isinstance(count, bool) and count >= 0
        wanted = count if isinstance(count, int) and valid else len(self._returned)
        taken = min(wanted, len(self._returned))
        dropped = self._returned[len(self._returned) - taken :]
        del self._returned[len(self._returned) - taken :]
        for key in dropped:
            self.reverted[key] = n
        ids = ", ".join(turn_id for turn_id, _ in dropped) or "none"
        if not valid:
            why = "thread_rolled_back without a valid 'num_turns': every earlier turn is dropped"
        elif taken < wanted:
            why = f"thread_rolled_back of {wanted} turn(s) but only {taken} ended before it"
        else:
            why = f"thread_rolled_back of {wanted} turn(s)"
        self._problem(n, f"{why}; reverted turn(s) dropped, never delivered: {ids}", taint=False)

    # ---- helpers -------------------------------------------------------------------

    def _adopt_or_check(self, current: _OpenTurn, turn_id: str | None, n: int, what: str) -> None:
        if turn_id is None or turn_id == current.turn_id:
            return
        if current.synthesized:
            current.turn_id, current.synthesized = turn_id, False
            return
        self._problem(n, f"{what} names turn {turn_id} but turn {current.turn_id} is open")

    def _text(self, current: _OpenTurn, status: str, n: int) -> str:
        """Rule 5: the text of one source, the first the turn has."""
        if current.responses:
            text = join_messages(current.responses)
            if current.items and join_messages(current.items) != text:
                self._problem(
                    n,
                    f"turn {current.turn_id}: its assistant messages and its AgentMessage "
                    "items differ (a message may be missing); the turn is not deliverable",
                )
            return text
        for source in (current.items, current.messages):
            if source:
                return join_messages(source)
        if current.last_message is not None:
            return current.last_message
        if status == STATUS_COMPLETED:
            self._problem(n or current.line, NO_TEXT_REASON.format(turn=current.turn_id))
        return ""

    def _end(self, status: str, n: int, out: list[CodexTurn]) -> None:
        current = self._current
        if current is None:
            return
        if n:
            self._ended[current.turn_id] = n
        if current.reverted:  # Rule 6
            self._current = None
            note = f" ({self._revert_note})" if self._revert_note else ""
            self._problem(
                current.line,
                f"turn {current.turn_id} was reverted{note}; dropped, never delivered",
                taint=False,
            )
            return
        text = self._text(current, status, n)
        self._current = None
        self._returned.append((clean_text(current.turn_id), n))
        out.append(
            CodexTurn(
                thread_id=self.thread_id,
                turn_id=clean_text(current.turn_id),
                status=status,
                text=text,
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
    "item_completed": RolloutTurnReader._item_completed,
    "user_message": RolloutTurnReader._user_message,
    "thread_rolled_back": RolloutTurnReader._rolled_back,
}


def _opt_id(payload: Mapping[str, Any]) -> str | None:
    value = payload.get("turn_id")
    return value if isinstance(value, str) and value.strip() else None


def _joined_parts(content: list[Any], types: frozenset[str]) -> str:
    """The text parts of one message's content, concatenated (as codex does)."""
    return "".join(
        part["text"]
        for part in content
        if isinstance(part, dict)
        and part.get("type") in types
        and isinstance(part.get("text"), str)
    )


def _legacy_evidence(obj: Mapping[str, Any]) -> str:
    keys = sorted(str(k) for k in obj)[:6]
    shown = ", ".join(repr(k) for k in keys) or "no keys"
    if "record_type" in obj:
        return f"a 'record_type' record; keys {shown}"
    return f"keys {shown}" + ("" if "timestamp" in obj else ", no 'timestamp'")


def _carries_turn_text(obj: Mapping[str, Any]) -> bool:
    payload = obj.get("payload")
    if not isinstance(payload, dict):
        return False
    if obj.get("type") == "response_item":
        return payload.get("role") == "assistant"
    return obj.get("type") == "event_msg" and payload.get("type") in _EVENTS
