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
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli
from support.worker import (
    TAG,
    add_task,
    read_events_until,
    run_host,
    settings_for,
    worker_process,
    worker_store,
)

from markertools import ApprovalRule
from markertools_adapters.codex.fakemodel import (
    ShellCall,
    Text,
    ToolCall,
    request_texts,
)
from markertools_adapters.worker import HostEvent, WorkerHost


def _outputs(body: Any) -> list[str]:
    found: list[str] = []
    for item in body.get("input") or [] if isinstance(body, dict) else []:
        if isinstance(item, dict) and item.get("type") in ("function_call_output",
                                                           "custom_tool_call_output"):
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


def _person(db: str, seen: dict[str, Any], *answer: str) -> threading.Thread:
    """A person in another process: waits for the request to be listed, then runs
    `markertools approvals ANSWER ID --db DB ...`."""

    def act() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            listed = cli("approvals", "list", "--db", db, "--json")
            found = json.loads(listed.stdout)["approvals"] if listed.returncode == 0 else []
            if found:
                seen["listed"] = found
                seen["answered"] = cli("approvals", answer[0],
                                       found[0]["id"], "--db", db, *answer[1:])
                return
            time.sleep(0.1)

    return threading.Thread(target=act)


@pytest.mark.rule("APR-1", "APR-3")
def test_a_person_denies_and_the_agent_is_told_why_and_goes_on(
    offline_codex, tmp_path: Path
) -> None:
    seen: dict[str, Any] = {}
    outside = tmp_path / "denied.txt"
    offline_codex.fake.default_reply = None
    offline_codex.fake.reply_for = _asker(seen, f"touch {outside}")
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-ask", "[agent:asker] write a file outside")
        person = _person(str(tmp_path / "w.db"), seen, "deny", "--by", "ana", "--reason",
                         "writes stay inside the task directory")
        person.start()
        run_host(WorkerHost(settings_for(offline_codex, tmp_path), store))
        person.join(60)
        task = store.get_task("t-ask")
        (request,) = store.list_approvals("p1")
        again = cli("approvals", "approve", request.id, "--db", str(tmp_path / "w.db"))
    assert seen["answered"].returncode == 0, seen["answered"].stderr
    assert request.status == "denied" and request.answered_by == "person:ana"
    assert not outside.exists()  # the denied command never ran
    told = "\n".join(seen["told"])
    assert "denied by person:ana: writes stay inside the task directory" in told, told[-2000:]
    # the agent went on in the same turn and ended it itself
    assert task.status == "completed" and task.result_text.startswith("after the request")
    # a second answer is refused, naming the first
    assert again.returncode == 2
    assert f"approval request {request.id}" in again.stderr and "denied" in again.stderr


@pytest.mark.rule("APR-2")
def test_a_deny_rule_refuses_unasked_and_a_chained_command_never_matches_an_allow_rule(
    offline_codex, tmp_path: Path
) -> None:
    """The deny rule answers `rm` at once; `echo hi; touch ...` is not an `echo` as far
    as the allow rule goes (nor an `rm`), so it waits - and nobody answers it."""
    seen: dict[str, Any] = {}
    victim, chained = tmp_path / "keep.txt", tmp_path / "chained.txt"
    victim.write_text("keep me")

    def reply_for(body: Any) -> Any:
        agent, outs = _agent(body), _outputs(body)
        seen.setdefault(agent, []).append(request_texts(body))
        if agent == "remover" and not outs:
            return ShellCall(f"rm -f {victim}", escalate=True, justification="clean up")
        if agent == "chainer" and not outs:
            return ShellCall(f"echo hi; touch {chained}", escalate=True, justification="echo")
        return Text("after the request: " + (outs[-1][-200:] if outs else ""))

    offline_codex.fake.default_reply = None
    offline_codex.fake.reply_for = reply_for
    with worker_store("sqlite", tmp_path) as store:
        store.add_approval_rule(ApprovalRule("r-echo", "p1", "allow", "command", prefix=("echo",)))
        store.add_approval_rule(ApprovalRule("r-rm", "p1", "deny", "command", prefix=("rm",)))
        add_task(store, "t-rm", "[agent:remover] remove a file outside")
        add_task(store, "t-chain", "[agent:chainer] echo, then touch")
        settings = settings_for(offline_codex, tmp_path, approval_timeout=1.0)
        run_host(WorkerHost(settings, store))
        requests = {r.task_id: r for r in store.list_approvals("p1")}
        tasks = {t: store.get_task(t) for t in ("t-rm", "t-chain")}
    assert requests["t-rm"].status == "denied"
    assert requests["t-rm"].answered_by == "rule:r-rm"
    assert requests["t-chain"].status == "expired"  # the allow rule never matched it
    assert requests["t-chain"].answered_by == "expiry"
    assert victim.read_text() == "keep me" and not chained.exists()
    told_rm = "\n".join(seen["remover"][-1])
    assert 'denied by the project\'s rule r-rm (deny commands starting with "rm")' in told_rm, (
        told_rm[-2000:]
    )
    told_chain = "\n".join(seen["chainer"][-1])
    expired = requests["t-chain"].id
    assert f"declined: nobody answered approval request {expired} within 1 s" in told_chain
    assert all(t.status == "completed" for t in tasks.values())


def _worker_run(codex: Any, tmp_path: Path, db: str, host: str, *extra: str) -> subprocess.Popen[str]:
    return worker_process(codex.env, tmp_path, db, host, "--codex-bin", codex.binary, extra=extra)


