# Owns: the JSON views of runs and threads the tools and the CLI print: a run's status
# (`run_view`: per run `runId` and `state`, while paused the pause's own words
# (`pauseDetail`), the quota (`unknownSince` once the watched window went missing), per
# worker `name`, `state`, `turns`, the head of its last reply and, while it awaits one,
# `decision: {id}`), and the turns of a `thread/read` answer (`history_turns`,
# `turn_ids`). Pure functions of their input; fields are only ever added (docs/cli.md).
from __future__ import annotations

from typing import Any, Final

from markertools.plans import RunState

HEAD_CHARS: Final[int] = 200
PAUSE_PREFIX: Final[str] = "plan.paused."  # every pause records its detail as such an alert
UNOBSERVED: Final[str] = "plan.quota_unobserved"  # raised when the watched window goes missing


def head(text: object, limit: int = HEAD_CHARS) -> str | None:
    """The first non-blank line of `text`, at most `limit` characters."""
    if not isinstance(text, str):
        return None
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def run_view(state: RunState, locale: str = "en") -> dict[str, Any]:
    workers = []
    for role in state.roles:
        spec = state.proposal.role(role.name)
        item: dict[str, Any] = {
            "name": role.name,
            "state": role.status,
            "turns": role.turns,
            "threadId": role.thread_id or (spec.existing_thread_id if spec else None),
            "cwd": spec.cwd if spec else None,
            "sandbox": role.sandbox or (spec.sandbox if spec else None),
            "model": role.model or (spec.model if spec else None),
            "lastInstructionHead": head(role.last_instruction),
            "lastReplyHead": head(role.last_reply),
            "lastOutcome": role.last_outcome,
        }
        if role.status == "awaiting-decision" and role.decision_id:
            item["decision"] = {"id": role.decision_id, "replyHead": head(role.last_reply)}
        if role.conclusion is not None:
            item["conclusionHead"] = head(role.conclusion)
        if role.interrupted_instruction is not None:
            item["interruptedInstructionHead"] = head(role.interrupted_instruction)
        workers.append(item)
    policy = state.proposal.quota
    return {
        "runId": state.run_id,
        "state": state.status,
        "goal": state.proposal.goal,
        "pauseReason": state.pause_reason,
        "pauseDetail": _latest(state, PAUSE_PREFIX, locale) if state.status == "paused" else None,
        "turnsUsed": state.turns_used,
        "maxTurns": state.turn_limit,
        "workers": workers,
        "quota": {
            "windows": [
                {
                    "leftPercent": w.left_percent,
                    "bucket": w.bucket,
                    "windowMinutes": w.window_minutes,
                }
                for w in state.quota_windows
            ],
            "unknown": state.quota_unobserved,
            "unknownSince": _since(state, UNOBSERVED) if state.quota_unobserved else None,
            "stopAtLeftPercent": policy.stop_at_left_percent,
            "watch": {"bucket": policy.bucket, "windowMinutes": policy.window_minutes},
        },
        "alerts": [{"at": a.at, "message": a.message.render(locale)} for a in state.alerts[-10:]],
        "pendingNotices": len(state.outbox),
    }


def _last_alert(state: RunState, key: str) -> Any:
    """The newest alert whose message key starts with `key` (None when there is none)."""
    return next((a for a in reversed(state.alerts) if a.message.key.startswith(key)), None)


def _latest(state: RunState, key: str, locale: str) -> str | None:
    found = _last_alert(state, key)
    return found.message.render(locale) if found is not None else None


def _since(state: RunState, key: str) -> float | None:
    found = _last_alert(state, key)
    return found.at if found is not None else None


def turn_ids(result: dict[str, Any]) -> list[str]:
    thread = result.get("thread")
    turns = thread.get("turns") if isinstance(thread, dict) else None
    return [t["id"] for t in turns or [] if isinstance(t, dict) and isinstance(t.get("id"), str)]


def _item_text(item: dict[str, Any]) -> str:
    text = item.get("text")
    if isinstance(text, str):
        return text
    content = item.get("content")
    if isinstance(content, list):
        return "".join(
            str(c.get("text", "")) for c in content if isinstance(c, dict) and "text" in c
        )
    return ""


def history_turns(result: dict[str, Any], last: int | None) -> list[dict[str, Any]]:
    """(id, status, user text, agent text) of the thread's turns, oldest first; only
    the `last` ones when given."""
    thread = result.get("thread")
    turns = thread.get("turns") if isinstance(thread, dict) else None
    out: list[dict[str, Any]] = []
    for turn in turns or []:
        if not isinstance(turn, dict):
            continue
        user, agent = [], []
        for item in turn.get("items") or []:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "userMessage":
                user.append(_item_text(item))
            elif item.get("type") == "agentMessage":
                agent.append(_item_text(item))
        out.append(
            {
                "id": turn.get("id"),
                "status": turn.get("status"),
                "user": "\n".join(user),
                "agent": "\n".join(agent),
            }
        )
    return out if last is None else out[-last:]
