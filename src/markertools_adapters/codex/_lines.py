# Owns: turning arbitrary input bytes into numbered JSONL lines and each line into a
# JSON object — the one place the Codex readers meet raw bytes.
#
# Must never: raise on any input (invalid UTF-8, NUL bytes, a line of 1 GB, JSON nested
# 100 000 deep, a 10 000-digit number), hold more than `max_line_bytes` of one line in
# memory, or process a line before its newline arrives (except at `close()`).
#
# Invariants:
#   Rule 1: line numbers are 1-based and count every "\n"-terminated line, blank or not,
#           plus a final unterminated line.
#   Rule 2: a line with invalid UTF-8 is decoded with U+FFFD replacements and comes with
#           a problem; an over-long line comes with a problem and no text.
#   Rule 3: blank lines are skipped silently.
from __future__ import annotations

import json
from typing import Any, Final

import attrs

from markertools_adapters.codex._records import CodexProblem, CodexTurn

MAX_LINE_BYTES: Final = 64 * 1024 * 1024


@attrs.frozen
class Line:
    number: int
    text: str | None  # None: unusable (see problem)
    problem: str | None = None
    unterminated: bool = False  # the input ended without a newline after this line


class LineSplitter:
    """Incremental splitter: `feed(chunk)` returns the lines completed by `chunk`."""

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self._max = max(1, max_line_bytes)
        self._buf = bytearray()
        self._overlong = False
        self._number = 0

    @property
    def lines_seen(self) -> int:
        return self._number

    def feed(self, data: bytes | bytearray | str) -> list[Line]:
        chunk = _as_bytes(data)
        out: list[Line] = []
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            if newline < 0:
                break
            self._finish_line(chunk, start, newline, out, unterminated=False)
            start = newline + 1
        if start < len(chunk):
            if self._overlong or len(self._buf) + (len(chunk) - start) > self._max:
                self._overlong = True
                self._buf.clear()
            else:
                self._buf += chunk[start:]
        return out

    def close(self) -> list[Line]:
        """The final line when the input did not end with a newline."""
        out: list[Line] = []
        if self._buf or self._overlong:
            self._finish_line(b"", 0, 0, out, unterminated=True)
        return out

    def _finish_line(
        self, chunk: bytes, start: int, end: int, out: list[Line], *, unterminated: bool
    ) -> None:
        self._number += 1
        if self._overlong or len(self._buf) + (end - start) > self._max:
            self._overlong = False
            self._buf.clear()
            out.append(
                Line(
                    self._number,
                    None,
                    f"line longer than {self._max} bytes; skipped",
                    unterminated,
                )
            )
            return
        if self._buf:
            self._buf += chunk[start:end]
            raw = bytes(self._buf)
            self._buf.clear()
        else:
            raw = chunk[start:end]
        if not raw.strip():
            return  # Rule 3
        problem: str | None = None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = raw.decode("utf-8", "replace")
            problem = f"invalid UTF-8 at byte {exc.start} of the line; replaced with U+FFFD"
        if self._number == 1 and text.startswith("\ufeff"):
            text = text[1:]
        out.append(Line(self._number, text, problem, unterminated))


def _as_bytes(data: bytes | bytearray | str) -> bytes:
    if isinstance(data, str):
        # lone surrogates survive as bytes that are invalid UTF-8 (reported, replaced)
        return data.encode("utf-8", "surrogatepass")
    return bytes(data)


def load_object(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The JSON object on one line, or None and the reason it is not one."""
    try:
        value = json.loads(text)
    except RecursionError:
        return None, "not JSON: nested too deeply"
    except ValueError as exc:  # JSONDecodeError, over-long integer literals
        return None, f"not JSON: {_one_line(str(exc))}"
    if not isinstance(value, dict):
        return None, f"not a JSON object (found {_json_type(value)})"
    return value, None


def line_object(line: Line) -> tuple[dict[str, Any] | None, str]:
    """The JSON object on a split line, or None and the problem to report for it."""
    if line.text is None:
        return None, line.problem or "unreadable line"
    obj, reason = load_object(line.text)
    if obj is None:
        if line.unterminated:
            reason = f"{reason} (last line has no newline: truncated?)"
        return None, reason or "not JSON"
    return obj, ""


def _json_type(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null"


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class LineReader:
    """The input half both Codex readers share: `feed` splits chunks into numbered lines
    and hands each to `_line`; `close` (once) flushes the final unterminated line, then
    lets the reader end what is still open (`_finish`). Subclasses set `_splitter` and
    `problems`."""

    _splitter: LineSplitter
    problems: list[CodexProblem]
    _closed: bool = False

    @property
    def lines_seen(self) -> int:
        return self._splitter.lines_seen

    def feed(self, data: bytes | bytearray | str) -> list[CodexTurn]:
        out: list[CodexTurn] = []
        for line in self._splitter.feed(data):
            self._line(line, out)
        return out

    def close(self) -> list[CodexTurn]:
        """End of input: the final unterminated line, then every turn still open."""
        out: list[CodexTurn] = []
        if self._closed:
            return out
        self._closed = True
        for line in self._splitter.close():
            self._line(line, out)
        self._finish(out)
        return out

    def _line(self, line: Line, out: list[CodexTurn]) -> None:
        raise NotImplementedError

    def _finish(self, out: list[CodexTurn]) -> None:
        raise NotImplementedError
