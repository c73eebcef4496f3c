"""Fleet safety with real processes on the real Codex CLI (offline), SQLite and PostgreSQL:

- FLT-1: a host paused (SIGSTOP) past its lease comes back after another host took its
  task over: it writes nothing for the task, logs `lease_lost`, and the task completes
  once, by the other host's attempt;
- FLT-2: a host killed (SIGKILL) at every store write of a delivery: after recovery the
  world equals one clean run - exactly one child - and the resumed agent's first input
  names the child it already created;
- FLT-5: with one run slot, a root that creates two children and waits for them
  finishes with both results, no wait timing out; three such roots on two slots too."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from support.fleet import (
    killswitch_env,
    postgres_url,
    start_host,
    world_picture,
)
from support.worker import add_task, block, routed, run_host, settings_for, worker_store

from markertools_adapters.codex.fakemodel import Text
from markertools_adapters.worker import HostEvent, WorkerHost

STORES = ["sqlite", "postgres"]


def _db(kind: str, store: Any, tmp_path: Path) -> str:
    return str(tmp_path / "w.db") if kind == "sqlite" else postgres_url(store)


# ---- FLT-1: a paused host comes back -------------------------------------------------


@pytest.mark.rule("FLT-1", "FLT-2")
@pytest.mark.parametrize("kind", STORES)
def test_a_paused_host_comes_back_and_writes_nothing(
    offline_codex: Any, tmp_path: Path, kind: str
) -> None:
    router = routed(offline_codex)

    def slow(last: str, texts: list[str]) -> Text:
        if "Resume notice" in last:
            return Text("host B result", delay=4.0)
        return Text("host A result", delay=60.0)  # A is paused long before this ends

    router.on("slow", slow)
    with worker_store(kind, tmp_path) as store:
        add_task(store, "t-x", "[agent:slow] take your time")
        db = _db(kind, store, tmp_path)
        common = ("--until-idle", "--affinity-seconds", "0")
        a = start_host(offline_codex, tmp_path, db, "A", *common)
        b = None
        try:
            a.wait_for("turn_started", task_id="t-x")
            os.kill(a.proc.pid, signal.SIGSTOP)  # a long GC, a network split, ^Z
            b = start_host(offline_codex, tmp_path, db, "B", *common)
            b.wait_for("claimed", task_id="t-x", timeout=60)
            b.wait_for("turn_started", task_id="t-x", timeout=60)
            os.kill(a.proc.pid, signal.SIGCONT)  # A comes back in the middle of B's turn
            lost = a.wait_for("lease_lost", task_id="t-x", timeout=60)
            assert b.finish() == 0, b.stderr
            assert a.finish() == 0, a.stderr
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(a.proc.pid, signal.SIGCONT)
            for host in (a, b):
                if host is not None and host.proc.poll() is None:
                    host.proc.kill()
        task = store.get_task("t-x")
        assert (task.status, task.result_text, task.epoch) == ("completed", "host B result", 2)
        assert lost["epoch"] == 1
        # whichever A noticed first: its renewal, its cancel watch, or a refused write
        assert lost["reason"] in (
            "the lease of task t-x (claim 1) was not renewed: it expired and the task was"
            " requeued or taken by another host",
            "task t-x is held by claim 2 now (this host's claim 1 was taken over)",
            "lease lost: task 't-x' is no longer held by claim 1 (it is claim 2 now, running);"
            " nothing was written - stop this attempt and write nothing more for it",
        ), lost
        assert f"markertools worker run: warning: task t-x: {lost['reason']}" in a.stderr
        # A wrote nothing: it never finished the task, charged no cost, left no ledger row
        assert "finished" not in a.kinds("t-x")
        assert [r.tokens >= 0 for r in store.task_costs("t-x")] == [True]  # B's turn only
        (attempt,) = store.list_attempts("t-x")
        assert attempt.interrupted_reason.startswith("host A stopped renewing its lease")
        assert "host B requeued the task" in attempt.interrupted_reason
        # B's own attempt was never cut by a cancel or a lost lease
        assert "cancelled" not in b.kinds("t-x") and "lease_lost" not in b.kinds("t-x")


# ---- FLT-2: kill -9 at every store write of a delivery --------------------------------

CHILD = block(
    "task-create", json.dumps({"prompt": "[agent:kid] do the kid part", "name": "kid"})
)
TODO = block("todo-create", json.dumps({"title": "write the notes"}))
WAIT = block("wait-threads", json.dumps({"task_ids": ["@kid"], "timeout_seconds": 60}))


def _story(router: Any) -> None:
    def root(last: str, texts: list[str]) -> Text:
        if "the platform finished that delivery" in last:
            return Text("root done")  # the preamble told it what the turn did
        if "[agent:root]" in last:  # a first turn: plan
            return Text(f"Splitting it.\n\n{CHILD}\n{TODO}\n{WAIT}")
        return Text("root done")  # its report, or a wait's result

    router.on("root", root)
    router.on("kid", lambda last, texts: Text("kid done", delay=0.3))


def _recover(offline_codex: Any, tmp_path: Path, store: Any) -> list[HostEvent]:
    events: list[HostEvent] = []
    host = WorkerHost(
        settings_for(
            offline_codex,
            tmp_path,
            host="B",
            lease_seconds=1.0,
            affinity_seconds=0.0,
            max_concurrent=2,
        ),
        store,
        sinks=[events.append],
    )
    assert run_host(host, timeout=180) == 0
    return events


def _kill_points(total: int) -> list[int]:
    every = [*range(1, total + 1), *(-k for k in range(1, total + 1))]
    if os.environ.get("MARKERTOOLS_CRASH_POINTS") == "all":
        return every
    return every[::3]


@pytest.mark.rule("FLT-2", "WRK-6")
@pytest.mark.parametrize("kind", STORES)
def test_kill_9_at_every_store_write_of_a_delivery_hides_nothing(
    offline_codex: Any, tmp_path: Path, kind: str
) -> None:
    router = routed(offline_codex)
    _story(router)
    # one clean run: how many store writes the root's first delivery makes, and the world
    clean_dir = tmp_path / "clean"
    clean_dir.mkdir()
    count_file = tmp_path / "writes"
    with worker_store(kind, clean_dir) as store:
        add_task(store, "t-root", "[agent:root] plan the release")
        host = start_host(
            offline_codex,
            clean_dir,
            _db(kind, store, clean_dir),
            "A",
            "--until-idle",
            "--max-concurrent",
            "2",
            env=killswitch_env("t-root", 0, count_file),
        )
        assert host.finish(timeout=180) == 0, host.stderr
        clean = world_picture(store)
    total = int(count_file.read_text())
    assert total >= 5, total  # digest+pending, task-create, todo-create, awaited, report, ...
    assert clean["tasks"] == sorted(
        [
            ("[agent:root] plan the release", None, "completed", "root done"),
            ("[agent:kid] do the kid part", "[agent:root] plan the release", "completed", "kid done"),
        ]
    )
    assert clean["todos"] == ["write the notes"]

    for at in _kill_points(total):
        here = tmp_path / f"kill{at}"
        here.mkdir()
        with worker_store(kind, here) as store:
            add_task(store, "t-root", "[agent:root] plan the release")
            host = start_host(
                offline_codex,
                here,
                _db(kind, store, here),
                "A",
                "--max-concurrent",
                "2",
                env=killswitch_env("t-root", at),
            )
            code = host.finish(timeout=180)
            assert code == -signal.SIGKILL, (at, code, host.stderr)
            kids_before = [
                t for t in store.list_tasks("p1", status=None, q=None, limit=50).rows
                if t.parent_task_id == "t-root"
            ]
            calls_before = len(router.calls)
            _recover(offline_codex, here, store)
            assert world_picture(store) == clean, at  # one clean run: nothing twice
            if kids_before:  # the resumed agent's first input names the child it created
                (kid,) = kids_before
                resumed = [last for name, last in router.calls[calls_before:] if name == "root"]
                assert resumed and kid.id in resumed[0], (at, resumed[:1])
            assert store.pending_turns("t-root") == ()


# ---- FLT-5: no starvation ---------------------------------------------------------------


def _family(router: Any, kids: int) -> None:
    creates = "".join(
        block("task-create", json.dumps({"prompt": f"[agent:kid] part {n}", "name": f"k{n}"}))
        for n in range(kids)
    )
    wait = block(
        "wait-threads",
        json.dumps({"task_ids": [f"@k{n}" for n in range(kids)], "timeout_seconds": 300}),
    )

    def root(last: str, texts: list[str]) -> Text:
        if "[agent:root]" in last:
            return Text(f"Two parts.\n\n{creates}\n{wait}")
        return Text("root done: " + ("both finished" if last.count("kid done") >= kids else "??"))

    router.on("root", root)
    router.on("kid", lambda last, texts: Text("kid done", delay=0.5))


@pytest.mark.rule("FLT-5")
@pytest.mark.parametrize("kind", STORES)
def test_one_slot_a_root_waiting_for_two_children_finishes_with_their_results(
    offline_codex: Any, tmp_path: Path, kind: str
) -> None:
    router = routed(offline_codex)
    _family(router, 2)
    with worker_store(kind, tmp_path) as store:
        add_task(store, "t-root", "[agent:root] split it in two")
        events: list[HostEvent] = []
        host = WorkerHost(
            settings_for(offline_codex, tmp_path, max_concurrent=1, park_seconds=1.0),
            store,
            sinks=[events.append],
        )
        assert run_host(host, timeout=240) == 0
        root = store.get_task("t-root")
        assert (root.status, root.result_text) == ("completed", "root done: both finished")
        kids = [t for t in store.list_tasks("p1", status=None, q=None, limit=10).rows if t.parent_task_id]
        assert sorted(t.status for t in kids) == ["completed", "completed"]
        report = [last for name, last in router.calls if name == "root"][-1]
        assert "timed out" not in report and report.count("kid done") == 2
        kinds = [(e.kind, e.task_id) for e in events]
        assert ("waiting", "t-root") in kinds  # it gave its slot back while it waited
        # the children ran while the root waited: claimed after the root began waiting
        waited = kinds.index(("waiting", "t-root"))
        assert all(kinds.index(("claimed", t.id)) > waited for t in kids)


@pytest.mark.rule("FLT-5")
@pytest.mark.parametrize("kind", STORES)
def test_three_roots_with_two_children_each_on_two_slots_all_complete(
    offline_codex: Any, tmp_path: Path, kind: str
) -> None:
    router = routed(offline_codex)
    _family(router, 2)
    with worker_store(kind, tmp_path) as store:
        for n in range(3):
            add_task(store, f"t-root{n}", f"[agent:root] split job {n} in two")
        host = WorkerHost(
            settings_for(offline_codex, tmp_path, max_concurrent=2, park_seconds=1.0),
            store,
        )
        assert run_host(host, timeout=300) == 0
        tasks = store.list_tasks("p1", status=None, q=None, limit=50).rows
        assert len(tasks) == 9 and {t.status for t in tasks} == {"completed"}
        assert {t.result_text for t in tasks if t.id.startswith("t-root")} == {
            "root done: both finished"
        }


@pytest.mark.rule("FLT-5")
def test_a_long_wait_stops_the_idle_app_server_and_resumes_the_thread(
    offline_codex: Any, tmp_path: Path
) -> None:
    """An idle waiting task keeps no 130 MiB app-server past `park_seconds`: the root's
    app-server is gone while its child runs, and its next turn is in the same thread on
    a new one."""
    from markertools_adapters._procgroups import group_alive

    router = routed(offline_codex)
    kid = block("task-create", json.dumps({"prompt": "[agent:slowkid] take 4 s", "name": "k"}))
    wait = block("wait-threads", json.dumps({"task_ids": ["@k"], "timeout_seconds": 120}))
    router.on(
        "root",
        lambda last, texts: Text(f"{kid}\n{wait}") if "[agent:root]" in last else Text("root done"),
    )
    router.on("slowkid", lambda last, texts: Text("kid done", delay=4.0))
    seen: dict[str, Any] = {"root_groups": []}

    def sink(event: HostEvent) -> None:
        if event.kind == "turn_started" and event.task_id == "t-root":
            seen["root_groups"].append(event.details["pgid"])
            seen.setdefault("thread", store.get_task("t-root").thread_id)
        if event.kind == "turn_ended" and event.task_id != "t-root" and seen["root_groups"]:
            seen["root_alive_while_kid_ran"] = group_alive(seen["root_groups"][0])

    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-root", "[agent:root] wait for a slow child")
        events: list[HostEvent] = []
        host = WorkerHost(
            settings_for(offline_codex, tmp_path, max_concurrent=1, park_seconds=1.0),
            store,
            sinks=[events.append, sink],
        )
        assert run_host(host, timeout=180) == 0
        root = store.get_task("t-root")
        assert (root.status, root.result_text) == ("completed", "root done")
        kinds = [(e.kind, e.task_id) for e in events]
        assert ("parked", "t-root") in kinds
        assert seen["root_alive_while_kid_ran"] is False
        first, second = seen["root_groups"]
        assert first != second  # a new app-server ...
        assert root.thread_id is not None and root.thread_id == seen["thread"]  # same thread


@pytest.mark.rule("WRK-2")
def test_a_task_whose_directory_is_a_planted_link_fails_naming_it(
    offline_codex: Any, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-link", "[agent:any] work")
        (tmp_path / "worktrees" / "h1").mkdir(parents=True)
        (tmp_path / "worktrees" / "h1" / "t-link").symlink_to(outside)
        assert run_host(WorkerHost(settings_for(offline_codex, tmp_path), store)) == 0
        task = store.get_task("t-link")
        assert task.status == "failed"
        assert task.error_text.startswith(
            "the task's directory could not be prepared: the task directory"
        )
        assert "is a symbolic link (to" in task.error_text
        assert os.listdir(outside) == []
