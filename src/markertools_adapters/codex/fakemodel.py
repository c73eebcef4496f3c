# Owns: `FakeResponses`, a scripted stand-in for the OpenAI Responses API, so a real
# `codex app-server` runs offline (tests, benchmarks, `markertools dots fake-model`).
# Stdlib only; listens on 127.0.0.1 only. `POST /v1/responses` pops the next scripted
# reply and streams it as the Server-Sent Events codex parses (response.created,
# response.output_item.added, response.output_text.delta, response.output_item.done,
# response.completed with usage); it can send the `x-codex-primary-*` /
# `x-codex-secondary-*` rate-limit headers codex turns into
# `account/rateLimits/updated`. Every request is recorded.
#
# `main` is also the README's demo wrapper (`python -m ...fakemodel [--replies FILE] --
# COMMAND`, docs/fake-model.md): it runs COMMAND against the fake and exits with
# COMMAND's code; with `--replies` the fake answers turn N with the file's reply N (text
# with marker blocks, so a worker under it delivers them), then echoes. Its CODEX_HOME
# is kept (default: `fake-codex-home` under the per-user state path, issue 36), so the
# threads of a run paused under it are there when it is resumed under it; COMMAND finds
# the wrapper's own command line in `MARKERTOOLS_WRAPPED_BY` (shell words), which `dots
# run` puts in front of the resume command it prints.
#
# Must never: listen on anything but the loopback address, send an event the
# Responses stream does not define, or die of the Ctrl-C its COMMAND handles (no
# traceback; only the leading `--` separator is removed from COMMAND).
from __future__ import annotations

import itertools
import json
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from markertools import InvalidArgument, InvalidType
from markertools_adapters._fakewrap import (
    WRAPPED_BY,
    parse_wrapper_args,
    serve_or_run,
    state_home,
    wrapper_line,
)

# --------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class Text:
    """An assistant message (``message`` item with one ``output_text`` part)."""

    text: str
    chunk: int = 40  # size of response.output_text.delta pieces
    delay: float = 0.0  # seconds between response.created and the text (a slow turn)


@dataclass(frozen=True)
class ShellCall:
    """A shell tool call.  The tool name/argument shape is chosen from the
    ``tools`` codex advertised in the request (shell_command / shell / exec_command).

    ``escalate=True`` adds ``sandbox_permissions="require_escalated"`` + a
    justification, which makes codex ask the client for approval under
    ``approval_policy=on-request``.
    """

    command: str
    escalate: bool = True
    justification: str = "fake model wants to run this command"


@dataclass(frozen=True)
class ToolCall:
    """Any tool call: ``function_call`` with JSON ``arguments`` (dict), or, with
    ``custom=True``, a ``custom_tool_call`` whose raw ``input`` is ``arguments`` (str) --
    e.g. the freeform ``apply_patch`` tool. ``namespace`` names the tool namespace the
    tool was offered in: Codex offers an MCP server's tools as the namespace
    ``mcp__SERVER`` (``McpToolCall`` builds such a call)."""

    name: str
    arguments: dict[str, Any] | str
    custom: bool = False
    namespace: str | None = None


def McpToolCall(server: str, tool: str, arguments: dict[str, Any]) -> ToolCall:
    """A call of the MCP tool ``tool`` of the configured server ``server``, as Codex
    offers it: a ``function_call`` of ``tool`` in the namespace ``mcp__SERVER``."""
    return ToolCall(tool, arguments, namespace=f"mcp__{server}")


@dataclass(frozen=True)
class Hang:
    """Send response.created and then nothing, until the client disconnects or
    :meth:`FakeResponses.stop` / :meth:`FakeResponses.release_hangs` is called."""


@dataclass(frozen=True)
class HttpError:
    status: int = 500
    body: str = '{"error":{"message":"fake server error","type":"server_error"}}'


Reply = Text | ShellCall | ToolCall | Hang | HttpError


