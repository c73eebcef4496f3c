"""examples/codex_worker.py end to end against a scripted stand-in app-server process
(tests/fixtures/codex/fake_app_server.py), and the stand-in against the upstream schemas."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from support.paths import REPO
from support.strategies.codex import FIXTURES, validate_notification

import markertools_adapters
from markertools import StartKind, TaskChange
from markertools.domain.model import PermissionGrant, Project, Task
from markertools_adapters.codex import read_app_server_stream
from markertools_adapters.world import World

ROOT = REPO
FAKE = FIXTURES / "fake_app_server.py"

CREATE = '```task-create\n{"prompt": "Write the docs", "name": "docs"}\n```'
TODO = '```todo-create\n{"title": "Review the docs"}\n```'


def _load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("codex_worker", ROOT / "examples/codex_worker.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["codex_worker"] = module
    spec.loader.exec_module(module)
    return module


worker = _load_example()


def _script(tmp_path: Path, *turns: dict[str, Any]) -> list[str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": list(turns)}))
    return [sys.executable, str(FAKE), str(script), str(tmp_path / "log.jsonl")]


def _log(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "log.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _world() -> World:
    return World(
        now=1_798_333_200,
        projects=(Project("p1", "shop"),),
        permissions=(PermissionGrant("u1", "p1", ("read", "create_task")),),
        tasks=(Task("t1", "p1", status="queued", created_by="u1", prompt="lead"),),
    )


def _store() -> Any:
    store = markertools_adapters.connect("sqlite:///:memory:", executor="noop")
    store.load_world(_world())
    return store


def _run(argv: list[str], store: Any = None, prompt: str = "go", **options: Any) -> Any:
    """The example's worker over `store` (default: a fresh one): it claims t1 with a lease
    and runs it from `prompt`, 5 turns, 60 s timeouts unless `options` say otherwise."""
    settings: dict[str, Any] = {
        "max_turns": 5,
        "turn_timeout": 60,
        "request_timeout": 60,
        **options,
    }
    store = _store() if store is None else store
    claim = worker.claim_next(store, "p1", "h1")
    assert claim is not None and claim.task.id == "t1"
    return worker.run_worker(argv, store=store, claim=claim, inputs=[prompt], **settings)


# ---- the stand-in speaks the protocol ---------------------------------------------------


def test_standin_output_validates_against_upstream_schemas(tmp_path: Path) -> None:
    argv = _script(
        tmp_path,
        {"messages": ["Starting.", CREATE], "approval": True},
        {"messages": ["partial"], "status": "failed", "error": "boom"},
    )
    requests = [
        {"method": "initialize", "id": 1, "params": {"clientInfo": {"name": "t", "version": "1"}}},
        {"method": "initialized"},
        {"method": "thread/start", "id": 2, "params": {}},
        {
            "method": "turn/start",
            "id": 3,
            "params": {"threadId": "thr_1", "input": [{"type": "text", "text": "go"}]},
        },
        {"id": 1001, "result": {"decision": "decline"}},  # answers the approval request
        {
            "method": "turn/start",
            "id": 4,
            "params": {"threadId": "thr_1", "input": [{"type": "text", "text": "again"}]},
        },
    ]
    out = subprocess.run(
        argv,
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    messages = [json.loads(x) for x in out.splitlines()]
    assert sum(validate_notification(m) for m in messages) >= 15
    assert any(m.get("method") == "item/commandExecution/requestApproval" for m in messages)
    turns = read_app_server_stream([out]).turns
    assert [(t.status, t.text, t.error) for t in turns] == [
        ("completed", "Starting.\n\n" + CREATE, None),
        ("failed", "partial", "boom"),
    ]


# ---- the worker ------------------------------------------------------------------------


@pytest.mark.rule("TRN-3", "TRN-6")
def test_worker_delivers_each_completed_turn_and_sends_the_report_back(tmp_path: Path) -> None:
    store = _store()
    argv = _script(
        tmp_path,
        {"messages": ["I will split the work.", CREATE], "approval": True},
        {"messages": [TODO]},
    )
    result = _run(argv, store, prompt="Split the work")
    assert result.stopped == "child_exited"  # the script ended: the server went away
    assert result.exit_code == 0
    assert result.finished.status == "failed"  # finished under the claim, with the cause
    assert store.get_task("t1").error_text == "codex_worker stopped: child_exited"
    assert [t.status for t in result.turns] == ["completed", "completed"]
    assert [r.delivered for r in result.reports] == [True, True]
    assert [e.kind for r in result.reports for e in r.entries] == ["task-create", "todo-create"]
    assert [e.outcome for r in result.reports for e in r.entries] == ["done", "done"]

    world = store.export_world(now=_world().now)
    child = [t for t in world.tasks if t.parent_task_id == "t1"]
    assert [t.prompt for t in child] == ["Write the docs"]
    assert [d.title for d in world.todos] == ["Review the docs"]

    # each report went back as the next turn/start input, in order
    log = _log(tmp_path)
    sent = [
        [i["text"] for i in m["params"]["input"]] for m in log if m.get("method") == "turn/start"
    ]
    assert sent == [
        ["Split the work"],
        list(result.reports[0].queued_followups),
        list(result.reports[1].queued_followups),
    ]
    assert sent[1] == [result.reports[0].message]
    # what was sent came off the queue: a later claim of t1 is handed nothing stale
    assert store.take_followups("t1") == ()
    # each turn was journalled under Codex's own turn id (TRN-9)
    for turn in result.turns:
        assert store.block_entries("t1", turn.turn_id)
    # the approval request was answered (declined), the handshake was complete
    assert {"id": 1001, "result": {"decision": "decline"}} in log
    assert [m.get("method") for m in log[:3]] == ["initialize", "initialized", "thread/start"]


@pytest.mark.rule("TRN-3", "TRN-6", "INJ-1")
def test_worker_stops_at_max_turns_and_the_unsent_report_waits_for_the_next_claim(
    tmp_path: Path,
) -> None:
    store = _store()
    todo = '```todo-create\n{{"title": "step {}"}}\n```'
    argv = _script(tmp_path, *({"messages": [todo.format(i)]} for i in range(5)))
    result = _run(argv, store, max_turns=2)
    assert result.stopped == "max_turns"
    assert len(result.turns) == 2
    assert sum(m.get("method") == "turn/start" for m in _log(tmp_path)) == 2
    # the second report was never sent: it stays queued, the task is queued again, and
    # its next claim continues with exactly it - the first one (sent) is never handed
    # out again
    assert result.finished.status == "queued"
    claim = store.claim_task("p1", "host-1")
    assert claim.start is StartKind.CONTINUATION
    assert claim.followups == (result.reports[1].message,)
    assert store.take_followups("t1") == ()


@pytest.mark.rule("TRN-3")
def test_worker_never_delivers_an_interrupted_turn(tmp_path: Path) -> None:
    store = _store()
    argv = _script(tmp_path, {"messages": [CREATE], "status": "interrupted"}, {"messages": ["x"]})
    result = _run(argv, store)
    assert result.stopped == "not_delivered"
    assert [r.delivered for r in result.reports] == [False]
    assert result.finished.status == "interrupted"  # as the turn ended
    world = store.export_world(now=_world().now)
    assert [t.id for t in world.tasks] == ["t1"]  # the task-create never ran
    assert [a.outcome for a in world.audit] == ["discarded"]


def test_worker_survives_a_server_that_dies_at_once(tmp_path: Path) -> None:
    result = _run(
        [sys.executable, "-c", "import sys; sys.exit(3)"], max_turns=3, request_timeout=30
    )
    assert (result.stopped, result.exit_code, result.turns) == ("child_exited", 3, [])


def test_worker_reports_a_refused_request(tmp_path: Path) -> None:
    server = (
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if 'id' in m:\n"
        "        print(json.dumps({'id': m['id'], 'error': {'code': -32600, 'message': 'nope'}}),"
        " flush=True)\n"
    )
    result = _run([sys.executable, "-c", server], max_turns=3, request_timeout=30)
    assert result.stopped.startswith("error: initialize") and "nope" in result.stopped


def test_worker_stops_when_a_turn_has_no_blocks(tmp_path: Path) -> None:
    argv = _script(
        tmp_path, {"messages": [TODO]}, {"messages": ["All done."]}, {"messages": [TODO]}
    )
    result = _run(argv)
    assert result.stopped == "no_blocks"
    assert [len(r.entries) for r in result.reports] == [1, 0]
    assert sum(m.get("method") == "turn/start" for m in _log(tmp_path)) == 2
    assert result.finished.status == "completed"  # the agent asked for nothing more


@pytest.mark.rule("FLT-1")
def test_worker_stands_down_when_its_claim_was_lost(tmp_path: Path) -> None:
    """The task was requeued and claimed by another host before this worker's first
    turn: it starts no turn and writes nothing."""
    store = _store()
    claim = worker.claim_next(store, "p1", "h1")
    assert store.transition_task("t1", "running", TaskChange(status="queued"))
    other = store.claim_task("p1", "h2", now=claim.task.created_at + 1, lease_seconds=60)
    assert other is not None and other.epoch > claim.epoch
    argv = _script(tmp_path, {"messages": [TODO]})
    result = worker.run_worker(argv, store=store, claim=claim, inputs=["go"], request_timeout=60)
    assert (result.stopped, result.turns, result.finished) == ("lease_lost", [], None)
    assert not any(m.get("method") == "turn/start" for m in _log(tmp_path))
    assert store.get_task("t1").host == "h2" and store.get_task("t1").status == "running"
