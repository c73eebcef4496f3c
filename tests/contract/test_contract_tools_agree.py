"""TOL-9 as a property, on the memory, SQLite and PostgreSQL stores: the same random
sequence of operations, delivered once as the blocks of one turn and once as tool calls
(`deliver_call`) in the same order, leaves the same world and the same report entries.

Operations are drawn in execution order (TRN-1), so the blocks run in the order the calls
are made; the per-turn caps count both the same way (TOL-4). What may differ by design is
normalised: a call has no line in a turn's text (its entry's line is 0, and "line N" in a
reason or a cancel note reads "line ?" on both sides), an audit record says where it came
from (`source`), and a turn of blocks queues its report before the "/goal" follow-up
while a call holds that follow-up until its turn's report (TOL-7) - so the held one is
released and the report left out before the follow-ups are compared."""

from __future__ import annotations

import contextlib
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markertools import Task, deliver_call, deliver_turn
from markertools.domain.model import PermissionGrant, Project, Quota, Todo
from markertools.parse.kinds import EXEC_ORDER
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

from .conftest import STORE_FACTORIES

NOW = 1_798_333_200.0
IDS = ("t1", "t2", "t3", "t4", "missing")
LINE = re.compile(r"line \d+|第 ?\d+ ?行")


def _world() -> World:
    def task(tid: str, status: str, **kw: Any) -> Task:
        return Task(tid, "p1", status=status, created_by="u1", created_at=float(len(tid)), **kw)

    return World(
        now=NOW,
        projects=(Project("p1", "shop"),),
        permissions=(PermissionGrant("u1", "p1", ("read", "create_task", "approve_merge")),),
        quotas=(Quota("u1", 10, 1),),
        tasks=(
            task("t1", "running", turn=1),
            task("t2", "completed", parent_task_id="t1", result_text="done"),
            task("t3", "running", parent_task_id="t1"),
            task("t4", "failed", parent_task_id="t1", error_text="boom"),
        ),
        todos=(Todo("d1", "p1", "first", created_at=1.0),),
    )


targets = st.sampled_from(IDS)
texts = st.sampled_from(["fix it", "写文档", "x" * 30])
operation = st.one_of(
    st.builds(lambda p: ("task-create", {"prompt": p}), texts),
    st.builds(lambda p: ("task-create", {"prompt": p, "effort": "huge"}), texts),  # skipped
    st.builds(lambda t: ("task-poll", {"task_id": t, "timeout_seconds": 0}), targets),
    st.builds(lambda t: ("task-cancel", {"task_id": t}), targets),
    st.builds(lambda t: ("task-retry", {"task_id": t}), targets),
    st.builds(lambda t: ("task-cost", {"task_id": t}), targets),
    st.builds(
        lambda ts: ("wait-threads", {"task_ids": ts, "timeout_seconds": 0}),
        st.lists(targets, min_size=1, max_size=3, unique=True),
    ),
    st.just(("task-list", {})),
    st.just(("todo-list", {})),
    st.just(("quota-status", {})),
    st.builds(lambda t: ("todo-create", {"title": t}), texts),
    st.builds(
        lambda s: ("todo-update", {"id": "d1", "status": s}),
        st.sampled_from(["in_progress", "completed", "nope"]),
    ),
    st.builds(lambda g: ("goal-convert", {"goal": g}), texts),
    st.just(("task-poll", {"task_id": 5})),  # skipped: a wrong type
)
operations = st.lists(operation, min_size=1, max_size=8).map(
    lambda ops: sorted(ops, key=lambda op: EXEC_ORDER[op[0]])  # stable: TRN-1 order
)


def _ports(store: Any) -> Any:
    return store_ports(
        store, clock=VirtualClock(NOW), random=SeededRandom(5), executor=NoopExecutor()
    )


def _as_turn(ops: list[tuple[str, dict[str, Any]]]) -> str:
    return "\n\n".join(
        f"```{kind}\n{json.dumps(args, ensure_ascii=False)}\n```" for kind, args in ops
    )


def _norm(text: object) -> object:
    return LINE.sub("line ?", text) if isinstance(text, str) else text


def _entries(entries: Any) -> list[tuple[object, ...]]:
    return sorted(
        (e.kind, e.outcome, e.target, _norm(e.reason.render("en")), e.count) for e in entries
    )


def _state(store: Any, drop_report: bool) -> dict[str, Any]:
    world = store.export_world(NOW)
    followups = [f.text for f in world.followups]
    if drop_report:
        followups = [t for t in followups if not t.startswith("markertools report")]
    return {
        "tasks": [
            attrs.evolve(t, interrupted_reason=_norm(t.interrupted_reason)) for t in world.tasks
        ],
        "todos": world.todos,
        "automations": world.automations,
        "quotas": world.quotas,
        "costs": world.costs,
        "followups": followups,
        "audit": [
            (a.sender, a.kind, a.target, a.outcome, _norm(a.reason), a.time) for a in world.audit
        ],
    }


@contextlib.contextmanager
def _store(name: str) -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        store = STORE_FACTORIES[name](_world(), Path(tmp) / "s")
        try:
            yield store
        finally:
            store.close()


@pytest.mark.rule("TOL-9", "TOL-2", "TOL-4")
@pytest.mark.parametrize("name", ["memory", "sqlite", "postgres"])
def test_blocks_and_calls_leave_the_same_world_and_entries(name: str) -> None:
    examples = 15 if name == "postgres" else 40

    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        derandomize=True,
    )
    @given(ops=operations)
    def agree(ops: list[tuple[str, dict[str, Any]]]) -> None:
        with _store(name) as by_block, _store(name) as by_call:
            report = deliver_turn(
                _as_turn(ops), sender="t1", outcome="completed", ports=_ports(by_block)
            )
            assert report.delivered and len(report.entries) == len(ops)
            ports = _ports(by_call)
            results = [deliver_call(kind, args, sender="t1", ports=ports) for kind, args in ops]
            by_call.release_held_followups("t1")
            assert _entries(report.entries) == _entries(r.entry for r in results)
            assert _state(by_block, drop_report=True) == _state(by_call, drop_report=False)
            assert {a.source for a in by_call.export_world(NOW).audit} <= {"tool"}
            assert {a.source for a in by_block.export_world(NOW).audit} <= {"block"}

    agree()
