"""Claude Code adapter pieces for the worker host's `claude-code` engine (ENG-2, ENG-3).

- `client.ClaudeProcess` - one `claude` CLI child in its own process group, driven over
  its stream-json control protocol (user messages in, assistant / result messages and
  control requests out).
- `_mcp.SdkMcpServer` - the task's markertools tools as an in-process ("sdk") MCP server
  answered over that control channel.
- `transcript` - a session's transcript on disk (`<config>/projects/*/<session>.jsonl`):
  whether it exists, its last completed turn.
- `fakemessages.FakeMessages` - a scripted fake of the Anthropic Messages API (streaming)
  and `offline` - an offline Claude Code home and environment against it.
"""

from __future__ import annotations
