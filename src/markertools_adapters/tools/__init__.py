"""markertools_adapters.tools: the fifteen marker tools as an MCP server (`markertools
tools serve`, docs/tools.md, TOL-1..8): `ToolsMcp` on the official MCP SDK, bound to a
task by its task token (`env_token` for stdio, `bearer_token` for Streamable HTTP)."""

from markertools_adapters.tools._http import MCP_PATH, NotLoopback, parse_listen, serve_http
from markertools_adapters.tools.server import (
    CALL_ID_META_KEY,
    DEFAULT_MAX_WAIT_MS,
    TOKEN_ENV,
    ToolsMcp,
    bearer_token,
    env_token,
)

__all__ = [
    "CALL_ID_META_KEY",
    "DEFAULT_MAX_WAIT_MS",
    "MCP_PATH",
    "TOKEN_ENV",
    "NotLoopback",
    "ToolsMcp",
    "bearer_token",
    "env_token",
    "parse_listen",
    "serve_http",
]
