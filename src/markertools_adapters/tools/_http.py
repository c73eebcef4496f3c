# Owns: `--http HOST:PORT` of `tools serve` (TOL-8): the address parsed and checked to
# be a loopback one (127.0.0.0/8, ::1, localhost; anything else is refused before
# anything listens), and the Streamable HTTP app at /mcp served by uvicorn, one server
# for many tasks, each request bound by its own `Authorization: Bearer` token
# (`server.bearer_token`).
#
# Must never: listen on a non-loopback address, or log a request's headers.
from __future__ import annotations

import ipaddress
from typing import Final

from markertools_adapters.errors import MarkertoolsError
from markertools_adapters.tools.server import ToolsMcp

MCP_PATH: Final[str] = "/mcp"


class NotLoopback(MarkertoolsError, ValueError):
    """`--http` named an address that is not a loopback one, or no HOST:PORT at all."""


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
    if host != "localhost":
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            address = None
        if address is None or not address.is_loopback:
            raise NotLoopback(
                f"--http {host[:80]}: only a loopback address is allowed "
                "(127.0.0.1, ::1 or localhost): the tools act for tasks, so they are "
                "never served to the network"
            )
    return host, int(port_text)


async def serve_http(tools: ToolsMcp, host: str, port: int) -> None:
    """Serve Streamable HTTP at http://HOST:PORT/mcp until cancelled."""
    import uvicorn

    app = tools.server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    await uvicorn.Server(config).serve()
