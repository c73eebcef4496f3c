# Owns: `HostTools`, the markertools tools a worker host serves its own Codex runs
# (WRK-9, TOL-10): one `ToolsMcp` over the host's store, served as Streamable HTTP on
# an ephemeral port of 127.0.0.1 by a task of the host's `Background`, each request bound
# by its run's task token sent as `Authorization: Bearer` (Codex learns it in the
# thread's configuration, over the app-server's stdin), each call delivered with the
# claim of the host's live run of its task (`claim_of`: FLT-1).
#
# Why not a `tools serve` child per task: its store URL (a password) and its token would
# sit in a process the agent's shell can read (`/proc/PID/environ`, `cmdline`). Served
# here, the secrets stay in the host's memory; the host hides its own
# (`_secrets.hide_credentials`).
#
# Must never: listen on anything but loopback; put a token in a log line; outlive the
# host (`stop()` ends it gracefully, the Background's close cancels what is left).
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import anyio

from markertools import Claim, Ports
from markertools_adapters._background import Background
from markertools_adapters.tools._http import MCP_PATH, listen, serve_http
from markertools_adapters.tools._request import bearer_token
from markertools_adapters.tools.server import ToolsMcp

_log = logging.getLogger("markertools.worker")
LOOPBACK = "127.0.0.1"


class HostTools:
    """`url = await HostTools(store, ports, ...).start(background)`; `stop()`."""

    def __init__(
        self,
        store: Any,
        ports: Ports,
        *,
        locale: str,
        max_wait_ms: int,
        claim_of: Callable[[str], Claim | None],
        store_outage_seconds: float,
    ) -> None:
        self.server = ToolsMcp(
            store,
            ports,
            locale=locale,
            max_wait_ms=max_wait_ms,
            token_of=bearer_token,
            claim_of=claim_of,
            store_outage_seconds=store_outage_seconds,
        )
        self.url: str | None = None
        self._stop: anyio.Event | None = None
        self._task: asyncio.Task[Any] | None = None

    async def start(self, background: Background) -> str:
        """Bind 127.0.0.1:0 and serve there (a task of `background`); the /mcp URL.
        Raises ListenFailed when no port can be bound."""
        sock = listen(LOOPBACK, 0)
        port = sock.getsockname()[1]
        self._stop = anyio.Event()
        self._task = background.spawn(self._serve(sock), name="tools server")
        self.url = f"http://{LOOPBACK}:{port}{MCP_PATH}"
        _log.info("the tasks' markertools tools are served at %s", self.url)
        return self.url

    async def _serve(self, sock: Any) -> None:
        assert self._stop is not None
        try:
            await serve_http(self.server, sock, stop=self._stop)
        finally:
            sock.close()

    async def stop(self, timeout: float = 5.0) -> None:
        """End the server gracefully (bounded); the Background cancels it after."""
        if self._stop is None or self._task is None:
            return
        self._stop.set()
        done, _ = await asyncio.wait({self._task}, timeout=timeout)
        if not done:
            _log.warning("the tools server did not end within %.0f s; cancelling it", timeout)
