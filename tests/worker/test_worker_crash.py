"""Hosts that die (kill -9) while their tasks run: leases expire, another host (or the
same one restarted) ends the orphaned app-server, requeues the task once with a ledger
row and runs it again with the resume preamble; the killed turn never applies (WRK-6).
Three hosts on PostgreSQL with one killed: every task runs to its end once."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.worker import (
    add_task,
    read_events_until,
    routed,
    run_host,
    settings_for,
    slow_plan_then_resumed,
    worker_process,
    worker_store,
)

from markertools_adapters._procgroups import group_alive
from markertools_adapters.codex.fakemodel import Text
from markertools_adapters.worker import HostEvent, WorkerHost


def _host(codex: Any, tmp_path: Path, db: str, name: str, *extra: str) -> subprocess.Popen[str]:
    return worker_process(codex.env, tmp_path, db, name, "--codex-bin", codex.binary, extra=extra)


@pytest.mark.rule("WRK-6")
def test_kill_9_of_a_host_mid_turn_requeues_once_and_ends_the_orphan(
    offline_codex, tmp_path: Path
) -> None:
    router = routed(offline_codex)
    router.on("crash", slow_plan_then_resumed)
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-crash", "[agent:crash] plan it")
        proc = _host(offline_codex, tmp_path, str(tmp_path / "w.db"), "h1")
        try:
            started = read_events_until(proc, "turn_started")[-1]
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        orphan = started["pgid"]
        assert group_alive(orphan)  # the app-server outlived its host
        events: list[HostEvent] = []
        host = WorkerHost(
            settings_for(offline_codex, tmp_path, lease_seconds=1.0, affinity_seconds=60.0),
            store,
            sinks=[events.append],
        )
        run_host(host)
        assert not group_alive(orphan)
        kinds = [(e.kind, e.task_id) for e in events]
        assert ("lease_expired", "t-crash") in kinds and ("requeued", "t-crash") in kinds
        task = store.get_task("t-crash")
        assert task.status == "completed"
        assert task.result_text == "finished on the second attempt"
        (attempt,) = store.list_attempts("t-crash")
        assert attempt.kind == "platform_fresh" and task.auto_resume_count == 1
        first = [last for name, last in router.calls if name == "crash"][-1]
        assert "Resume notice" in first and "[agent:crash] plan it" in first
        # the killed turn's task-create never applied
        assert [t.id for t in store.list_tasks("p1", status=None, q=None, limit=9).rows] == [
            "t-crash"
        ]


@pytest.mark.rule("WRK-6")
def test_three_hosts_on_postgres_one_killed_every_task_runs_once(
    offline_codex, tmp_path: Path
) -> None:
    router = routed(offline_codex)
    router.on("job", lambda last, texts: Text("job done", delay=0.2))
    with worker_store("postgres", tmp_path) as store:
        for n in range(30):
            add_task(store, f"t-{n:02d}", f"[agent:job] job {n}", created_at=float(n))
        url = f"{store.dsn}{'&' if '?' in store.dsn else '?'}options=-csearch_path%3D{store.schema_name}"
        common = ("--until-idle", "--affinity-seconds", "1", "--max-concurrent", "3")
        hosts = {
            name: _host(offline_codex, tmp_path, url, name, *common) for name in ("h1", "h2", "h3")
        }
        try:
            read_events_until(hosts["h2"], "turn_started")
            hosts["h2"].send_signal(signal.SIGKILL)
            for name in ("h1", "h3"):
                _, err = hosts[name].communicate(timeout=240)
                assert hosts[name].returncode == 0, err
        finally:
            for proc in hosts.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        tasks = store.list_tasks("p1", status=None, q=None, limit=100).rows
        assert len(tasks) == 30 and {t.status for t in tasks} == {"completed"}
        for task in tasks:  # each turn ran to its end once: one cost row each
            assert len(store.task_costs(task.id)) == 1, task.id
        requeued = [t for t in tasks if t.auto_resume_count]
        assert requeued and all(len(store.list_attempts(t.id)) == 1 for t in requeued)
