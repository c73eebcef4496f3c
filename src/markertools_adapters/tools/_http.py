# Owns: `--http HOST:PORT` of `tools serve` (TOL-8, TOL-11): the address parsed and
# checked to be a loopback one (127.0.0.0/8, every spelling of ::1, localhost; anything
# else, a zone index included, is refused before anything listens), the socket bound
# here (a port in use or an address that cannot be bound is one line, `ListenFailed`),
# and `HttpGate`, the ASGI app in front of the SDK's Streamable HTTP apps at /mcp, one
# server for many tasks, each request bound by its own `Authorization: Bearer` token
# (`_request.bearer_token`):
#
#   1. Host and Origin (DNS rebinding): a request whose Host is not a loopback address
#      or `localhost` (any port), or whose Origin is present and not http(s) on one, is
#      refused (421 / 403) before anything else, whatever address the server listens on.
#   2. No state without a valid bearer: a request with no session id opens a session
#      only when its bearer is authorised (a store read in the fair pool); anything else
#      is answered by the SDK's stateless app, which keeps nothing after the request (a
#      tool call there is refused "not authorised: ..." by the server, TOL-3).
#   3. Sessions per token: at most `sessions_per_token` open at once; a new one past the
#      bound ends the token's least recently used idle session (a DELETE through the
#      SDK's own app), and is refused (503, naming the bound) when all are busy. A
#      session answers only the token that opened it (another's gets 404, as unknown).
#   4. A request's end: every request's scope carries an event (`_request.GONE_KEY`) set
#      when its HTTP exchange ends, so a call whose client disconnected ends at once.
#   5. Refusals are logged at a bounded rate (`_ratelog`).
#
# Must never: listen on a non-loopback address; log a request's headers or a token;
# keep anything for a request without a valid bearer.
from __future__ import annotations

import contextlib
import ipaddress
import logging
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any, Final

import anyio
import attrs
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import INTERNAL_ERROR, ErrorData, JSONRPCError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from markertools import InvalidArgument, msg, summarize_error
from markertools_adapters.errors import MarkertoolsError
from markertools_adapters.tools._request import GONE_KEY, bearer_of, token_key
from markertools_adapters.tools.server import ToolsMcp

log = logging.getLogger("markertools.tools.serve")

MCP_PATH: Final[str] = "/mcp"
DEFAULT_SESSIONS_PER_TOKEN: Final[int] = 8
SESSION_IDLE_SECONDS: Final[float] = 30 * 60.0  # the SDK's default, kept
SHUTDOWN_SECONDS: Final[float] = 2.0  # open streams get this long to end at shutdown
# the gate checks Host and Origin itself (1. above), for every loopback spelling
_SDK_CHECK_OFF: Final = TransportSecuritySettings(enable_dns_rebinding_protection=False)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class NotLoopback(MarkertoolsError, ValueError):
    """`--http` named an address that is not a loopback one, or no HOST:PORT at all."""


class ListenFailed(MarkertoolsError, OSError):
    """The `--http` address could not be listened on (a port in use, an address this
    machine does not have): one sentence naming it and the system's reason."""


