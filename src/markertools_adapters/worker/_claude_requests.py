# Owns: turning a Claude Code permission prompt (a `can_use_tool` control request:
# the tool's name and input, Claude Code's reason, the path it blocked) into the
# engine-neutral `EngineRequest` the run answers (APR-1): a Bash command (argv when it
# is one plain command; asking to leave the command sandbox says so), a file change
# (Edit, MultiEdit, Write, NotebookEdit: the path and a short diff), a question for the
# user (input), or any other tool (a permission).
#
# Must never: raise for anything the CLI sends.
from __future__ import annotations

from typing import Any, Final

from markertools_adapters.worker.codex_engine import command_argv
from markertools_adapters.worker.engine import EngineRequest

FILE_TOOLS: Final[dict[str, str]] = {  # tool -> the input field naming its file
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "Write": "file_path",
    "NotebookEdit": "notebook_path",
}
_DIFF_CHARS: Final[int] = 2000


def tool_prefix(server: str) -> str:
    """How Claude Code names the tools of an MCP server: `mcp__SERVER__TOOL`."""
    return f"mcp__{server}__"


def _line(value: object, limit: int = 200) -> str:
    return " ".join(str(value).split())[:limit]


def _text(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    return value if isinstance(value, str) and value.strip() else None


def engine_request(request: dict[str, Any], directory: str) -> EngineRequest:
    """The `EngineRequest` of one `can_use_tool` control request."""
    tool = str(request.get("tool_name") or "a tool")
    raw = request.get("input")
    body: dict[str, Any] = raw if isinstance(raw, dict) else {}
    reason = _text(request, "decision_reason") or _text(request, "description")
    blocked = _text(request, "blocked_path")
    if tool == "Bash":
        command = _text(body, "command") or ""
        outside = body.get("dangerouslyDisableSandbox") is True
        return EngineRequest(
            kind="command",
            name="command approval to run outside the sandbox" if outside else "command approval",
            summary=_line(command) or tool,
            command=command or None,
            argv=command_argv(command),
            cwd=directory,
            paths=(blocked,) if blocked else (),
            reason=reason or _text(body, "description"),
        )
    if tool in FILE_TOOLS:
        path = _text(body, FILE_TOOLS[tool]) or blocked or ""
        diff = None
        if isinstance(body.get("old_string"), str) and isinstance(body.get("new_string"), str):
            diff = f"-{body['old_string']}\n+{body['new_string']}"[:_DIFF_CHARS]
        elif isinstance(body.get("content"), str):
            diff = f"+{body['content']}"[:_DIFF_CHARS]
        return EngineRequest(
            kind="file_change",
            name="file-change approval",
            summary=_line(path) or tool,
            cwd=directory,
            paths=(path,) if path else (),
            diff=diff,
            reason=reason,
        )
    if tool == "AskUserQuestion":
        questions = body.get("questions")
        first = questions[0] if isinstance(questions, list) and questions else {}
        question = first.get("question") if isinstance(first, dict) else None
        return EngineRequest(
            kind="input", name="user input", summary=_line(question or tool), reason=reason
        )
    shown = _text(request, "display_name") or tool
    return EngineRequest(
        kind="permission",
        name=f"permission to use {_line(shown, 80)}",
        summary=_line(reason or body or tool),
        cwd=directory,
        paths=(blocked,) if blocked else (),
        reason=reason,
    )


__all__ = ["FILE_TOOLS", "engine_request", "tool_prefix"]
