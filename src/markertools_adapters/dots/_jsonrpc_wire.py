# Owns: the JSON-RPC wire of `dots serve`'s stdio transport (`_mcp_stdio`), as pure
# code over bytes: cutting standard input into lines of at most MAX_MESSAGE_BYTES
# (`Framer`), checking each line as a JSON-RPC 2.0 message before the SDK sees it
# (`check_message`: what a malformed line gets is listed in `_mcp_stdio`'s header),
# reading the id of an over-long line from its head (`scan_id`), batches (`Wire`), and
# encoding replies. No I/O.
#
# Must never: hold more than MAX_MESSAGE_BYTES of one line, or echo a caller's bytes in
# an error (only its id, which JSON-RPC requires).
from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from typing import Any, Final, TypeAlias

import attrs
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError
from pydantic_core import from_json

from markertools import msg

log = logging.getLogger("markertools.dots.mcp")

MAX_MESSAGE_BYTES: Final[int] = 8 * 1024 * 1024  # one JSON-RPC message (one line)
MAX_STRUCTURE: Final[int] = 250_000  # "[", "{" and "," outside strings in one message
MAX_METHOD_CHARS: Final[int] = 200  # no MCP method is longer; a longer one is not echoed
MAX_INT_DIGITS: Final[int] = 4300  # JSON numbers the parser turns into integers
ID_SCAN_BYTES: Final[int] = 64 * 1024  # where an over-long message's id is looked for
READ_CHUNK: Final[int] = 1024 * 1024
BATCH_VERSIONS: Final[frozenset[str]] = frozenset({"2025-03-26"})  # MCP with batches

RequestId: TypeAlias = "int | str"
Outgoing: TypeAlias = "SessionMessage | bytes"  # bytes: a line the transport wrote itself


# ---- framing -------------------------------------------------------------------------


@attrs.frozen
class Line:
    """One complete message (without its newline)."""

    data: bytes


@attrs.frozen
class Oversize:
    """A line longer than the bound: its first bytes and its length."""

    head: bytes
    size: int


@attrs.define
class Framer:
    """Cuts a byte stream into newline-delimited lines of at most `limit` bytes; of a
    longer line only the first `head` bytes are kept (memory stays bounded)."""

    limit: int = MAX_MESSAGE_BYTES
    head: int = ID_SCAN_BYTES
    _buf: bytearray = attrs.Factory(bytearray)
    _over: int = 0  # length so far of the current over-long line (0: not over)
    _kept: bytes = b""

    def feed(self, chunk: bytes) -> list[Line | Oversize]:
        out: list[Line | Oversize] = []
        view = memoryview(chunk)
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = view[start:] if end < 0 else view[start:end]
            self._take(piece)
            if end < 0:
                return out
            out.append(self._cut())
            start = end + 1

    def end(self) -> list[Line | Oversize]:
        """At end of input: an unterminated last line is a message too."""
        if self._over or self._buf:
            return [self._cut()]
        return []

    def _take(self, piece: memoryview) -> None:
        if self._over:
            self._over += len(piece)
        elif len(self._buf) + len(piece) > self.limit:
            self._over = len(self._buf) + len(piece)
            kept = bytes(self._buf[: self.head])
            self._kept = kept + bytes(piece[: self.head - len(kept)])
            self._buf = bytearray()
        else:
            self._buf += piece

    def _cut(self) -> Line | Oversize:
        if self._over:
            item: Line | Oversize = Oversize(self._kept, self._over)
            self._over, self._kept = 0, b""
        else:
            item = Line(bytes(self._buf))
            self._buf = bytearray()
        return item


# ---- reading an id without parsing the message -----------------------------------------

_WS = re.compile(r"[ \t\r\n]*")
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_STRUCTURE = re.compile(r'["\[\]{}]')
_SCALAR = re.compile(r"[^,}\]]*")


