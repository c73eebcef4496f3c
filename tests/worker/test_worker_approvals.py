"""APR-1..4 in the worker host, on the real Codex CLI (offline, fake model): an agent's
command that asks to leave the sandbox becomes a stored request; while it waits the
run holds no run slot (FLT-5), and the turn goes on once it is answered - approved by a
person with `markertools approvals approve` (a separate process) and the command runs,
or unanswered until `--approval-timeout` and declined, the agent told why inside the
same turn - or answered by a project rule without anyone. `--json-log` carries
`approval_requested` / `approval_answered`; `worker status` shows the pending request;
`--approvals decline` keeps WRK-3 (declined at once, the task interrupted)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli
from support.worker import TAG, add_task, run_host, settings_for, worker_store

from markertools import ApprovalRule
from markertools_adapters.codex.fakemodel import ShellCall, Text, request_texts
from markertools_adapters.worker import HostEvent, WorkerHost


def _outputs(body: Any) -> list[str]:
    found: list[str] = []
    for item in body.get("input") or [] if isinstance(body, dict) else []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            output = item.get("output")
            found.append(output if isinstance(output, str) else json.dumps(output))
    return found


def _agent(body: Any) -> str:
    return next((m.group(1) for t in request_texts(body) for m in [TAG.search(t)] if m), "")


def _asker(seen: dict[str, Any], command: str) -> Any:
    """An agent that asks once to run `command` outside the sandbox, then says what it
    read back (the command's output, or why not) and ends its turn."""

    def reply_for(body: Any) -> Any:
        if _agent(body) != "asker":
            return Text("other")
        outs = _outputs(body)
        seen.setdefault("requests", []).append(body)
        if not outs:
            return ShellCall(command, escalate=True, justification="I need to write outside")
        seen["told"] = request_texts(body)
        return Text("after the request: " + outs[-1][-200:])

    return reply_for


@pytest.mark.rule("APR-1", "APR-3", "APR-4", "FLT-5")
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_person_approves_from_another_process_and_the_command_runs(
    offline_codex, tmp_path: Path, kind: str
) -> None:
    seen: dict[str, Any] = {}
    outside = tmp_path / "outside-the-sandbox.txt"
    offline_codex.fake.default_reply = None
    offline_codex.fake.reply_for = _asker(seen, f"touch {outside}")
    events: list[HostEvent] = []
    db = str(tmp_path / "w.db")

    def person() -> None:
        """Waits for the request to be listed, reads `worker status`, approves it."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            listed = cli("approvals", "list", "--db", db, "--json")
            found = json.loads(listed.stdout)["approvals"] if listed.returncode == 0 else []
            if found:
                seen["listed"] = found
                seen["status"] = cli("worker", "status", "--db", db).stdout
                seen["slots_while_asking"] = host.slots_used()
                seen["approved"] = cli(
                    "approvals", "approve", found[0]["id"], "--db", db, "--by", "ana"
                )
                return
            time.sleep(0.1)

    with worker_store(kind, tmp_path) as store:
        if kind == "postgres":  # the CLI opens the test's own schema
            db = f"{store.dsn}?options=-csearch_path%3D{store.schema_name}"
        add_task(store, "t-ask", "[agent:asker] write a file outside")
        host = WorkerHost(settings_for(offline_codex, tmp_path), store, sinks=[events.append])
        helper = threading.Thread(target=person)
        helper.start()
        run_host(host)
        helper.join(60)
        task = store.get_task("t-ask")
        (request,) = store.list_approvals("p1")

    (listed,) = seen["listed"]
    assert listed["kind"] == "command" and listed["status"] == "pending"
    assert listed["command"] == ["/bin/bash", "-lc", f"touch {outside}"]  # as Codex runs it
    assert f"awaiting approval: {listed['id']} of t-ask (command: " in seen["status"]
    assert seen["slots_while_asking"] == 0  # FLT-5: the waiting run held no slot
    assert seen["approved"].returncode == 0, seen["approved"].stderr
    assert request.status == "approved" and request.answered_by == "person:ana"
    assert outside.exists()  # the approved command ran, outside the sandbox
    assert task.status == "completed" and task.result_text.startswith("after the request")
    kinds = [e.kind for e in events if e.task_id == "t-ask"]
    assert kinds.index("approval_requested") < kinds.index("approval_answered")
    answered = next(e for e in events if e.kind == "approval_answered")
    assert answered.details["status"] == "approved" and answered.details["id"] == listed["id"]


@pytest.mark.rule("APR-1", "FLT-5")
def test_an_unanswered_request_is_declined_at_its_timeout_and_the_agent_is_told_why(
    offline_codex, tmp_path: Path
) -> None:
    seen: dict[str, Any] = {}
    outside = tmp_path / "never.txt"
    offline_codex.fake.default_reply = None
    offline_codex.fake.reply_for = _asker(seen, f"touch {outside}")
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-ask", "[agent:asker] write a file outside")
        settings = settings_for(offline_codex, tmp_path, approval_timeout=1.0)
        run_host(WorkerHost(settings, store))
        task = store.get_task("t-ask")
        (request,) = store.list_approvals("p1")
    assert request.status == "expired" and request.answered_by == "expiry"
    assert not outside.exists()
    # the same turn went on: the agent read why, then ended its turn itself
    assert task.status == "completed" and task.result_text.startswith("after the request")
    told = "\n".join(seen["told"])
    assert f"declined: nobody answered approval request {request.id} within 1 s" in told, told[-2000:]


@pytest.mark.rule("APR-2")
def test_a_project_rule_answers_without_anyone(offline_codex, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}
    offline_codex.fake.default_reply = None
    offline_codex.fake.reply_for = _asker(seen, "echo allowed-by-rule")
    with worker_store("sqlite", tmp_path) as store:
        store.add_approval_rule(
            ApprovalRule("r-1", "p1", "allow", "command", prefix=("echo", "allowed-by-rule"))
        )
        add_task(store, "t-ask", "[agent:asker] echo something")
        run_host(WorkerHost(settings_for(offline_codex, tmp_path, approval_timeout=60.0), store))
        task = store.get_task("t-ask")
        (request,) = store.list_approvals("p1")
    assert request.status == "approved" and request.answered_by == "rule:r-1"
    assert task.status == "completed" and "allowed-by-rule" in task.result_text


@pytest.mark.rule("WRK-3", "APR-1")
def test_approvals_decline_keeps_wrk3(offline_codex, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}
    offline_codex.fake.default_reply = None
    offline_codex.fake.reply_for = _asker(seen, "touch /tmp/x-never")
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-ask", "[agent:asker] write a file outside")
        run_host(WorkerHost(settings_for(offline_codex, tmp_path, approvals="decline"), store))
        task = store.get_task("t-ask")
        assert store.list_approvals("p1") == ()  # nothing stored: declined at once
    assert task.status == "interrupted"
    assert task.interrupted_reason.startswith("the agent asked for command approval (")
