"""WRK-9 on the real Codex CLI (offline, fake model): every task's thread gets the
same-turn markertools tools from its first turn - `task_create` then `task_poll`
answered inside the turn, approved by the thread's configuration (no question reaches
the host) - while any other approval request is still declined (WRK-3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.worker import add_task, run_host, settings_for, worker_store

from markertools_adapters.codex.fakemodel import McpToolCall, ShellCall, Text, request_texts
from markertools_adapters.worker import WorkerHost


def _outputs(body: Any) -> list[str]:
    """The outputs of the function_call_output items of a model request, in order."""
    found: list[str] = []
    for item in body.get("input") or [] if isinstance(body, dict) else []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            output = item.get("output")
            found.append(output if isinstance(output, str) else json.dumps(output))
    return found


def _structured(output: str) -> dict[str, Any]:
    """The structuredContent Codex shows the model ("Wall time: ...\\nOutput:\\n{...}")."""
    parsed: dict[str, Any] = json.loads(output[output.index("{") :])
    return parsed


@pytest.mark.rule("WRK-9", "WRK-3")
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_tasks_first_turn_calls_its_tools_in_turn_and_other_approvals_stay_declined(
    offline_codex, tmp_path: Path, kind: str
) -> None:
    seen: dict[str, Any] = {}

    def reply_for(body: Any) -> Any:
        if not any("[agent:tooler]" in t for t in request_texts(body)):
            return Text("child done")  # the created child, run by the same host
        outs = _outputs(body)
        if not outs:
            return McpToolCall("markertools", "task_create", {"prompt": "child from a tool"})
        if len(outs) == 1:
            seen["create"] = _structured(outs[0])
            return McpToolCall("markertools", "task_poll", {"task_id": seen["create"]["task_id"]})
        if len(outs) == 2:
            seen["poll"] = _structured(outs[1])
            return ShellCall("rm -rf /tmp/elsewhere", escalate=True)
        return Text("unexpected")

    offline_codex.fake.default_reply = None
    offline_codex.fake.reply_for = reply_for
    with worker_store(kind, tmp_path) as store:
        add_task(store, "t-tool", "[agent:tooler] make a helper task and look at it")
        host = WorkerHost(settings_for(offline_codex, tmp_path, tools=True, approvals="decline"), store)
        run_host(host)

        # both calls were answered inside the first turn, by the task's own tools
        assert seen["create"]["kind"] == "task-create" and seen["create"]["outcome"] == "done"
        child = seen["create"]["task_id"]
        assert seen["poll"]["kind"] == "task-poll" and seen["poll"]["target"] == child
        assert seen["poll"]["task"]["id"] == child
        assert store.get_task(child).parent_task_id == "t-tool"
        assert store.get_task(child).status == "completed"
        tool_audit = [
            r for r in store.audit_records() if r.sender == "t-tool" and r.source == "tool"
        ]
        assert [r.kind for r in tool_audit] == ["task-create", "task-poll"]
        # the tool calls asked nobody; the shell command's approval was declined, named
        task = store.get_task("t-tool")
        assert task.status == "interrupted"
        assert task.interrupted_reason.startswith("the agent asked for command approval (")
        assert "mcp" not in task.interrupted_reason.lower()
        # the token is revoked once the task left running
        assert store.revoke_task_tokens("t-tool") == 0
