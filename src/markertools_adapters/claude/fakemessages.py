# Owns: `FakeMessages`, a scripted stand-in for the Anthropic Messages API, so the real
# Claude Code CLI runs offline (tests, benchmarks, `markertools demo --live --engine
# claude-code`; ENG-3). Stdlib only; listens on 127.0.0.1 only. `POST /v1/messages` with
# `stream: true` pops the next scripted reply and streams it as the Server-Sent Events
# the Messages API defines (message_start, content_block_start / _delta / _stop for a
# text or a tool_use block, message_delta with the stop reason and usage, message_stop;
# ping while it waits); a request without `stream` (Claude Code's side requests) gets a
# short message and leaves the script alone; `POST /v1/messages/count_tokens` a count.
# Every request is recorded. The replies: `Text`, `ToolUse` (any tool: `McpToolUse` for a
# tool of an MCP server, `BashCall`, `EditCall`, `WriteCall` for Claude Code's own tools),
# `Hang`, `HttpError`; each carries the usage it reports.
#
# `python -m markertools_adapters.claude.fakemessages -- COMMAND` runs COMMAND against it
# with an offline Claude Code home (`_wrapper.py`, docs/fake-model.md).
#
# Must never: listen on anything but the loopback address, or send an event or a field
# the Messages API stream does not define.
from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from markertools_adapters.claude._replies import (
    BashCall,
    EditCall,
    Hang,
    HttpError,
    McpToolUse,
    Reply,
    Text,
    ToolUse,
    Usage,
    WriteCall,
    stream_events,
)

EXHAUSTED = Text("(fake: script exhausted)")  # the default reply once the script is empty


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON if possible, else raw text
    reply: str = ""  # what was answered ("Text", "ToolUse", ..., "aux", "unknown")
    t: float = field(default_factory=time.time)


# --------------------------------------------------------------------------- request inspection


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _is_reminder(text: str) -> bool:
    return text.lstrip().startswith("<system-reminder>")


def request_texts(body: Any) -> list[str]:
    """Every text of a Messages request: the system blocks, then each message's text
    blocks and tool results, in order."""
    out: list[str] = []
    if not isinstance(body, dict):
        return out
    out.extend(b["text"] for b in _blocks(body.get("system")) if isinstance(b.get("text"), str))
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        for b in _blocks(message.get("content")):
            if isinstance(b.get("text"), str):
                out.append(b["text"])
            elif b.get("type") == "tool_result":
                out.extend(t for t in _result_texts(b.get("content")))
    return out


