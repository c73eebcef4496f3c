"""Builders and Hypothesis strategies for Codex app-server streams and rollout files.

The builders write messages exactly as the app-server v2 protocol shapes them (camelCase
params, `threadId`/`turnId`, `ThreadItem` items); `tests/adapters/codex/test_codex_appserver.py` checks
them against the upstream JSON Schemas so the strategies stay honest.
"""

from __future__ import annotations

import itertools
import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from hypothesis import strategies as st

FIXTURES = Path(__file__).parents[2] / "fixtures" / "codex"
SCHEMAS = FIXTURES / "schema"  # upstream openai/codex app-server v2 schemas
APPSERVER_STREAM = FIXTURES / "appserver_stream.jsonl"
ROLLOUT = FIXTURES / "rollout-2025-10-01T10-00-00-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl"


def line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False) + "\n"


def turn_started(thread: str, turn: str) -> dict[str, Any]:
    return {
        "method": "turn/started",
        "params": {
            "threadId": thread,
            "turn": {"id": turn, "items": [], "status": "inProgress", "error": None},
        },
    }


def turn_completed(
    thread: str, turn: str, status: str = "completed", error: str | None = None
) -> dict[str, Any]:
    err = None if error is None else {"message": error, "codexErrorInfo": None}
    return {
        "method": "turn/completed",
        "params": {
            "threadId": thread,
            "turn": {"id": turn, "items": [], "status": status, "error": err},
        },
    }


def agent_item(thread: str, turn: str, item_id: str, text: str, method: str = "item/completed"):
    return {
        "method": method,
        "params": {
            "threadId": thread,
            "turnId": turn,
            "item": {"type": "agentMessage", "id": item_id, "text": text},
        },
    }


def delta(thread: str, turn: str, item_id: str, piece: str) -> dict[str, Any]:
    return {
        "method": "item/agentMessage/delta",
        "params": {"threadId": thread, "turnId": turn, "itemId": item_id, "delta": piece},
    }


def error_note(thread: str, turn: str, message: str, will_retry: bool) -> dict[str, Any]:
    return {
        "method": "error",
        "params": {
            "threadId": thread,
            "turnId": turn,
            "willRetry": will_retry,
            "error": {"message": message, "codexErrorInfo": None, "additionalDetails": None},
        },
    }


def message_stream(thread: str, turn: str, item_id: str, text: str, cuts: list[int]):
    """One agent message as item/started, deltas cut at `cuts`, item/completed."""
    out = [agent_item(thread, turn, item_id, "", "item/started")]
    bounds = [0, *sorted(set(c for c in cuts if 0 < c < len(text))), len(text)]
    out += [delta(thread, turn, item_id, text[a:b]) for a, b in itertools.pairwise(bounds)]
    out.append(agent_item(thread, turn, item_id, text))
    return out


# Agent text that stresses fences: backticks, tildes, newlines, CRs, non-ASCII.
fence_text = st.text(
    alphabet=st.sampled_from(list('`~\n\r {}":,abcxyz-_é漢\t\\')) | st.characters(codec="utf-8"),
    max_size=200,
)
_text = st.text(st.characters(codec="utf-8"), max_size=40)  # no lone surrogates
marker_text = st.builds(
    lambda before, kind, body, after: f"{before}\n```{kind}\n{body}\n```\n{after}",
    _text,
    st.sampled_from(["task-create", "task-poll", "todo-create", "task-cancel"]),
    _text,
    _text,
)
agent_texts = st.one_of(fence_text, marker_text)


# ---- upstream schema validation ----------------------------------------------------------


@cache
def _validators() -> dict[str, jsonschema.Draft7Validator]:
    turn_doc = json.loads((SCHEMAS / "TurnCompletedNotification.json").read_text())
    error_doc = json.loads((SCHEMAS / "ErrorNotification.json").read_text())
    item_schema = {"$ref": "#/definitions/ThreadItem", "definitions": turn_doc["definitions"]}
    return {
        # TurnStartedNotification has the same shape ({threadId, turn}) as TurnCompleted
        "turn/started": jsonschema.Draft7Validator(turn_doc),
        "turn/completed": jsonschema.Draft7Validator(turn_doc),
        "error": jsonschema.Draft7Validator(error_doc),
        "item": jsonschema.Draft7Validator(item_schema),
    }


def validate_notification(message: dict[str, Any]) -> bool:
    """Validate one message against the upstream schema for its method; True when a
    schema applied. Raises jsonschema.ValidationError when the message does not conform."""
    v = _validators()
    method = message.get("method")
    if "id" in message or method is None:
        return False
    params = message["params"]
    if method in ("item/started", "item/completed"):
        v["item"].validate(params["item"])
        assert isinstance(params["threadId"], str) and isinstance(params["turnId"], str)
        return True
    if method in ("turn/started", "turn/completed", "error"):
        v[method].validate(params)
        return True
    return False