def rate_limit_headers(
    used_percent: float,
    window_minutes: int | None = None,
    reset_at: int | None = None,
    *,
    prefix: str = "x-codex",
    secondary: tuple[float, int | None, int | None] | None = None,
) -> dict[str, str]:
    """Headers parsed by codex-rs/codex-api/src/rate_limits.rs (per response)."""
    h = {f"{prefix}-primary-used-percent": repr(float(used_percent))}
    if window_minutes is not None:
        h[f"{prefix}-primary-window-minutes"] = str(window_minutes)
    if reset_at is not None:
        h[f"{prefix}-primary-reset-at"] = str(reset_at)
    if secondary is not None:
        up, wm, ra = secondary
        h[f"{prefix}-secondary-used-percent"] = repr(float(up))
        if wm is not None:
            h[f"{prefix}-secondary-window-minutes"] = str(wm)
        if ra is not None:
            h[f"{prefix}-secondary-reset-at"] = str(ra)
    return h


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON if possible, else raw text
    reply: str = ""  # what we answered ("Text", "ShellCall", ..., "unknown")
    t: float = field(default_factory=time.time)


# --------------------------------------------------------------------------- helpers


def _tool_names(body: Any) -> list[str]:
    names: list[str] = []
    if isinstance(body, dict):
        for t in body.get("tools") or []:
            if isinstance(t, dict):
                n = t.get("name") or (t.get("function") or {}).get("name") or t.get("type")
                if isinstance(n, str):
                    names.append(n)
    return names


def shell_call_item(reply: ShellCall, tools: list[str], call_id: str) -> dict[str, Any]:
    """Build a ``function_call`` output item for whichever shell tool codex offered."""
    extra: dict[str, Any] = {}
    if reply.escalate:
        extra = {"sandbox_permissions": "require_escalated", "justification": reply.justification}
    if "shell_command" in tools:
        name, args = "shell_command", {"command": reply.command, **extra}
    elif "exec_command" in tools:
        name, args = "exec_command", {"cmd": reply.command, **extra}
    else:  # classic "shell" tool: argv array
        name, args = "shell", {"command": ["bash", "-lc", reply.command], **extra}
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(args),
        "status": "completed",
    }


def tool_call_item(reply: ToolCall, call_id: str) -> dict[str, Any]:
    if reply.custom:
        return {
            "type": "custom_tool_call",
            "id": f"ctc_{call_id}",
            "call_id": call_id,
            "name": reply.name,
            "input": reply.arguments
            if isinstance(reply.arguments, str)
            else json.dumps(reply.arguments),
            "status": "completed",
        }
    args = reply.arguments if isinstance(reply.arguments, str) else json.dumps(reply.arguments)
    item: dict[str, Any] = {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": reply.name,
        "arguments": args,
        "status": "completed",
    }
    if reply.namespace is not None:
        item["namespace"] = reply.namespace
    return item


def _usage(inp: int = 11, out: int = 7) -> dict[str, Any]:
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": inp + out,
    }


# --------------------------------------------------------------------------- server