def valid_id(value: object) -> bool:
    """A JSON-RPC id MCP accepts: a string or an integer (not a boolean, not null)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _skip(text: str, i: int) -> int:
    found = _WS.match(text, i)
    return found.end() if found else i


def _skip_value(text: str, i: int) -> int | None:
    """The index after the JSON value at `i` (not checked, only skipped), or None when
    the text ends first."""
    if text.startswith('"', i):
        try:
            return json.decoder.scanstring(text, i + 1)[1]  # type: ignore[attr-defined,no-any-return]
        except ValueError:
            return None
    if not text.startswith(("[", "{"), i):
        found = _SCALAR.match(text, i)
        return found.end() if found else None
    depth = 0
    while True:
        token = _STRUCTURE.search(text, i)
        if token is None:
            return None
        i = token.end()
        if token.group() == '"':
            skipped = _skip_value(text, i - 1)
            if skipped is None:
                return None
            i = skipped
        elif token.group() in "[{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return i


def scan_id(head: bytes) -> RequestId | None:
    """The top-level `id` of the JSON object that starts with `head`, when it comes
    before anything the scan cannot get past in `head`; else None. Linear in `head`."""
    text = head.decode("utf-8", "ignore")
    i = _skip(text, 0)
    if not text.startswith("{", i):
        return None
    i += 1
    while True:
        i = _skip(text, i)
        if not text.startswith('"', i):
            return None
        try:
            key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        except ValueError:
            return None
        i = _skip(text, i)
        if not text.startswith(":", i):
            return None
        i = _skip(text, i + 1)
        if key == "id":
            return _id_at(text, i)
        end = _skip_value(text, i)
        if end is None:
            return None
        i = _skip(text, end)
        if not text.startswith(",", i):
            return None
        i += 1


def _id_at(text: str, i: int) -> RequestId | None:
    if text.startswith('"', i):
        try:
            value = json.decoder.scanstring(text, i + 1)[0]  # type: ignore[attr-defined]
        except ValueError:
            return None
        return str(value)
    found = _INT.match(text, i)
    if found is None or found.end() >= len(text):  # no integer, or cut by the head's end
        return None
    digits = found.group()
    if text[found.end()] in ".eE" or len(digits.lstrip("-")) > MAX_INT_DIGITS:
        return None
    return int(digits)


# ---- checking one message ----------------------------------------------------------------


@attrs.frozen
class Refusal:
    """A message that does not reach the SDK: answered with `code` and the catalogue
    text `key`, unless `silent` (a notification or a response: nobody waits for a
    reply to those, so they are only logged)."""

    code: int
    key: str
    id: RequestId | None = None
    silent: bool = False
    args: tuple[tuple[str, int | str], ...] = ()

    def text(self, locale: str) -> str:
        return msg(self.key, **dict(self.args)).render(locale)

    def error(self, locale: str) -> JSONRPCError:
        error = ErrorData(code=self.code, message=self.text(locale))
        return JSONRPCError(jsonrpc="2.0", id=self.id, error=error)


_ALL_BUT_STRUCTURE: Final[bytes] = bytes(range(256)).translate(None, b'"[{,')


def structure(line: bytes, bound: int = MAX_STRUCTURE) -> int:
    """The "[", "{" and "," of `line` outside its strings - about one per value it
    holds -, in time and memory linear in its length and without parsing it (a comma
    or a bracket inside a string costs nothing to parse, so it is not counted). Exact
    only when the plain count is over `bound`, and then only up to just past it."""
    rough = line.count(b"[") + line.count(b"{") + line.count(b",")
    if rough <= bound:
        return rough
    # escapes out (pairs of backslashes first, then escaped quotes), then nothing but
    # quotes and structure, then every pair of adjacent quotes out (nothing is between
    # them, so nothing moves into or out of a string): what is left alternates
    bare = line.replace(b"\\\\", b"").replace(b'\\"', b"")
    bare = bare.translate(None, _ALL_BUT_STRUCTURE).replace(b'""', b"")
    outside = start = 0
    while outside <= bound:  # each round but the last counts at least one
        opening = bare.find(b'"', start)
        end = len(bare) if opening < 0 else opening
        outside += end - start  # only structure is left between two strings
        closing = bare.find(b'"', opening + 1) if opening >= 0 else -1
        if closing < 0:
            break
        start = closing + 1
    return outside


def parse_line(line: bytes) -> Any:
    """The JSON value of one line, or the Refusal saying why it has none (with the id
    when it can be read cheaply)."""
    if structure(line) > MAX_STRUCTURE:  # bounds what parsing allocates
        rid = scan_id(line[:ID_SCAN_BYTES])
        return Refusal(INVALID_REQUEST, "dots.rpc.too_many", rid, args=(("max", MAX_STRUCTURE),))
    try:
        return from_json(line, allow_inf_nan=False)
    except ValueError as exc:
        reason = str(exc)
    if reason.startswith("invalid unicode code point"):  # not UTF-8: as the SDK reads it
        try:
            return from_json(line.decode("utf-8", "replace"), allow_inf_nan=False)
        except ValueError as exc:
            reason = str(exc)
    # the parser's limits, on text that is JSON: an invalid request, not a parse error
    if reason.startswith("recursion limit exceeded"):
        return Refusal(INVALID_REQUEST, "dots.rpc.too_deep", scan_id(line[:ID_SCAN_BYTES]))
    if reason.startswith("number out of range"):
        rid = scan_id(line[:ID_SCAN_BYTES])
        return Refusal(
            INVALID_REQUEST, "dots.rpc.big_number", rid, args=(("digits", MAX_INT_DIGITS),)
        )
    return Refusal(PARSE_ERROR, "dots.rpc.parse", None, args=(("detail", reason[:120]),))


def check_message(value: Any) -> JSONRPCMessage | Refusal:
    """One JSON value as a JSON-RPC 2.0 message MCP takes, or why it is not one."""
    if not isinstance(value, dict):
        return Refusal(INVALID_REQUEST, "dots.rpc.not_object")
    has_id = "id" in value
    if has_id and not valid_id(value["id"]):
        return Refusal(INVALID_REQUEST, "dots.rpc.bad_id")
    rid: RequestId | None = value["id"] if has_id else None
    if value.get("jsonrpc") != "2.0":
        return Refusal(INVALID_REQUEST, "dots.rpc.version", rid)
    if "method" not in value:
        if not has_id or ("result" in value) == ("error" in value):
            return Refusal(INVALID_REQUEST, "dots.rpc.shape", rid)
    else:
        method = value["method"]
        if not isinstance(method, str):
            return Refusal(INVALID_REQUEST, "dots.rpc.method", rid)
        if len(method) > MAX_METHOD_CHARS:
            args = (("max", MAX_METHOD_CHARS),)
            return Refusal(METHOD_NOT_FOUND, "dots.rpc.long_method", rid, not has_id, args)
        params = value.get("params")
        if isinstance(params, list):  # valid JSON-RPC, but MCP names its params
            return Refusal(INVALID_PARAMS, "dots.rpc.by_position", rid, silent=not has_id)
        if params is not None and not isinstance(params, dict):
            return Refusal(INVALID_REQUEST, "dots.rpc.params", rid)
    try:
        return jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError:  # a response whose result or error has the wrong shape
        return Refusal(INVALID_REQUEST, "dots.rpc.response", rid, silent=True)


def encode(message: JSONRPCMessage) -> bytes:
    """One message as the SDK's own stdio transport writes it (without the newline)."""
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode()


