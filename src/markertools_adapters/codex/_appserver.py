# Owns: reading a Codex app-server stream (newline-delimited JSON-RPC 2.0 without the
# "jsonrpc" field, as `codex app-server` writes on stdout) into one `CodexTurn` per
# `turn/completed` notification. Sans-I/O: bytes in (`feed`), turns out; a live worker
# and a whole file use the same object.
#
# Must never: raise on any input, build text from `item/agentMessage/delta` (a fence can
# be split across deltas; only the authoritative `item/completed` item counts), mix two
# threads' or two turns' text, treat `inProgress` or an `error` with `willRetry: true`
# as the end of a turn, return a turn it knows was reverted, or let a completed turn
# without any agent message pass without a problem.
#
# Invariants:
#   Rule 1: a turn is keyed by (threadId, turnId); its text is the `text` of every
#           `item/completed` agentMessage item of that key, in arrival order, joined by a
#           blank line (an item id completed twice keeps its first position, last text).
#   Rule 2: messages with an "id" (responses, server requests) are not notifications and
#           are ignored; unknown methods and item types are ignored.
#   Rule 3: a malformed line is a problem and is skipped; it taints the turn it names,
#           or, when it names none, every turn open at that moment (see CodexTurn).
#   Rule 4: `thread/reverted {threadId}` (codex >= 0.169, after `thread/revert`) does not
#           say which turns went, so every turn of that thread seen before it (ended or
#           open) counts as reverted: listed in `reverted` (whole-file readers drop the
#           ones already returned, `drop_reverted`), never returned afterwards, and
#           named in a problem. Turns started after it are read normally.
#   Rule 5: a completed turn with no agent message at all (no agentMessage
#           `item/completed`, none in `turn.items`) is a problem on its `turn/completed`
#           line (reported only: a stream says explicitly which items a turn had, and a
#           turn may end without a message; the rollout reader also taints it).
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
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
    ENDING_STATUSES,
    STATUS_COMPLETED,
    STATUS_IN_PROGRESS,
    CodexProblem,
    CodexTranscript,
    CodexTurn,
    clean_text,
    join_messages,
)

Key = tuple[str, str]  # (thread id, turn id)


@attrs.define
class _OpenTurn:
    thread_id: str
    turn_id: str
    messages: list[str] = attrs.Factory(list)
    positions: dict[str, int] = attrs.Factory(dict)  # item id -> index in messages
    error: str | None = None
    problem_lines: list[int] = attrs.Factory(list)


class _Shape(Exception):
    """A notification whose params do not have the documented shape."""


