# Owns: reading a Claude Code session's transcript on disk (WRK-6): where it is
# (`<config>/projects/<the working directory, escaped>/<session>.jsonl`, found by the
# session id, so the escaping of the directory need not be known), and its last turn
# when that turn completed - the id of the user message that began it (the uuid the
# host gave it) and the text of every assistant message of the main conversation
# since, joined as delivered. Checked against Claude Code 2.1.332's transcript entries:
# a prompt is a `user` entry with `promptSource`; a tool result or an interruption
# ("[Request interrupted by user]") is a `user` entry without it; a turn that ended
# has its last assistant entry's `stop_reason` `end_turn` (or `stop_sequence`) with no
# user entry after it.
#
# Must never: raise for a missing, unreadable or malformed transcript (None instead);
# read more than `MAX_BYTES` of one.
from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any, Final

from markertools_adapters.codex import MESSAGE_SEPARATOR

MAX_BYTES: Final[int] = 256 * 1024 * 1024
ENDED: Final[tuple[str, ...]] = ("end_turn", "stop_sequence")


def is_session_id(value: str) -> bool:
    """A session id as Claude Code makes them (a UUID), in canonical form."""
    try:
        return str(uuid.UUID(value)) == value
    except (ValueError, AttributeError, TypeError):
        return False


def session_file(config_dir: Path | str, session: str) -> Path | None:
    """The transcript of `session` under `config_dir`, or None (not a session id, or no
    such file)."""
    if not is_session_id(session):
        return None
    try:
        hits = sorted((Path(config_dir) / "projects").glob(f"*/{session}.jsonl"))
    except OSError:
        return None
    return next((p for p in hits if p.is_file()), None)


def assistant_texts(message: Any) -> list[str]:
    """The text blocks of an assistant message's content, in order."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [content] if content else []
    if not isinstance(content, list):
        return []
    return [
        b["text"]
        for b in content
        if isinstance(b, dict)
        and b.get("type") == "text"
        and isinstance(b.get("text"), str)
        and b["text"]
    ]


def last_completed_turn(path: Path | str) -> tuple[str, str] | None:
    """(turn id, text) of the transcript's last turn when it completed, else None."""
    turn: str | None = None
    texts: list[str] = []
    ended = False
    try:
        with open(path, "rb") as fh:
            read = 0
            for raw in fh:
                read += len(raw)
                if read > MAX_BYTES:
                    return None
                entry = _entry(raw)
                if entry is None or entry.get("isSidechain"):
                    continue
                kind = entry.get("type")
                message = entry.get("message")
                if kind == "user":
                    if entry.get("promptSource") and isinstance(entry.get("uuid"), str):
                        turn, texts = entry["uuid"], []
                    ended = False
                elif kind == "assistant" and isinstance(message, dict):
                    texts.extend(assistant_texts(message))
                    ended = message.get("stop_reason") in ENDED
    except OSError:
        return None
    if turn is None or not ended:
        return None
    return turn, MESSAGE_SEPARATOR.join(texts)


def _entry(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


__all__ = ["assistant_texts", "is_session_id", "last_completed_turn", "session_file"]
