# Owns: `AppServerClient`, the asyncio client of one `codex app-server` child process
# over its stdio JSON-RPC (checked against the schema codex 0.169.0 generates, see
# tests/adapters/codex/test_codex_schema.py): requests with timeouts, notifications,
# server-to-client requests answered by a handler, and the process's exit — all
# concurrently on one event loop, with no thread per child.
#
# Wire format: one JSON object per line, JSON-RPC 2.0 without the "jsonrpc" member (the
# server omits it and accepts it). Notifications carry an extra `emittedAtMs`. Lines are
# decoded with the same strict reader the stream parser uses (`_lines.load_object`):
# a line that is not one JSON object is recorded in `problems` and skipped.
#
# Invariants:
#   Rule 1: every pending request ends: with its response, its timeout, or
#           `AppServerExited` when the process ends; later calls fail at once.
#   Rule 2: every server-to-client request is answered (a handler that raises sends a
#           JSON-RPC error), so the app-server is never left waiting.
#   Rule 3: notifications are delivered verbatim (the decoded object and its raw line).
#   Rule 4: the child runs in its own session; `signal` reaches its whole process group.

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

from markertools_adapters._background import Background
from markertools_adapters.codex._lines import load_object
from markertools_adapters.errors import CodexError, OperationFailed

Json: TypeAlias = dict[str, Any]
_MAX_PROBLEMS: Final[int] = 100
RequestId: TypeAlias = "int | str"


class AppServerError(CodexError):
    """JSON-RPC error response (or an error a server-request handler wants to send)."""

    def __init__(self, code: int, message: str, data: Any = None, method: str = "") -> None:
        super().__init__(f"{method + ': ' if method else ''}[{code}] {message}")
        self.code, self.message, self.data, self.method = code, message, data, method


class AppServerExited(CodexError):
    """The app-server process exited (or its stdout closed) while a request was pending."""

    def __init__(self, returncode: int | None, stderr_tail: str, method: str = "") -> None:
        super().__init__(
            f"codex app-server exited (returncode={returncode}){' during ' + method if method else ''}"
            + (f"; stderr tail:\n{stderr_tail}" if stderr_tail else "")
        )
        self.returncode, self.stderr_tail = returncode, stderr_tail


class RequestTimeout(TimeoutError, CodexError):
    def __init__(self, method: str, timeout: float) -> None:
        super().__init__(f"no response to {method!r} within {timeout:.1f}s")
        self.method, self.timeout = method, timeout


@dataclass(frozen=True)
class Exited:
    """Delivered on :attr:`AppServerClient.events` (and to ``on_event``) when the process ends."""

    returncode: int | None
    stderr_tail: str
    method: str = "__exited__"


Event: TypeAlias = "Json | Exited"
# handler(method, params, request_id) -> result object; raise AppServerError to reply with an error.
ServerRequestHandler: TypeAlias = Callable[[str, Any, "int | str"], Awaitable[Json]]
EventCallback: TypeAlias = Callable[[Event], None]


@dataclass
class TranscriptEntry:
    t: float  # seconds since process start
    direction: str  # "in" (server -> us) or "out"
    msg: Json


