"""Both MCP servers (`tools serve`, `dots serve`) declare their tools one way, through the
SDK's public surface (`markertools_adapters._mcp_tools.declare_tool`): the schema
`tools/list` shows is the server's own declaration, the SDK checks no argument (the
tool answers every call itself, a wrong argument included), and no module of the
adapters imports the SDK's function-metadata internals."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent

from markertools_adapters._mcp_tools import declare_tool

SRC = Path(__file__).resolve().parents[2] / "src" / "markertools_adapters"
SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 1}},
    "required": ["n"],
    "additionalProperties": False,
}


async def _echo(ctx: Context[Any, Any]) -> CallToolResult:
    params = ctx.request_context.params or {}
    return CallToolResult(content=[TextContent(type="text", text=repr(params.get("arguments")))])


@pytest.mark.rule("TOL-1", "DOT-13")
def test_a_declared_tool_shows_its_schema_and_gets_every_argument_unchecked() -> None:
    tool = declare_tool(_echo, name="echo_it", description="echoes", schema=SCHEMA, changes=False)
    server: MCPServer[Any] = MCPServer("t", tools=[tool])

    async def scenario() -> tuple[Any, list[CallToolResult]]:
        async with Client(server) as c:
            listed = (await c.list_tools()).tools
            calls = [
                await c.call_tool("echo_it", {"n": "not a number", "extra": [1, 2]}),
                await c.call_tool("echo_it", {}),
            ]
            return listed, calls

    listed, (wrong, empty) = asyncio.run(scenario())
    (shown,) = listed
    assert shown.input_schema == SCHEMA and shown.title == "echo it"
    assert shown.annotations is not None and shown.annotations.read_only_hint is True
    assert not wrong.is_error and wrong.content[0].text == "{'n': 'not a number', 'extra': [1, 2]}"  # type: ignore[union-attr]
    assert not empty.is_error and empty.content[0].text == "{}"  # type: ignore[union-attr]


@pytest.mark.rule("TOL-1", "DOT-13")
def test_an_entry_with_arguments_of_its_own_is_refused() -> None:
    async def entry(n: int, ctx: Context[Any, Any]) -> CallToolResult:
        return CallToolResult(content=[])

    with pytest.raises(ValueError, match="the entry point must take the context only"):
        declare_tool(entry, name="bad", description="d", schema=SCHEMA, changes=True)


@pytest.mark.rule("TOL-1", "DOT-13")
def test_no_adapter_module_imports_the_sdks_internals() -> None:
    internal = re.compile(r"mcp\.server\.mcpserver\.utilities|ArgModelBase|FuncMetadata\(")
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if internal.search(text):
            offenders.append(str(path.relative_to(SRC)))
        if "_lowlevel_server" in text and path.name != "_mcp_tools.py":
            offenders.append(f"{path.relative_to(SRC)} (_lowlevel_server)")
    assert offenders == []