class FakeResponses:
    def __init__(
        self,
        script: list[Reply] | None = None,
        *,
        rate_limit_headers: dict[str, str] | None = None,
        default_reply: Reply | None = Text("(fake: script exhausted)"),
        log: bool = False,
    ) -> None:
        self.script: deque[Reply] = deque(script or [])
        self.rate_limit_headers = dict(rate_limit_headers or {})
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
        self._thread: threading.Thread | None = None

    # -- public API
    @property
    def port(self) -> int:
        assert self._httpd is not None
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.script.extend(replies)

    def responses_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [
                r
                for r in self.requests
                if r.path.rstrip("/").endswith("/responses") and r.method == "POST"
            ]

    def unknown_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.reply == "unknown"]

    def release_hangs(self) -> None:
        self._release.set()

    def start(self) -> FakeResponses:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                if fake.log:
                    sys.stderr.write("fake: " + (format % args) + "\n")

            def _read_body(self) -> Any:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    raw = self._read_chunked()
                if raw and self.headers.get("Content-Encoding", "").lower() == "zstd":
                    return {"_undecodable_zstd_bytes": len(raw)}
                try:
                    return json.loads(raw) if raw else None
                except ValueError:
                    return raw.decode("utf-8", "replace")

            def _read_chunked(self) -> bytes:
                out = b""
                while True:
                    size = int(self.rfile.readline().strip() or b"0", 16)
                    if size == 0:
                        self.rfile.readline()
                        return out
                    out += self.rfile.read(size)
                    self.rfile.readline()

            def _record(self, body: Any) -> RecordedRequest:
                rec = RecordedRequest(
                    self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body
                )
                with fake._lock:
                    fake.requests.append(rec)
                return rec

            def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                rec = self._record(None)
                path = self.path.split("?")[0].rstrip("/")
                if path.endswith("/models"):
                    rec.reply = "models"
                    # Both shapes: OpenAI list ({"data": [...]}) and codex catalog ({"models": [...]}).
                    self._json(
                        200,
                        {
                            "object": "list",
                            "data": [{"id": "fake-model", "object": "model"}],
                            "models": [],
                        },
                    )
                    return
                rec.reply = "unknown"
                self._json(
                    404, {"error": {"message": f"fake: no route {self.command} {self.path}"}}
                )

            def do_POST(self) -> None:
                body = self._read_body()
                rec = self._record(body)
                path = self.path.split("?")[0].rstrip("/")
                if not path.endswith("/responses"):
                    rec.reply = "unknown"
                    self._json(
                        404, {"error": {"message": f"fake: no route {self.command} {self.path}"}}
                    )
                    return
                with fake._lock:
                    reply = fake.script.popleft() if fake.script else fake.default_reply
                if reply is None and fake.reply_for is not None:
                    reply = fake.reply_for(body)
                rec.reply = type(reply).__name__ if reply is not None else "none"
                if reply is None:
                    self._json(500, {"error": {"message": "fake: script exhausted"}})
                    return
                if isinstance(reply, HttpError):
                    data = reply.body.encode()
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in fake.rate_limit_headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self._stream(reply, body)

            # SSE --------------------------------------------------------------
            def _event(self, obj: dict[str, Any]) -> None:
                payload = f"event: {obj['type']}\ndata: {json.dumps(obj)}\n\n".encode()
                self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
                self.wfile.flush()

            def _stream(self, reply: Reply, body: Any) -> None:
                n = next(fake._ids)
                resp_id = f"resp_fake_{n}"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                for k, v in fake.rate_limit_headers.items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self._event(
                        {
                            "type": "response.created",
                            "response": {"id": resp_id, "status": "in_progress"},
                        }
                    )
                    if isinstance(reply, Hang):
                        fake.hanging.set()
                        try:
                            while not (fake._stop.is_set() or fake._release.is_set()):
                                time.sleep(0.1)
                                # comment line = keepalive; raises once codex hung up
                                self.wfile.write(b"1\r\n\n\r\n")
                                self.wfile.flush()
                        finally:
                            fake.hanging.clear()
                        return
                    if isinstance(reply, Text):
                        if reply.delay > 0:
                            fake._stop.wait(reply.delay)
                        item_id = f"msg_fake_{n}"
                        self._event(
                            {
                                "type": "response.output_item.added",
                                "output_index": 0,
                                "item": {
                                    "type": "message",
                                    "id": item_id,
                                    "role": "assistant",
                                    "status": "in_progress",
                                    "content": [],
                                },
                            }
                        )
                        for i in range(0, len(reply.text), max(1, reply.chunk)):
                            self._event(
                                {
                                    "type": "response.output_text.delta",
                                    "item_id": item_id,
                                    "output_index": 0,
                                    "content_index": 0,
                                    "delta": reply.text[i : i + reply.chunk],
                                }
                            )
                        item = {
                            "type": "message",
                            "id": item_id,
                            "role": "assistant",
                            "status": "completed",
                            "content": [
                                {"type": "output_text", "text": reply.text, "annotations": []}
                            ],
                        }
                    elif isinstance(reply, (ShellCall, ToolCall)):
                        item = (
                            shell_call_item(reply, _tool_names(body), f"call_fake_{n}")
                            if isinstance(reply, ShellCall)
                            else tool_call_item(reply, f"call_fake_{n}")
                        )
                        self._event(
                            {"type": "response.output_item.added", "output_index": 0, "item": item}
                        )
                    else:
                        raise InvalidType(f"unsupported reply {reply!r}")
                    self._event(
                        {"type": "response.output_item.done", "output_index": 0, "item": item}
                    )
                    self._event(
                        {
                            "type": "response.completed",
                            "response": {
                                "id": resp_id,
                                "status": "completed",
                                "output": [item],
                                "usage": _usage(),
                            },
                        }
                    )
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="fake-responses", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def __enter__(self) -> FakeResponses:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --------------------------------------------------------------------------- request inspection


def request_texts(body: Any) -> list[str]:
    """All text strings in a Responses request's ``instructions`` + ``input``."""
    out: list[str] = []
    if not isinstance(body, dict):
        return out
    if isinstance(body.get("instructions"), str):
        out.append(body["instructions"])
    for item in body.get("input") or []:
        if not isinstance(item, dict):
            continue
        content = item.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(
                c["text"] for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)
            )
        if isinstance(item.get("output"), str):
            out.append(item["output"])
    return out


