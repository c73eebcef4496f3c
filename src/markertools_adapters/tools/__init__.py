"""markertools_adapters.tools: the fifteen marker tools as an MCP server (`markertools
tools serve`, docs/tools.md, TOL-1..11): `ToolsMcp` on the official MCP SDK, bound to a
task by its task token (`env_token` for stdio, `bearer_token` for Streamable HTTP);
`HttpGate` / `serve_http` for one shared server on a loopback address."""

from markertools_adapters.tools._http import (
    MCP_PATH,
    HttpGate,
    ListenFailed,
    NotLoopback,
    listen,
    parse_listen,
    serve_http,
)
from markertools_adapters.tools._ratelog import RateLimitFilter
from markertools_adapters.tools._request import TOKEN_ENV, bearer_token, env_token
from markertools_adapters.tools.server import (
    CALL_ID_META_KEY,
    DEFAULT_MAX_CALLS_PER_TOKEN,
    DEFAULT_MAX_WAIT_MS,
    ToolsMcp,
)

__all__ = [
    "CALL_ID_META_KEY",
    "DEFAULT_MAX_CALLS_PER_TOKEN",
    "DEFAULT_MAX_WAIT_MS",
    "MCP_PATH",
    "TOKEN_ENV",
    "HttpGate",
    "ListenFailed",
    "NotLoopback",
    "RateLimitFilter",
    "ToolsMcp",
    "bearer_token",
    "env_token",
    "listen",
    "parse_listen",
    "serve_http",
]
