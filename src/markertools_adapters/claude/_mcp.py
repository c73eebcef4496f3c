# Owns: `SdkMcpServer`, the task's markertools tools as an MCP server that lives in the
# host's own process: Claude Code (an `"type": "sdk"` entry of `--mcp-config`) sends it
# JSON-RPC messages inside `mcp_message` control requests, and it answers them -
# `initialize`, `ping`, `tools/list` (each tool's name, description and input schema)
# and `tools/call` (the host's `call(name, arguments, call_id)`, with the tool_use id
# Claude Code puts in `_meta` as the call id: a retried call is applied once, TOL-5).
# Notifications get no answer. Nothing of the server (a token, a database URL) is in a
# file, an argument or an environment variable the agent could read (TOL-10).
#
# Must never: raise for anything the CLI sends (a JSON-RPC error or a tool error
# instead); answer a tool it does not declare.
from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

Json = dict[str, Any]
TOOL_USE_META: Final[str] = "claudecode/toolUseId"
FALLBACK_PROTOCOL: Final[str] = "2025-06-18"
_METHOD_NOT_FOUND: Final[int] = -32601
_INVALID_PARAMS: Final[int] = -32602


class SdkMcpServer:
    """One task's tools over the control channel (see the module header)."""

    def __init__(
        self,
        name: str,
        *,
        names: Sequence[str],
        call: Callable[[str, Any, str | None], Awaitable[Any]],
        schema: Callable[[str], Json] | None,
        description: Callable[[str], str] | None,
        version: str = "0",
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self.names = tuple(names)
        self.call = call
        self.schema = schema
        self.description = description
        self.version = version
        self.on_ready = on_ready
        self.calls = 0

    def declaration(self) -> Json:
        """The server's `--mcp-config` entry: no secret, only its name."""
        return {"type": "sdk", "name": self.name}

    def tools(self) -> list[Json]:
        return [
            {
                "name": tool,
                "description": self.description(tool) if self.description else tool,
                "inputSchema": self.schema(tool) if self.schema else {"type": "object"},
            }
            for tool in self.names
        ]

    async def handle(self, message: Any) -> Json | None:
        """The JSON-RPC answer to one message (None for a notification)."""
        if not isinstance(message, dict):
            return _error(None, -32600, "not a JSON-RPC message")
        method = message.get("method")
        has_id = "id" in message
        rid = message.get("id")
        raw = message.get("params")
        params: Json = raw if isinstance(raw, dict) else {}
        if not has_id:
            if method == "notifications/initialized" and self.on_ready is not None:
                self.on_ready()
            return None
        if method == "initialize":
            version = params.get("protocolVersion")
            return _result(
                rid,
                {
                    "protocolVersion": version if isinstance(version, str) else FALLBACK_PROTOCOL,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": self.name, "version": self.version},
                },
            )
        if method == "ping":
            return _result(rid, {})
        if method == "tools/list":
            return _result(rid, {"tools": self.tools()})
        if method == "tools/call":
            return _result(rid, await self._call(params))
        return _error(rid, _METHOD_NOT_FOUND, f"{self.name} does not answer {method}")

    async def _call(self, params: Json) -> Json:
        tool = params.get("name")
        if not isinstance(tool, str) or tool not in self.names:
            text = f"unknown tool {str(tool)[:80]!r}: {self.name} serves {', '.join(self.names)}"
            return {"content": [{"type": "text", "text": text}], "isError": True}
        meta = params.get("_meta")
        call_id = meta.get(TOOL_USE_META) if isinstance(meta, dict) else None
        self.calls += 1
        result = await self.call(
            tool,
            params.get("arguments") if isinstance(params.get("arguments"), dict) else {},
            call_id if isinstance(call_id, str) and call_id else None,
        )
        return result if isinstance(result, dict) else {"content": [], "isError": True}


def _result(rid: Any, result: Json) -> Json:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def _error(rid: Any, code: int, message: str) -> Json:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


__all__ = ["TOOL_USE_META", "SdkMcpServer"]