@pytest.mark.rule("APR-5", "WRK-6")
def test_kill_9_of_the_host_while_a_request_is_pending(offline_codex, tmp_path: Path) -> None:
    """The request outlives its host; the requeue expires it naming why, and the next
    attempt's first input names the request it never got an answer to."""
    seen: dict[str, Any] = {}
    outside = tmp_path / "never.txt"

    def reply_for(body: Any) -> Any:
        texts = request_texts(body)
        if _agent(body) != "asker":
            return Text("other")
        if any("Resume notice" in t for t in texts):
            seen["resumed"] = texts
            return Text("resumed without the command")
        return ShellCall(f"touch {outside}", escalate=True, justification="I need to write outside")

    offline_codex.fake.default_reply = None
    offline_codex.fake.reply_for = reply_for
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-ask", "[agent:asker] write a file outside")
        proc = _worker_run(offline_codex, tmp_path, str(tmp_path / "w.db"), "h1")
        try:
            asked = read_events_until(proc, "approval_requested")[-1]
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        pending = store.get_approval(asked["id"])
        assert pending is not None and pending.status == "pending"  # it survived the crash
        events: list[HostEvent] = []
        host = WorkerHost(
            # another host takes it over at once (no affinity for the dead one)
            settings_for(offline_codex, tmp_path, host="h2", lease_seconds=1.0, affinity_seconds=0.0),
            store,
            sinks=[events.append],
        )
        run_host(host)
        request = store.get_approval(asked["id"])
        task = store.get_task("t-ask")
        (attempt,) = store.list_attempts("t-ask")
    assert request.status == "expired" and request.answered_by == "requeue"
    assert attempt.kind == "platform_fresh" and "h1" in (attempt.interrupted_reason or "")
    first = "\n".join(seen["resumed"])
    assert "the previous attempt was waiting for an answer to 1 approval request(s)" in first
    assert request.id in first and f"touch {outside}" in first
    assert task.status == "completed" and task.result_text == "resumed without the command"
    assert not outside.exists()


@pytest.mark.rule("APR-1", "APR-3")
def test_two_hosts_on_postgres_the_answer_reaches_the_host_that_runs_the_task(
    offline_codex, tmp_path: Path
) -> None:
    """Two `worker run` processes share one PostgreSQL schema; a person answers from a
    third process; the host that holds the task hears it (LISTEN/NOTIFY) and the command
    runs in the same turn. (How fast: bench/bench_approvals.py.)"""
    seen: dict[str, Any] = {}
    outside = tmp_path / "approved.txt"
    offline_codex.fake.default_reply = None
    offline_codex.fake.reply_for = _asker(seen, f"touch {outside}")
    with worker_store("postgres", tmp_path) as store:
        db = f"{store.dsn}?options=-csearch_path%3D{store.schema_name}"
        add_task(store, "t-ask", "[agent:asker] write a file outside")
        hosts = [
            _worker_run(offline_codex, tmp_path, db, name, "--until-idle", "--approval-timeout", "120")
            for name in ("h1", "h2")
        ]
        person = _person(db, seen, "approve", "--by", "ana")
        person.start()
        logs = []
        try:
            for proc in hosts:
                out, err = proc.communicate(timeout=120)
                assert proc.returncode == 0, err
                logs.append([json.loads(line) for line in out.splitlines()])
        finally:
            for proc in hosts:
                if proc.poll() is None:
                    proc.kill()
        person.join(60)
        task = store.get_task("t-ask")
        (request,) = store.list_approvals("p1")
    runner = [log for log in logs if any(e["event"] == "claimed" for e in log)]
    assert len(runner) == 1  # one host ran the task; the other never claimed it
    answered = [e for e in runner[0] if e["event"] == "approval_answered"]
    assert [(e["id"], e["status"], e["answered_by"]) for e in answered] == [
        (request.id, "approved", "person:ana")
    ]
    assert request.status == "approved" and outside.exists()
    assert task.status == "completed" and task.result_text.startswith("after the request")


@pytest.mark.rule("APR-1")
def test_a_file_change_outside_the_directory_is_a_request_with_paths_and_a_diff_summary(
    offline_codex, tmp_path: Path
) -> None:
    """The agent's `apply_patch` adds a file outside its directory: Codex asks; the
    stored request names the path and what the change does; approved, the file exists."""
    seen: dict[str, Any] = {}
    outside = tmp_path / "outside" / "notes.txt"
    outside.parent.mkdir()
    patch = f"*** Begin Patch\n*** Add File: {outside}\n+first line\n+second line\n*** End Patch\n"

    def reply_for(body: Any) -> Any:
        if _agent(body) != "patcher":
            return Text("other")
        if not _outputs(body):
            return ToolCall("apply_patch", patch, custom=True)
        return Text("patched: " + _outputs(body)[-1][-200:])

    offline_codex.fake.default_reply = None
    offline_codex.fake.reply_for = reply_for
    db = str(tmp_path / "w.db")
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-patch", "[agent:patcher] add notes outside")
        person = _person(db, seen, "approve", "--by", "ana")
        person.start()
        run_host(WorkerHost(settings_for(offline_codex, tmp_path), store))
        person.join(60)
        task = store.get_task("t-patch")
        (request,) = store.list_approvals("p1")
    (listed,) = seen["listed"]
    assert listed["kind"] == "file_change" and listed["paths"] == [str(outside)]
    assert request.diff_summary == f"add {outside} (+2 lines)"
    assert request.status == "approved" and outside.read_text() == "first line\nsecond line\n"
    assert task.status == "completed" and task.result_text.startswith("patched")
