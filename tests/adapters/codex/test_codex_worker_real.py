"""examples/codex_worker.py on the real pinned Codex CLI against the fake Responses
server (issue 27 items 1 and 2): each turn is delivered under Codex's own turn id, the
next input is what the task's queue hands out, and delivering a turn again with the same
Codex turn id replays it - while other text under that id is refused."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from support.codex import OfflineCodex
from support.paths import REPO

import markertools_adapters
from markertools import TurnIdReused, deliver_turn
from markertools.domain.model import PermissionGrant, Project, Task
from markertools_adapters.codex.fakemodel import Text
from markertools_adapters.world import World

CREATE = '```todo-create\n{"title": "Review the docs"}\n```'


def _load_example() -> ModuleType:
    path = REPO / "examples" / "codex_worker.py"
    spec = importlib.util.spec_from_file_location("codex_worker_real", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["codex_worker_real"] = module
    spec.loader.exec_module(module)
    return module


def _store() -> Any:
    store = markertools_adapters.connect("sqlite:///:memory:", executor="noop")
    store.load_world(
        World(
            now=1_798_333_200,
            projects=(Project("p1", "shop"),),
            permissions=(PermissionGrant("u1", "p1", ("read", "create_task")),),
            tasks=(Task("t1", "p1", status="queued", created_by="u1", prompt="lead"),),
        )
    )
    return store


@pytest.mark.rule("TRN-9", "TRN-6")
def test_the_codex_worker_delivers_under_codexs_turn_ids(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    worker = _load_example()
    offline_codex.fake.push(Text("I will track it.\n\n" + CREATE), Text("All done."))
    env = [f"{k}={v}" for k, v in offline_codex.env.items()]
    argv = ["env", "-i", *env, offline_codex.binary, "app-server"]
    store = _store()
    claim = worker.claim_next(store, "p1", "h1")
    result = worker.run_worker(
        argv,
        store=store,
        claim=claim,
        inputs=["Track the docs review"],
        max_turns=4,
        turn_timeout=60,
        request_timeout=60,
        thread_params={"cwd": str(offline_codex.home), "sandbox": "read-only"},
    )
    assert result.stopped == "no_blocks", result.stopped
    assert [t.status for t in result.turns] == ["completed", "completed"]
    first, second = result.reports
    assert [e.outcome for e in first.entries] == ["done"] and second.entries == ()
    assert second.queued_followups == ()  # a zero-block turn queues nothing
    # the second turn's input was exactly what the queue handed out: the first report
    assert result.inputs == [["Track the docs review"], [first.message]]
    bodies = [str(r.body) for r in offline_codex.fake.responses_requests()]
    assert any("markertools report: 1 block(s)" in body for body in bodies)  # the model saw it
    assert store.take_followups("t1") == ()
    # each turn was journalled under the turn id Codex gave it
    turn_ids = [t.turn_id for t in result.turns]
    assert all(turn_ids) and len(set(turn_ids)) == 2
    assert all(store.block_entries("t1", tid) for tid in turn_ids)
    assert result.finished.status == "completed"  # the agent asked for nothing more
    # the worker crashed and delivers the first turn again: a replay, nothing twice
    ports = store.ports
    replay = deliver_turn(
        result.turns[0].text, sender="t1", outcome="completed", ports=ports, turn_id=turn_ids[0]
    )
    assert replay.replayed and replay.entries == first.entries
    assert len(store.export_world(0).todos) == 1
    # ...and that turn id can not be given other text
    with pytest.raises(TurnIdReused, match=f"turn id {turn_ids[0]!r} of sender 't1'"):
        deliver_turn(CREATE, sender="t1", outcome="completed", ports=ports, turn_id=turn_ids[0])
    assert len(store.export_world(0).todos) == 1
