# Owns: how the two MCP servers of markertools (`tools serve`: `tools.ToolsMcp`; `dots
# serve`: `dots.DotsMcp`) declare their tools and run on a transport of their own, one
# way for both, through the official MCP SDK's public surface only:
#
#   - `declare_tool`: `mcp.server.mcpserver.tools.Tool.from_function` builds the tool
#     from its entry point, an `async def entry(ctx: Context) -> CallToolResult` with no
#     other parameter (so the SDK's own argument check has no field to check and lets
#     every argument through: the server checks them itself, naming the field as its
#     refusals do), then the input schema `tools/list` shows is the server's own
#     declaration (`Tool.parameters`, a public field of the public model).
#   - `serve_streams`: an MCPServer served on a (read, write) stream pair, e.g. the
#     bounded stdio transport of `dots._mcp_stdio`. MCPServer has no public method that
#     takes streams (`run_stdio_async` opens the SDK's own stdio transport), so this is
#     the one place that reaches its low-level server, as `MCPServer.run_stdio_async`
#     itself does (mcp pinned in pyproject.toml).
#
# Must never: declare a schema other than the one given, or let the SDK refuse a call
# before the tool sees it (a refusal is the tool's, as a tool result).
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp_types import ToolAnnotations

from markertools import InvalidArgument

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
CHANGES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def declare_tool(
    entry: Callable[..., Any],
    *,
    name: str,
    description: str,
    schema: Mapping[str, Any],
    changes: bool,
) -> Tool:
    """One tool of an MCPServer: `entry` (its only parameter the SDK's `Context`) under
    `name`, titled by the name with spaces, described by `description`, its input schema
    exactly `schema`, annotated read-only unless it `changes` the world."""
    tool = Tool.from_function(
        entry,
        name=name,
        title=name.replace("_", " "),
        description=description,
        annotations=CHANGES if changes else READ_ONLY,
        structured_output=False,  # the entry builds its own CallToolResult
    )
    if tool.fn_metadata.arg_model.model_fields:  # the entry takes arguments of its own
        raise InvalidArgument(f"{name}: the entry point must take the context only")
    return tool.model_copy(update={"parameters": dict(schema)})


async def serve_streams(server: MCPServer[Any], read: Any, write: Any) -> None:
    """Serve `server` on one connection (the stream pair) until its read side closes."""
    lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs (mcp pinned)
    await lowlevel.run(read, write, lowlevel.create_initialization_options())