def _loopback_host(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    if "%" in host:  # a zone index: not one address
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_listen(value: str) -> tuple[str, int]:
    """`HOST:PORT` (`[::1]:PORT` for IPv6) -> (host, port), the host a loopback address;
    NotLoopback (a ValueError) with one sentence otherwise."""
    text = value.strip()
    if text.startswith("["):
        host, sep, port_text = text[1:].partition("]:")
    else:
        host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise NotLoopback(f"--http {value[:80]!r}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    if "%" in host:
        raise NotLoopback(
            f"--http {host[:80]}: a zone index (%...) is not allowed; name the loopback "
            "address alone (127.0.0.1, ::1 or localhost)"
        )
    if not _loopback_host(host):
        raise NotLoopback(
            f"--http {host[:80]}: only a loopback address is allowed "
            "(127.0.0.1, ::1 or localhost): the tools act for tasks, so they are "
            "never served to the network"
        )
    return host, int(port_text)


def listen(host: str, port: int) -> socket.socket:
    """The listening socket of `--http HOST:PORT` (ListenFailed with one sentence)."""
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        infos.sort(key=lambda i: i[0] != socket.AF_INET)  # localhost: 127.0.0.1 first
        family, kind, proto, _, address = next(i for i in infos if _loopback_host(str(i[4][0])))
        sock = socket.socket(family, kind, proto)
    except (OSError, StopIteration) as exc:
        reason = (
            exc.strerror if isinstance(exc, OSError) and exc.strerror else "not a loopback address"
        )
        raise ListenFailed(f"--http {shown}: cannot listen: {reason}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        raise ListenFailed(f"--http {shown}: cannot listen: {reason}") from None
    return sock


def _authority_is_loopback(authority: str) -> bool:
    """`host`, `host:port`, `[v6]` or `[v6]:port` naming a loopback host."""
    if authority.startswith("["):
        host, sep, rest = authority[1:].partition("]")
        if not sep or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return False
    else:
        host, sep, port = authority.rpartition(":")
        if not sep:
            host = authority
        elif not port.isdigit():
            return False
    return bool(host) and _loopback_host(host)


def host_allowed(host: str | None) -> bool:
    return host is not None and _authority_is_loopback(host.strip())


def origin_allowed(origin: str | None) -> bool:
    if origin is None:
        return True  # a same-origin request or no browser at all
    scheme, sep, rest = origin.strip().partition("://")
    if not sep or scheme.lower() not in ("http", "https") or "/" in rest.rstrip("/"):
        return False
    return _authority_is_loopback(rest.rstrip("/"))


@attrs.define
class _Session:
    key: str
    last: float
    in_flight: int = 0


async def _plain(send: Send, status: int, text: str) -> None:
    body = text.encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", b"%d" % len(body)),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _json_error(send: Send, status: int, message: str, code: int) -> None:
    error = JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=code, message=message))
    body = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class HttpGate:
    """The ASGI app of `tools serve --http` (see the module header)."""

    def __init__(
        self,
        tools: ToolsMcp,
        *,
        sessions_per_token: int = DEFAULT_SESSIONS_PER_TOKEN,
        idle_seconds: float = SESSION_IDLE_SECONDS,
    ) -> None:
        if isinstance(sessions_per_token, bool) or sessions_per_token < 1:
            raise InvalidArgument(f"sessions_per_token must be >= 1; got {sessions_per_token!r}")
        self.tools = tools
        self.sessions_per_token = sessions_per_token
        self.idle_seconds = idle_seconds
        self.stateful = tools.server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            transport_security=_SDK_CHECK_OFF,
            max_sessions=None,  # bounded per token here
            session_idle_timeout=idle_seconds,
        )
        self.stateless = tools.server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            transport_security=_SDK_CHECK_OFF,
        )
        self.sessions: dict[str, _Session] = {}  # session id -> its token and use
        self._by_key: dict[str, set[str]] = {}

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The SDK apps' lifespans (their session managers) around serving."""
        async with (
            self.stateful.router.lifespan_context(self.stateful),
            self.stateless.router.lifespan_context(self.stateless),
        ):
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # lifespan: `running()`; websockets: not served
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if not host_allowed(headers.get("host")):
            self.tools.refusals.note("refused a request with a Host that is not a loopback one")
            await _plain(send, 421, "Invalid Host header")
            return
        if not origin_allowed(headers.get("origin")):
            self.tools.refusals.note("refused a request with an Origin that is not a loopback one")
            await _plain(send, 403, "Invalid Origin header")
            return
        if scope["path"].rstrip("/") != MCP_PATH:
            await _plain(send, 404, "Not Found")
            return
        gone = anyio.Event()
        scope[GONE_KEY] = gone
        try:
            await self._route(scope, receive, send, headers)
        except Exception as exc:  # the SDK's, e.g. a message into a session just ended
            self.tools.refusals.note(f"a request failed in the MCP SDK: {summarize_error(exc)}")
        finally:
            gone.set()

    async def _route(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str]
    ) -> None:
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await self.stateless(scope, receive, send)  # one exchange per request, no session
            return
        token = bearer_of(headers.get("authorization"))
        key = token_key(token)
        sid = headers.get("mcp-session-id")
        if sid is not None:
            await self._in_session(sid, key, scope, receive, send)
            return
        if scope["method"] == "POST" and token is not None:
            try:
                auth = await self.tools.authorize(token, key=key)
            except Exception:  # the store: the stateless answer says why, per call
                auth = None
            if auth is not None and auth.ok:
                await self._open_session(key, scope, receive, send)
                return
        await self.stateless(scope, receive, send)  # keeps nothing after the request

    async def _in_session(
        self, sid: str, key: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        session = self.sessions.get(sid)
        if session is None or session.key != key:
            if session is not None:
                self.tools.refusals.note("refused a request for a session another token opened")
            await _json_error(send, 404, "Session not found", -32600)
            return
        session.in_flight += 1
        status = 0

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.stateful(scope, receive, watched)
        finally:
            session.in_flight -= 1
            session.last = time.monotonic()
            ended = status == 404 or (scope["method"] == "DELETE" and 200 <= status < 300)
            if ended:
                self._forget(sid)

    async def _open_session(self, key: str, scope: Scope, receive: Receive, send: Send) -> None:
        self._prune()
        mine = self._by_key.get(key, set())
        if len(mine) >= self.sessions_per_token:
            idle = [(self.sessions[s].last, s) for s in mine if self.sessions[s].in_flight == 0]
            if not idle:
                self.tools.refusals.note("refused a session past its token's bound")
                text = msg("toolserver.too_many_sessions", max=self.sessions_per_token)
                await _json_error(send, 503, text.render(self.tools.locale), INTERNAL_ERROR)
                return
            _, oldest = min(idle)
            await self._end(oldest)
        status = 0
        opened: str | None = None

        async def watched(message: Message) -> None:
            nonlocal status, opened
            if message["type"] == "http.response.start":
                status = int(message["status"])
                for name, value in message.get("headers", []):
                    if name.lower() == b"mcp-session-id":
                        opened = value.decode("latin-1")
            if opened is not None and status < 400 and opened not in self.sessions:
                self.sessions[opened] = _Session(key, time.monotonic(), in_flight=1)
                self._by_key.setdefault(key, set()).add(opened)
            await send(message)

        try:
            await self.stateful(scope, receive, watched)
        finally:
            if opened is not None and opened in self.sessions:
                session = self.sessions[opened]
                session.in_flight = max(0, session.in_flight - 1)
                session.last = time.monotonic()

    async def _end(self, sid: str) -> None:
        """End a session through the SDK's own app (a DELETE) and forget it."""
        scope: Scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "DELETE",
            "scheme": "http",
            "path": MCP_PATH,
            "raw_path": MCP_PATH.encode(),
            "root_path": "",
            "query_string": b"",
            "headers": [(b"host", b"localhost"), (b"mcp-session-id", sid.encode("latin-1"))],
            "client": ("127.0.0.1", 0),
            "server": ("127.0.0.1", 0),
        }

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(_: Message) -> None:
            return None

        self._forget(sid)
        with contextlib.suppress(Exception):
            await self.stateful(scope, receive, send)

    def _forget(self, sid: str) -> None:
        session = self.sessions.pop(sid, None)
        if session is not None:
            mine = self._by_key.get(session.key)
            if mine is not None:
                mine.discard(sid)
                if not mine:
                    del self._by_key[session.key]

    def _prune(self) -> None:
        """Forget sessions the SDK ended for idleness (no request for `idle_seconds`)."""
        cutoff = time.monotonic() - self.idle_seconds
        for sid in [s for s, v in self.sessions.items() if v.in_flight == 0 and v.last < cutoff]:
            self._forget(sid)


async def serve_http(
    tools: ToolsMcp,
    sock: socket.socket,
    *,
    sessions_per_token: int = DEFAULT_SESSIONS_PER_TOKEN,
    stop: anyio.Event | None = None,
) -> None:
    """Serve Streamable HTTP at /mcp on the listening socket until cancelled or `stop`."""
    import uvicorn

    gate = HttpGate(tools, sessions_per_token=sessions_per_token)
    config = uvicorn.Config(
        gate,
        lifespan="off",
        log_level="error",  # no line per malformed request: refusals are ours, bounded
        access_log=False,
        timeout_graceful_shutdown=int(SHUTDOWN_SECONDS),
    )
    server = uvicorn.Server(config)
    async with gate.running(), anyio.create_task_group() as group:
        if stop is not None:
            group.start_soon(_exit_when_set, stop, server)
        await server.serve(sockets=[sock])
        group.cancel_scope.cancel()


async def _exit_when_set(stop: anyio.Event, server: Any) -> None:
    await stop.wait()
    server.should_exit = True