# ---- the wire: what each line becomes, what each answer is written as -----------------


@attrs.define
class Received:
    """What one line became: messages for the SDK and lines to write back."""

    inbound: list[JSONRPCMessage] = attrs.Factory(list)
    outbound: list[bytes] = attrs.Factory(list)


@attrs.define(eq=False)
class _Batch:
    """A 2025-03-26 batch being answered: the ids still owed, the answers so far."""

    owed: set[RequestId]
    answers: list[bytes]


class Wire:
    """The transport's decisions, without I/O: `receive` turns a line into messages
    for the SDK and replies; `send` turns an SDK message into bytes to write (or holds
    it while it answers part of a batch). It learns the protocol version from the
    answer to `initialize`."""

    def __init__(self, locale: str = "en") -> None:
        self.locale = locale
        self.version: str | None = None
        self._initialize: set[RequestId] = set()
        self._batches: dict[RequestId, _Batch] = {}

    def receive(self, item: Line | Oversize) -> Received:
        if isinstance(item, Oversize):
            return self._oversize(item)
        if not item.data.strip():
            return Received()  # a blank line is no message
        value = parse_line(item.data)
        if isinstance(value, Refusal):
            return self._refused([value])
        if isinstance(value, list):
            return self._batch(value)
        checked = check_message(value)
        if isinstance(checked, Refusal):
            return self._refused([checked])
        self._note(checked)
        return Received(inbound=[checked])

    def send(self, message: JSONRPCMessage) -> bytes | None:
        """The line to write for an SDK message; None while a batch is incomplete."""
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            if message.id in self._initialize:
                self._initialize.discard(message.id)
                if isinstance(message, JSONRPCResponse):
                    version = message.result.get("protocolVersion")
                    self.version = version if isinstance(version, str) else None
            batch = self._batches.pop(message.id, None)
            if batch is not None:
                batch.owed.discard(message.id)
                batch.answers.append(encode(message))
                return None if batch.owed else _array(batch.answers)
        return encode(message) + b"\n"

    def _note(self, message: JSONRPCMessage) -> None:
        if isinstance(message, JSONRPCRequest) and message.method == "initialize":
            self._initialize.add(message.id)

    def _oversize(self, item: Oversize) -> Received:
        rid = scan_id(item.head)
        args = (("size", item.size), ("max", MAX_MESSAGE_BYTES))
        if rid is None:
            log.warning("%s", msg("dots.rpc.dropped", **dict(args)).render(self.locale))
            return Received()
        return self._refused([Refusal(INVALID_REQUEST, "dots.rpc.too_large", rid, args=args)])

    def _refused(self, refusals: Iterable[Refusal]) -> Received:
        out = Received()
        for refusal in refusals:
            if refusal.silent:
                text = refusal.text(self.locale)
                log.warning("%s", msg("dots.rpc.ignored", reason=text).render(self.locale))
            else:
                out.outbound.append(encode(refusal.error(self.locale)) + b"\n")
        return out

    def _batch(self, values: list[Any]) -> Received:
        if not values:
            return self._refused([Refusal(INVALID_REQUEST, "dots.rpc.empty_batch")])
        if self.version not in BATCH_VERSIONS:
            ids = [v["id"] for v in values if isinstance(v, dict) and valid_id(v.get("id"))]
            refused = [Refusal(INVALID_REQUEST, "dots.rpc.batch", rid) for rid in ids]
            return self._refused(refused or [Refusal(INVALID_REQUEST, "dots.rpc.batch")])
        out = Received()
        answers: list[bytes] = []
        owed: set[RequestId] = set()
        for value in values:
            checked = check_message(value)
            if isinstance(checked, JSONRPCRequest) and checked.method == "initialize":
                checked = Refusal(INVALID_REQUEST, "dots.rpc.batch_initialize", checked.id)
            if isinstance(checked, Refusal):
                answers += [line.rstrip(b"\n") for line in self._refused([checked]).outbound]
                continue
            if isinstance(checked, JSONRPCRequest):
                owed.add(checked.id)
            out.inbound.append(checked)
        if owed:
            batch = _Batch(owed, answers)
            self._batches.update(dict.fromkeys(owed, batch))
        elif answers:
            out.outbound.append(_array(answers))
        return out


def _array(answers: list[bytes]) -> bytes:
    return b"[" + b",".join(answers) + b"]\n"


# ---- the I/O around it -----------------------------------------------------------------