class AppServerTurnReader(LineReader):
    """Incremental reader of an app-server notification stream.

    `feed(chunk)` accepts any bytes/str chunk (partial lines are kept until their newline)
    and returns the turns completed by it; `feed_message(obj)` does the same for a message
    the caller already decoded; `close()` ends the input and returns the turns still open
    (status "inProgress"). `problems` lists every line that was skipped or repaired.
    """

    def __init__(self, *, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self._splitter = LineSplitter(max_line_bytes)
        self._open: dict[Key, _OpenTurn] = {}
        self._done: dict[Key, int] = {}  # key -> line of its turn/completed
        self.problems: list[CodexProblem] = []
        self.reverted: dict[Key, int] = {}  # key -> line of the thread/reverted (Rule 4)

    # ---- input (feed, close and lines_seen come from LineReader) ---------------------

    def feed_message(self, message: object, line: int = 0) -> list[CodexTurn]:
        out: list[CodexTurn] = []
        if isinstance(message, dict):
            self._message(message, line, out)
        else:
            self._problem(line, "not a JSON object", None, None)
        return out

    def _finish(self, out: list[CodexTurn]) -> None:
        for key, state in self._open.items():
            if key not in self.reverted:
                out.append(_record(state, STATUS_IN_PROGRESS, None, 0))
        self._open.clear()

    def drop_reverted(self, turns: Iterable[CodexTurn]) -> list[CodexTurn]:
        """`turns` without those a later `thread/reverted` reverted (Rule 4)."""
        gone = {(clean_text(a), clean_text(b)) for a, b in self.reverted}
        return [t for t in turns if (t.thread_id, t.turn_id) not in gone]

    # ---- lines and messages --------------------------------------------------------

    def _line(self, line: Line, out: list[CodexTurn]) -> None:
        obj, reason = line_object(line)
        if obj is None:
            self._problem(line.number, reason, None, None)
            return
        if line.problem is not None:  # repaired UTF-8: it matters only to a turn event
            key = _key_of(obj)
            relevant = "id" not in obj and obj.get("method") in _HANDLERS
            self._problem(
                line.number, line.problem, key, None if key else _thread_of(obj), taint=relevant
            )
        self._message(obj, line.number, out)

    def _message(self, obj: dict[str, Any], n: int, out: list[CodexTurn]) -> None:
        method = obj.get("method")
        if "id" in obj:
            if method is None and "result" not in obj and "error" not in obj:
                self._problem(
                    n, "JSON-RPC message with an id but no method, result or error", None, None
                )
            return  # Rule 2: a response or a server request, not a notification
        if method is None:
            self._problem(
                n, "neither a notification (no 'method') nor a response (no 'id')", None, None
            )
            return
        if not isinstance(method, str):
            self._problem(n, "'method' is not a string", None, None)
            return
        handler = _HANDLERS.get(method)
        if handler is None:
            return  # Rule 2
        params = obj.get("params")
        try:
            if not isinstance(params, dict):
                raise _Shape("'params' is not an object")
            handler(self, params, n, out)
        except _Shape as exc:
            key = _key_of(obj)
            self._problem(n, f"{method}: {exc}; skipped", key, None if key else _thread_of(obj))

    # ---- notifications (one handler per method; table below) ------------------------

    def _turn_started(self, p: Mapping[str, Any], n: int, out: list[CodexTurn]) -> None:
        thread_id = _req_str(p, "threadId")
        turn = _req_obj(p, "turn")
        key = (thread_id, _req_str(turn, "id", "turn.id"))
        if key in self._done:
            self._problem(
                n,
                f"turn/started for turn {key[1]} that already completed "
                f"(line {self._done[key]}); ignored",
                None,
                None,
                taint=False,
            )
            return
        self._state(key)

    def _item_completed(self, p: Mapping[str, Any], n: int, out: list[CodexTurn]) -> None:
        key = (_req_str(p, "threadId"), _req_str(p, "turnId"))
        item = _req_obj(p, "item")
        item_type = _req_str(item, "type", "item.type")
        if item_type != "agentMessage":
            return  # reasoning, plan, commands, unknown types: not the agent's answer
        item_id = _req_str(item, "id", "item.id")
        text = clean_text(_req_str(item, "text", "item.text"))
        if key in self._done:
            self._problem(
                n,
                f"item/completed for turn {key[1]} after its turn/completed "
                f"(line {self._done[key]}); ignored",
                None,
                None,
                taint=False,
            )
            return
        state = self._state(key)
        position = state.positions.get(item_id)
        if position is None:
            state.positions[item_id] = len(state.messages)
            state.messages.append(text)
        else:
            state.messages[position] = text

    def _error(self, p: Mapping[str, Any], n: int, out: list[CodexTurn]) -> None:
        key = (_req_str(p, "threadId"), _req_str(p, "turnId"))
        will_retry = p.get("willRetry")
        if not isinstance(will_retry, bool):
            raise _Shape("'willRetry' is missing or not a boolean")
        message = _error_message(_req_obj(p, "error"))
        if message is None:
            raise _Shape("'error.message' is missing or not a string")
        if will_retry or key in self._done:
            return  # a retried error does not end or fail the turn
        self._state(key).error = message

    def _turn_completed(self, p: Mapping[str, Any], n: int, out: list[CodexTurn]) -> None:
        thread_id = _req_str(p, "threadId")
        turn = _req_obj(p, "turn")
        key = (thread_id, _req_str(turn, "id", "turn.id"))
        status = _req_str(turn, "status", "turn.status")
        if status == STATUS_IN_PROGRESS:
            self._problem(
                n,
                f"turn/completed with status inProgress does not end turn {key[1]}; ignored",
                None,
                None,
                taint=False,
            )
            return
        if status not in ENDING_STATUSES:
            raise _Shape(
                f"unknown turn status {status!r} (expected completed, interrupted or failed)"
            )
        if key in self._done:
            self._problem(
                n,
                f"second turn/completed for turn {key[1]} (first on line "
                f"{self._done[key]}); ignored",
                None,
                None,
                taint=False,
            )
            return
        state = self._open.pop(key, None) or _OpenTurn(*key)
        self._done[key] = n
        if key in self.reverted:  # Rule 4
            self._problem(
                n,
                f"turn {key[1]} ended after thread/reverted (line {self.reverted[key]}) "
                "reverted it; dropped, never delivered",
                None,
                None,
                taint=False,
            )
            return
        found = bool(state.positions)
        if not found:  # items are usually empty
            state.messages = _agent_texts(turn.get("items"))
            found = _has_agent_item(turn.get("items"))
        if status == STATUS_COMPLETED and not found:  # Rule 5
            self._problem(
                n,
                f"turn {key[1]} completed but no agent message was found for it (no "
                "agentMessage item/completed, none in turn.items): its text is empty",
                None,
                None,
                taint=False,
            )
        error = _error_message(turn.get("error"))
        if error is None and status != STATUS_COMPLETED:
            error = state.error
        out.append(_record(state, status, error, n))

    def _thread_reverted(self, p: Mapping[str, Any], n: int, out: list[CodexTurn]) -> None:
        thread_id = _req_str(p, "threadId")
        keys = [k for k in (*self._done, *self._open) if k[0] == thread_id]
        fresh = [k for k in keys if k not in self.reverted]
        for key in fresh:
            self.reverted[key] = n
        ids = ", ".join(k[1] for k in fresh) or "none"
        self._problem(
            n,
            f"thread/reverted for thread {thread_id} does not say which turns were reverted, "
            f"so every earlier turn of it is dropped, never delivered: {ids}",
            None,
            None,
            taint=False,
        )

    # ---- helpers -------------------------------------------------------------------

    def _state(self, key: Key) -> _OpenTurn:
        state = self._open.get(key)
        if state is None:
            state = self._open[key] = _OpenTurn(*key)
        return state

    def _problem(
        self, n: int, reason: str, key: Key | None, thread: str | None, *, taint: bool = True
    ) -> None:
        self.problems.append(CodexProblem(n, clean_text(reason)))
        if not taint:
            return
        if key is not None and key in self._done:
            return
        if key is not None:
            self._state(key).problem_lines.append(n)
            return
        for (thread_id, _), state in self._open.items():
            if thread is None or thread_id == thread:
                state.problem_lines.append(n)


Handler = Callable[[AppServerTurnReader, Mapping[str, Any], int, list[CodexTurn]], None]

_HANDLERS: Final[dict[str, Handler]] = {
    "turn/started": AppServerTurnReader._turn_started,
    "item/completed": AppServerTurnReader._item_completed,
    "error": AppServerTurnReader._error,
    "turn/completed": AppServerTurnReader._turn_completed,
    "thread/reverted": AppServerTurnReader._thread_reverted,
}


def _record(state: _OpenTurn, status: str, error: str | None, line: int) -> CodexTurn:
    return CodexTurn(
        thread_id=clean_text(state.thread_id),
        turn_id=clean_text(state.turn_id),
        status=status,
        text=join_messages(state.messages),
        error=error,
        line=line,
        problem_lines=tuple(state.problem_lines),
    )


def _req_str(obj: Mapping[str, Any], key: str, label: str | None = None) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise _Shape(f"'{label or key}' is missing or not a string")
    return value


def _req_obj(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    if not isinstance(value, dict):
        raise _Shape(f"'{key}' is missing or not an object")
    return value


def _error_message(value: object) -> str | None:
    if isinstance(value, dict):
        message = value.get("message")
        if isinstance(message, str):
            return clean_text(message)
    return None


def _agent_texts(items: object) -> list[str]:
    if not isinstance(items, list):
        return []
    return [
        clean_text(item["text"])
        for item in items
        if isinstance(item, dict)
        and item.get("type") == "agentMessage"
        and isinstance(item.get("text"), str)
    ]


def _has_agent_item(items: object) -> bool:
    return isinstance(items, list) and any(
        isinstance(item, dict) and item.get("type") == "agentMessage" for item in items
    )


def _params(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    params = obj.get("params")
    return params if isinstance(params, dict) else {}


def _thread_of(obj: Mapping[str, Any]) -> str | None:
    thread = _params(obj).get("threadId")
    return thread if isinstance(thread, str) else None


def _key_of(obj: Mapping[str, Any]) -> Key | None:
    """The (thread, turn) a message names, when it names one readably."""
    params = _params(obj)
    thread = params.get("threadId")
    turn = params.get("turnId")
    if turn is None and isinstance(params.get("turn"), dict):
        turn = params["turn"].get("id")
    if isinstance(thread, str) and isinstance(turn, str):
        return (thread, turn)
    return None


def iter_app_server_turns(chunks: Iterable[bytes | str]) -> Iterator[CodexTurn]:
    """Every turn of a stream given as chunks (lines or any pieces), open ones last."""
    reader = AppServerTurnReader()
    for chunk in chunks:
        yield from reader.feed(chunk)
    yield from reader.close()  # a turn reverted after it was yielded cannot be taken back


def read_app_server_stream(chunks: Iterable[bytes | str]) -> CodexTranscript:
    """A CodexTranscript from app-server output already in memory (chunks of
    JSONL, bytes or str): every turn that ended, then those still open, and the problems."""
    reader = AppServerTurnReader()
    turns: list[CodexTurn] = []
    for chunk in chunks:
        turns.extend(reader.feed(chunk))
    turns.extend(reader.close())
    return CodexTranscript(tuple(reader.drop_reverted(turns)), tuple(reader.problems))
