"""Codex adapter: turn a Codex app-server stream or rollout file into markertools turns.

- `AppServerTurnReader` — incremental (`feed(chunk)` / `feed_message(obj)` / `close()`)
  reader of the newline-delimited JSON-RPC a `codex app-server` writes on stdout; one
  `CodexTurn` per `turn/completed`.
- `RolloutTurnReader` — the same for `rollout-*.jsonl` session files.
- `read_app_server_events(path)`, `read_rollout(path)` — whole files (`.zst` too, with
  the optional `zstandard` package) into a `CodexTranscript` (turns + problems).

A `CodexTurn` carries the agent text markertools parses and `outcome`, the value to
pass as `deliver_turn(..., outcome=...)`: only a Codex "completed" turn delivers.
"""

from __future__ import annotations

from markertools_adapters.codex._appserver import (
    AppServerTurnReader,
    iter_app_server_turns,
    read_app_server_stream,
)
from markertools_adapters.codex._files import (
    CodexInputError,
    read_app_server_events,
    read_rollout,
    thread_id_from_name,
)
from markertools_adapters.codex._records import (
    MESSAGE_SEPARATOR,
    OUTCOME_OF_STATUS,
    CodexProblem,
    CodexTranscript,
    CodexTurn,
    join_messages,
    outcome_of,
)
from markertools_adapters.codex._rollout import RolloutTurnReader

__all__ = [
    "MESSAGE_SEPARATOR",
    "OUTCOME_OF_STATUS",
    "AppServerTurnReader",
    "CodexInputError",
    "CodexProblem",
    "CodexTranscript",
    "CodexTurn",
    "RolloutTurnReader",
    "iter_app_server_turns",
    "join_messages",
    "outcome_of",
    "read_app_server_events",
    "read_app_server_stream",
    "read_rollout",
    "thread_id_from_name",
]