def last_user_text(body: Any) -> str | None:
    """The text of the last user message that is a prompt (not a tool result), without
    Claude Code's `<system-reminder>` blocks: what the worker sent as the turn's input."""
    if not isinstance(body, dict):
        return None
    for message in reversed(body.get("messages") or []):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        texts = [
            b["text"]
            for b in _blocks(message.get("content"))
            if b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
        texts = [t for t in texts if not _is_reminder(t)]
        if texts:
            return "\n".join(texts)
    return None


def tool_results(body: Any) -> list[tuple[str, str, bool]]:
    """(tool_use_id, its text, is_error) of every tool result of the request's last user
    message: what the model sees of the tools it called in the previous reply."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not messages or not isinstance(messages[-1], dict) or messages[-1].get("role") != "user":
        return []
    return [
        (
            str(b.get("tool_use_id")),
            "\n".join(_result_texts(b.get("content"))),
            bool(b.get("is_error")),
        )
        for b in _blocks(messages[-1].get("content"))
        if b.get("type") == "tool_result"
    ]


def _result_texts(content: Any) -> list[str]:
    return [b["text"] for b in _blocks(content) if isinstance(b.get("text"), str)]


# --------------------------------------------------------------------------- the server


class FakeMessages:
    """The fake (see the module header); `start()` / `stop()` or `with`."""

    def __init__(
        self,
        script: list[Reply] | None = None,
        *,
        default_reply: Reply | None = EXHAUSTED,
        log: bool = False,
    ) -> None:
        self.script: deque[Reply] = deque(script or [])
        self.default_reply = default_reply
        self.reply_for: Callable[[Any], Reply] | None = None  # when the script is empty
        self.requests: list[RecordedRequest] = []
        self.log = log
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stop = threading.Event()
        self._release = threading.Event()
        self.hanging = threading.Event()  # set while a Hang reply is being held open
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self._httpd is not None
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """What ANTHROPIC_BASE_URL is set to (Claude Code appends /v1/messages)."""
        return f"http://127.0.0.1:{self.port}"

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.script.extend(replies)

    def messages_requests(self) -> list[RecordedRequest]:
        """The model calls: the streamed `POST /v1/messages` requests."""
        with self._lock:
            return [r for r in self.requests if r.reply not in ("aux", "count", "unknown")]

    def unknown_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.reply == "unknown"]

    def release_hangs(self) -> None:
        self._release.set()

    def next_reply(self, body: Any) -> Reply | None:
        with self._lock:
            reply = self.script.popleft() if self.script else self.default_reply
        if reply is None and self.reply_for is not None:
            reply = self.reply_for(body)
        return reply

    def start(self) -> FakeMessages:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        threading.Thread(
            target=self._httpd.serve_forever, name="fake-messages", daemon=True
        ).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def __enter__(self) -> FakeMessages:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _handler(fake: FakeMessages) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            if fake.log:
                sys.stderr.write("fake: " + (format % args) + "\n")

        def _record(self, body: Any) -> RecordedRequest:
            headers = {k.lower(): v for k, v in self.headers.items()}
            rec = RecordedRequest(self.command, self.path, headers, body)
            with fake._lock:
                fake.requests.append(rec)
            return rec

        def _json(self, status: int, obj: Any) -> None:
            data = (obj if isinstance(obj, str) else json.dumps(obj)).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _not_found(self, rec: RecordedRequest) -> None:
            rec.reply = "unknown"
            message = f"fake: no route {self.command} {self.path}"
            self._json(
                404, {"type": "error", "error": {"type": "not_found_error", "message": message}}
            )

        def do_GET(self) -> None:
            self._not_found(self._record(None))

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            rec = self._record(body)
            path = self.path.split("?")[0].rstrip("/")
            if path.endswith("/v1/messages/count_tokens"):
                rec.reply = "count"
                self._json(200, {"input_tokens": 100})
                return
            if not path.endswith("/v1/messages") or not isinstance(body, dict):
                self._not_found(rec)
                return
            model = str(body.get("model") or "fake-model")
            if not body.get("stream"):  # a side request: answered, the script left alone
                rec.reply = "aux"
                events = stream_events(Text("ok"), model, next(fake._ids))
                self._json(
                    200,
                    {
                        **events[0]["message"],
                        "content": [{"type": "text", "text": "ok"}],
                        "stop_reason": "end_turn",
                        "usage": {"input_tokens": 10, "output_tokens": 1},
                    },
                )
                return
            reply = fake.next_reply(body)
            rec.reply = type(reply).__name__ if reply is not None else "none"
            if reply is None:
                self._json(
                    500,
                    {
                        "type": "error",
                        "error": {"type": "api_error", "message": "fake: script exhausted"},
                    },
                )
            elif isinstance(reply, HttpError):
                self._json(reply.status, reply.body)
            else:
                self._stream(reply, model)

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _event(self, obj: dict[str, Any]) -> None:
            self._chunk(f"event: {obj['type']}\ndata: {json.dumps(obj)}\n\n".encode())

        def _wait(self, seconds: float | None) -> None:
            """Ping every 0.2 s until `seconds` passed (None: until released)."""
            end = None if seconds is None else time.monotonic() + seconds
            while not (fake._stop.is_set() or (end is None and fake._release.is_set())):
                if end is not None and time.monotonic() >= end:
                    return
                fake._stop.wait(0.2 if end is None else max(0.0, min(0.2, end - time.monotonic())))
                self._event({"type": "ping"})  # raises once the client hung up

        def _stream(self, reply: Text | ToolUse | Hang, model: str) -> None:
            number = next(fake._ids)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                if isinstance(reply, Hang):
                    first = stream_events(Text(""), model, number)[0]
                    self._event(first)
                    fake.hanging.set()
                    try:
                        self._wait(None)
                    finally:
                        fake.hanging.clear()
                    self.close_connection = True  # released: the stream ends, cut short
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    return
                events = stream_events(reply, model, number)
                self._event(events[0])
                if reply.delay > 0:
                    self._wait(reply.delay)
                for event in events[1:]:
                    self._event(event)
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler


def main(argv: list[str] | None = None) -> int:
    """`python -m markertools_adapters.claude.fakemessages [--home DIR] [--replies FILE]
    [--] COMMAND ...` (docs/fake-model.md; `_wrapper.py`)."""
    from markertools_adapters.claude import _wrapper

    return _wrapper.main(argv, server=FakeMessages, last_user_text=last_user_text)


__all__ = [
    "BashCall",
    "EditCall",
    "FakeMessages",
    "Hang",
    "HttpError",
    "McpToolUse",
    "RecordedRequest",
    "Reply",
    "Text",
    "ToolUse",
    "Usage",
    "WriteCall",
    "last_user_text",
    "request_texts",
    "stream_events",
    "tool_results",
]

if __name__ == "__main__":
    sys.exit(main())