def last_user_text(body: Any) -> str | None:
    """Text of the last ``role=user`` message in ``input`` (what the client sent in turn/start)."""
    if not isinstance(body, dict):
        return None
    for item in reversed(body.get("input") or []):
        if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user":
            parts = item.get("content") or []
            return "".join(c.get("text", "") for c in parts if isinstance(c, dict))
    return None


def _echo_reply(body: Any) -> Text:
    """The default reply of the command-line fake: an answer naming the instruction."""
    text = (last_user_text(body) or "").strip().splitlines()
    first = text[0][:200] if text else "(no instruction)"
    return Text(f"(fake model) Done: {first}\nNothing else to report.")


REPLY_SEPARATOR = "%%"  # a line of its own between two replies of a --replies text file


def read_replies(path: str) -> list[str]:
    """The replies of a `--replies` file, one per turn, in order (docs/fake-model.md):

    - `*.jsonl`: one JSON value per non-blank line, a string or {"text": "..."};
    - any other file: text, the replies separated by lines that are exactly `%%`;
      surrounding blank lines of each reply are dropped, and so is an empty reply.

    ValueError naming the file (and the line of a bad JSON value) when it cannot be used."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"--replies {path}: cannot read it ({exc})") from None
    if path.endswith(".jsonl"):
        replies: list[str] = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError as exc:
                raise InvalidArgument(f"--replies {path} line {number}: not JSON ({exc})") from None
            if isinstance(value, dict) and isinstance(value.get("text"), str):
                value = value["text"]
            if not isinstance(value, str):
                raise InvalidArgument(
                    f'--replies {path} line {number}: expected a string or {{"text": ...}}'
                )
            replies.append(value)
        return replies
    chunks: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.rstrip() == REPLY_SEPARATOR:
            chunks.append([])
        else:
            chunks[-1].append(line)
    return [reply for chunk in chunks if (reply := "\n".join(chunk).strip("\n")).strip()]


def default_home() -> Path:
    """The CODEX_HOME the wrapper keeps when `--home` is not given: `fake-codex-home`
    under the per-user state path (platformdirs; `~/.local/state/markertools/...` on
    Linux), the same every time, so a run paused under the wrapper finds its threads
    when it is resumed under it."""
    return state_home("fake-codex-home")


def main(argv: list[str] | None = None) -> int:
    """`python -m markertools_adapters.codex.fakemodel [--home DIR] [--replies FILE]
    [--] COMMAND ...`: start the fake on 127.0.0.1, write an offline CODEX_HOME wired to
    it, and run COMMAND with that environment (CODEX_HOME, HOME, the key variable);
    without a command, print the environment and serve until interrupted. Turn N is
    answered with reply N of `--replies FILE` (read_replies), later turns with an echo
    of the instruction (no marker block)."""
    from markertools_adapters.codex.offline import codex_env, make_codex_home

    args = parse_wrapper_args(
        argv,
        prog="python -m markertools_adapters.codex.fakemodel",
        home_help="the CODEX_HOME to write and keep (default: fake-codex-home under the "
        "per-user state path, e.g. ~/.local/state/markertools/fake-codex-home)",
        default_home=default_home(),
        read_replies=read_replies,
        name="fakemodel",
    )
    if isinstance(args, int):
        return args
    fake = FakeResponses(
        [Text(reply) for reply in args.replies],
        default_reply=None,
        rate_limit_headers=rate_limit_headers(12.0, 300, int(time.time()) + 3600),
    )
    fake.reply_for = _echo_reply
    fake.start()
    try:
        home = args.home
        try:
            make_codex_home(home, fake.base_url, models=("fake-model", "fake-mini"))
        except OSError as exc:
            sys.stderr.write(f"fakemodel: --home {home}: cannot write: {exc.strerror or exc}\n")
            return 2
        env = {**os.environ, **codex_env(home, block_proxy=False)}
        env[WRAPPED_BY] = wrapper_line("markertools_adapters.codex.fakemodel", args)
        banner = f"fake model at {fake.base_url}\nCODEX_HOME={home}\n"
        return serve_or_run(args.command, env, banner, "fakemodel")
    finally:
        fake.stop()


if __name__ == "__main__":
    sys.exit(main())
