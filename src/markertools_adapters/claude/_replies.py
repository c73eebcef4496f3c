# Owns: the replies the fake Messages API can be scripted with (ENG-3) - `Text`,
# `ToolUse` (with `McpToolUse`, `BashCall`, `EditCall`, `WriteCall` for the tools Claude
# Code offers), `Hang`, `HttpError`, each with the `Usage` it reports - and
# `stream_events`, a reply as the Server-Sent Events of the Messages API's stream
# (message_start, content_block_start / _delta / _stop of a text or a tool_use block,
# message_delta with the stop reason and usage, message_stop).
#
# Must never: produce an event or a field the Messages API stream does not define.
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# --------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class Usage:
    """The tokens a reply reports (`message_start` and `message_delta` usage)."""

    input_tokens: int = 100
    output_tokens: int = 20
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


@dataclass(frozen=True)
class Text:
    """An assistant message of one text block, streamed in pieces of `chunk` characters
    (`delay` seconds first, pinging meanwhile: a slow turn); stop reason `end_turn`."""

    text: str
    chunk: int = 40
    delay: float = 0.0
    usage: Usage = Usage()


@dataclass(frozen=True)
class ToolUse:
    """An assistant message asking for one tool: an optional text block, then a
    `tool_use` block of `name` with `input` (streamed as `input_json_delta` pieces);
    stop reason `tool_use`. The tool's result comes back in the next request."""

    name: str
    input: dict[str, Any]
    text: str | None = None
    delay: float = 0.0
    usage: Usage = Usage()


def McpToolUse(server: str, tool: str, arguments: dict[str, Any]) -> ToolUse:
    """A call of the tool `tool` of the MCP server `server`, named as Claude Code names
    it (`mcp__SERVER__TOOL`)."""
    return ToolUse(f"mcp__{server}__{tool}", dict(arguments))


def BashCall(command: str, *, description: str = "", unsandboxed: bool = False) -> ToolUse:
    """Claude Code's Bash tool. `unsandboxed` asks to run it outside the command sandbox
    (`dangerouslyDisableSandbox`), which makes Claude Code ask for permission."""
    body: dict[str, Any] = {"command": command, "description": description or "run a command"}
    if unsandboxed:
        body["dangerouslyDisableSandbox"] = True
    return ToolUse("Bash", body)


def EditCall(file_path: str, old_string: str, new_string: str) -> ToolUse:
    """Claude Code's Edit tool (replace `old_string` by `new_string` in a file it read)."""
    return ToolUse(
        "Edit", {"file_path": file_path, "old_string": old_string, "new_string": new_string}
    )


def WriteCall(file_path: str, content: str) -> ToolUse:
    """Claude Code's Write tool (create or overwrite a file)."""
    return ToolUse("Write", {"file_path": file_path, "content": content})


@dataclass(frozen=True)
class Hang:
    """Start the stream and then only ping, until the client disconnects or
    `FakeMessages.release_hangs()` / `stop()`."""


@dataclass(frozen=True)
class HttpError:
    """An error answer (4xx: Claude Code does not retry it)."""

    status: int = 400
    body: str = (
        '{"type":"error","error":{"type":"invalid_request_error","message":"fake server error"}}'
    )


Reply = Text | ToolUse | Hang | HttpError


# --------------------------------------------------------------------------- the stream


def _usage_start(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": 1,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
    }


def stream_events(reply: Text | ToolUse, model: str, number: int) -> list[dict[str, Any]]:
    """The events of one streamed reply (without pings), as the Messages API sends them."""
    usage = reply.usage
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": f"msg_fake_{number}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": _usage_start(usage),
            },
        }
    ]
    text = reply.text
    index = 0
    if text:
        chunk = max(1, reply.chunk) if isinstance(reply, Text) else 40
        events.append(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        )
        events.extend(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text[i : i + chunk]},
            }
            for i in range(0, len(text), chunk)
        )
        events.append({"type": "content_block_stop", "index": 0})
        index = 1
    stop = "end_turn"
    if isinstance(reply, ToolUse):
        stop = "tool_use"
        raw = json.dumps(reply.input)
        events.append(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {
                    "type": "tool_use",
                    "id": f"toolu_fake_{number:06d}",
                    "name": reply.name,
                    "input": {},
                },
            }
        )
        events.extend(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": raw[i : i + 64]},
            }
            for i in range(0, len(raw), 64)
        )
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": usage.output_tokens},
        }
    )
    events.append({"type": "message_stop"})
    return events


__all__ = [
    "BashCall",
    "EditCall",
    "Hang",
    "HttpError",
    "McpToolUse",
    "Reply",
    "Text",
    "ToolUse",
    "Usage",
    "WriteCall",
    "stream_events",
]