@dataclass
class AppServerClient:
    binary: str
    args: Sequence[str] = ("app-server",)
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    on_server_request: ServerRequestHandler | None = None
    on_event: EventCallback | None = None
    default_timeout: float = 60.0
    stderr_path: str | None = None  # if set, stderr is appended here (else: last 200 lines kept)
    line_limit: int = 64 * 1024 * 1024
    on_notification: Callable[[Json, str], None] | None = None  # (decoded, raw line)
    keep_transcript: bool = False  # tests and benchmarks; a long-lived supervisor never
    queue_events: bool = True  # False: notifications only reach the callbacks

    events: asyncio.Queue[Event] = field(default_factory=asyncio.Queue, init=False)
    transcript: list[TranscriptEntry] = field(default_factory=list, init=False)
    problems: list[str] = field(default_factory=list, init=False)  # undecodable lines
    _lines_read: int = field(default=0, init=False)
    returncode: int | None = field(default=None, init=False)
    _proc: asyncio.subprocess.Process | None = field(default=None, init=False)
    _pending: dict[RequestId, tuple[str, asyncio.Future[Json]]] = field(
        default_factory=dict, init=False
    )
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1), init=False)
    _background: Background | None = field(default=None, init=False)
    _stderr_tail: deque[str] = field(default_factory=lambda: deque(maxlen=200), init=False)
    _t0: float = field(default=0.0, init=False)
    _exited: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    _write_lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        self._t0 = time.monotonic()
        self._proc = await asyncio.create_subprocess_exec(
            self.binary,
            *self.args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(self.env) if self.env is not None else None,
            cwd=self.cwd,
            limit=self.line_limit,
            start_new_session=True,
        )
        self._background = Background(f"codex app-server {self._proc.pid}", on_fault=self._fault)
        await self._background.start()
        self._spawn(self._read_stdout(), "stdout reader")
        self._spawn(self._read_stderr(), "stderr reader")

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def running(self) -> bool:
        return self._proc is not None and not self._exited.is_set()

    async def close(self, grace: float = 5.0) -> int | None:
        """Close stdin (app-server exits on EOF), then SIGTERM, then SIGKILL."""
        proc = self._proc
        if proc is None:
            return None
        if proc.stdin and not proc.stdin.is_closing():
            proc.stdin.close()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                await asyncio.wait_for(self._exited.wait(), grace)
                break
            except TimeoutError:
                self.signal(sig)
        await asyncio.wait_for(self._exited.wait(), grace)
        if self._background is not None:
            await self._background.close()
        return self.returncode

    def signal(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole process group (the npm ``codex`` wrapper on Node < 22.15
        spawns the native binary as a *child*; signalling only the wrapper pid with
        SIGKILL would orphan it)."""
        if self._proc is None or self._proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, sig)  # start_new_session=True => pgid == pid

    async def wait_exited(self, timeout: float | None = None) -> int | None:
        await asyncio.wait_for(self._exited.wait(), timeout)
        return self.returncode

    async def __aenter__(self) -> AppServerClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ raw JSON-RPC
    async def request(
        self, method: str, params: Any = None, *, timeout: float | None = None
    ) -> Json:
        if self._exited.is_set():
            raise AppServerExited(self.returncode, self.stderr_tail(), method)
        rid = next(self._ids)
        fut: asyncio.Future[Json] = asyncio.get_running_loop().create_future()
        self._pending[rid] = (method, fut)
        msg: Json = {"id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        try:
            await self._send(msg)
            t = self.default_timeout if timeout is None else timeout
            try:
                return await asyncio.wait_for(asyncio.shield(fut), t)
            except TimeoutError:
                raise RequestTimeout(method, t) from None
        finally:
            self._pending.pop(rid, None)

    async def notify(self, method: str, params: Any = None) -> None:
        msg: Json = {"method": method}
        if params is not None:
            msg["params"] = params
        await self._send(msg)

    async def next_event(self, timeout: float | None = None) -> Event:
        return await asyncio.wait_for(self.events.get(), timeout)

    async def wait_for(
        self, pred: Callable[[Json], bool], timeout: float = 60.0, seen: list[Event] | None = None
    ) -> Json:
        """Consume events until ``pred(notification)``; consumed events go to ``seen``.
        Raises AppServerExited if the process ends first."""
        deadline = time.monotonic() + timeout
        while True:
            ev = await self.next_event(max(0.0, deadline - time.monotonic()))
            if seen is not None:
                seen.append(ev)
            if isinstance(ev, Exited):
                raise AppServerExited(ev.returncode, ev.stderr_tail, "wait_for")
            if pred(ev):
                return ev

    def stderr_tail(self) -> str:
        return "".join(self._stderr_tail)

    # ------------------------------------------------------------------ typed helpers
    async def initialize(
        self, client_info: Json, capabilities: Json | None = None, timeout: float | None = None
    ) -> Json:
        """``initialize`` request followed by the ``initialized`` notification."""
        params: Json = {"clientInfo": client_info}
        if capabilities is not None:
            params["capabilities"] = capabilities
        res = await self.request("initialize", params, timeout=timeout)
        await self.notify("initialized")
        return res

    async def thread_start(
        self,
        cwd: str,
        sandbox: str | None = None,
        approval_policy: Any = None,
        model: str | None = None,
        **extra: Any,
    ) -> Json:
        params = _clean(
            {
                "cwd": cwd,
                "sandbox": sandbox,
                "approvalPolicy": approval_policy,
                "model": model,
                **extra,
            }
        )
        return await self.request("thread/start", params)

    async def thread_resume(self, thread_id: str, **overrides: Any) -> Json:
        """overrides: camelCase ThreadResumeParams fields (cwd, model, sandbox, approvalPolicy, ...)."""
        return await self.request("thread/resume", _clean({"threadId": thread_id, **overrides}))

    async def turn_start(
        self,
        thread_id: str,
        text: str,
        model: str | None = None,
        effort: str | None = None,
        **extra: Any,
    ) -> Json:
        params = _clean(
            {
                "threadId": thread_id,
                "input": [{"type": "text", "text": text, "text_elements": []}],
                "model": model,
                "effort": effort,
                **extra,
            }
        )
        return await self.request("turn/start", params)

    async def turn_interrupt(self, thread_id: str, turn_id: str) -> Json:
        return await self.request("turn/interrupt", {"threadId": thread_id, "turnId": turn_id})

    async def model_list(self, include_hidden: bool | None = None, **extra: Any) -> Json:
        return await self.request("model/list", _clean({"includeHidden": include_hidden, **extra}))

    async def rate_limits_read(self) -> Json:
        return await self.request("account/rateLimits/read")

    async def thread_list(self, **params: Any) -> Json:
        return await self.request("thread/list", _clean(params))

    async def thread_read(self, thread_id: str, include_turns: bool = True) -> Json:
        return await self.request(
            "thread/read", {"threadId": thread_id, "includeTurns": include_turns}
        )

    # ------------------------------------------------------------------ internals
    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        if self._background is not None:
            self._background.spawn(coro, name=name)
        else:
            coro.close()

    def _fault(self, name: str, exc: BaseException) -> None:
        """A reader or handler failed unexpectedly (logged with its traceback by
        `Background`): the process is ended, so every pending request fails and the
        owner sees the exit - a clean stop, never a client that silently stops reading."""
        self._stderr_tail.append(f"[client {name} failed: {exc!r}]\n")
        self.signal(signal.SIGKILL)

    def _log(self, direction: str, msg: Json) -> None:
        if self.keep_transcript:
            self.transcript.append(
                TranscriptEntry(round(time.monotonic() - self._t0, 3), direction, msg)
            )

    async def _send(self, msg: Json) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise OperationFailed("app-server not started")
        if self._exited.is_set() or proc.stdin.is_closing():
            raise AppServerExited(self.returncode, self.stderr_tail(), str(msg.get("method", "")))
        self._log("out", msg)
        async with self._write_lock:
            try:
                proc.stdin.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")
                await proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError) as e:
                raise AppServerExited(
                    self.returncode, self.stderr_tail(), str(msg.get("method", ""))
                ) from e

    def _deliver(self, ev: Event) -> None:
        if self.queue_events or isinstance(ev, Exited):
            self.events.put_nowait(ev)
        if self.on_event is not None:
            self.on_event(ev)

    async def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        out = self._proc.stdout
        try:
            while line := await out.readline():
                self._lines_read += 1
                if not line.strip():
                    continue
                text = line.decode("utf-8", "replace").rstrip("\r\n")
                msg, problem = load_object(text)
                if msg is None:
                    self.problems.append(f"line {self._lines_read}: {problem}")
                    del self.problems[:-_MAX_PROBLEMS]
                    continue
                self._log("in", msg)
                self._dispatch(msg, text)
        except (ValueError, asyncio.LimitOverrunError) as e:  # line longer than line_limit
            self._stderr_tail.append(f"[stdout reader error] {e}\n")
        finally:
            await self._on_exit()

    def _dispatch(self, msg: Json, raw: str) -> None:
        has_id, has_method = "id" in msg, "method" in msg
        if has_id and not has_method:  # response to one of our requests
            entry = self._pending.get(msg["id"])
            if entry is None:
                return
            method, fut = entry
            if fut.done():
                return
            if "error" in msg:
                err = msg["error"] or {}
                fut.set_exception(
                    AppServerError(
                        int(err.get("code", 0)),
                        str(err.get("message", "")),
                        err.get("data"),
                        method,
                    )
                )
            else:
                res = msg.get("result")
                fut.set_result(res if isinstance(res, dict) else {"value": res})
        elif has_id and has_method:  # server -> client request
            self._spawn(self._handle_server_request(msg), f"answer to {msg['method']}")
        elif has_method:  # notification, delivered verbatim
            if self.on_notification is not None:
                self.on_notification(msg, raw)
            self._deliver(msg)

    async def _handle_server_request(self, msg: Json) -> None:
        rid, method = msg["id"], str(msg["method"])
        reply: Json
        try:
            if self.on_server_request is None:
                raise AppServerError(-32601, f"client has no handler for {method}")
            reply = {
                "id": rid,
                "result": await self.on_server_request(method, msg.get("params"), rid),
            }
        except AppServerError as e:
            reply = {
                "id": rid,
                "error": _clean({"code": e.code, "message": e.message, "data": e.data}),
            }
        except Exception as e:  # handler bug: still answer, never leave codex waiting
            reply = {
                "id": rid,
                "error": {"code": -32603, "message": f"client handler failed: {e!r}"},
            }
        with contextlib.suppress(AppServerExited):
            await self._send(reply)

    async def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        f = open(self.stderr_path, "a", encoding="utf-8") if self.stderr_path else None  # noqa: SIM115
        try:
            while line := await self._proc.stderr.readline():
                s = line.decode("utf-8", "replace")
                self._stderr_tail.append(s)
                if f:
                    f.write(s)
                    f.flush()
        finally:
            if f:
                f.close()

    async def _on_exit(self) -> None:
        assert self._proc is not None
        try:
            self.returncode = await asyncio.wait_for(self._proc.wait(), 10)
        except TimeoutError:
            self.returncode = None
        await asyncio.sleep(0)  # let the stderr reader flush
        tail = self.stderr_tail()[-4000:]
        for method, fut in list(self._pending.values()):
            if not fut.done():
                fut.set_exception(AppServerExited(self.returncode, tail, method))
        self._exited.set()
        self._deliver(Exited(self.returncode, tail))


def _clean(d: Json) -> Json:
    return {k: v for k, v in d.items() if v is not None}
