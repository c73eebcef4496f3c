"""`markertools worker run` as a process: SIGTERM requeues a running task as a platform
interruption and a new host finishes it with the resume preamble (WRK-1); a missing
codex binary is one line and exit 2; `worker status` text and JSON (WRK-10)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from decimal import Decimal
from pathlib import Path

import pytest
from support.cli import EXE, cli, one_line_failure
from support.worker import add_task, routed, run_host, settings_for, worker_store

from markertools import Quota
from markertools_adapters.codex.fakemodel import Hang, Text
from markertools_adapters.worker import WorkerHost

ROOT = Path(__file__).resolve().parents[2]


def _host_process(codex, tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    env = dict(codex.env)
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    return subprocess.Popen(
        [
            str(EXE),
            "worker",
            "run",
            "--db",
            str(tmp_path / "w.db"),
            "--project",
            "p1",
            "--host",
            "h1",
            "--codex-bin",
            codex.binary,
            "--worktrees",
            str(tmp_path / "worktrees"),
            "--json-log",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _events_until(proc: subprocess.Popen[str], kind: str) -> list[dict]:
    seen: list[dict] = []
    assert proc.stdout is not None
    for line in proc.stdout:  # bounded: the process ends at the latest when the test kills it
        seen.append(json.loads(line))
        if seen[-1]["event"] == kind:
            return seen
    raise AssertionError(f"no {kind} event: {seen}")


@pytest.mark.rule("WRK-1")
def test_sigterm_requeues_the_running_task_and_a_new_host_finishes_it(
    offline_codex, tmp_path: Path
) -> None:
    router = routed(offline_codex)
    router.on("long", lambda last, texts: Hang())
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-long", "[agent:long] a long job")
        proc = _host_process(offline_codex, tmp_path, "--grace-seconds", "0.5")
        try:
            _events_until(proc, "turn_started")
            assert offline_codex.fake.hanging.wait(20)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0, err  # SIGTERM: a requested stop
        assert err.splitlines()[-1] == (
            "markertools worker h1 stopped (SIGTERM): ran 1 task - 1 requeued for the next"
            " host (t-long)"
        )
        events = [json.loads(line) for line in out.splitlines()]
        assert [e["event"] for e in events][-2:] == ["turn_ended", "requeued"]
        task = store.get_task("t-long")
        assert task.status == "queued"
        (attempt,) = store.list_attempts("t-long")
        assert attempt.kind == "platform_fresh"
        # a new host: the same task runs again from its prompt, with the resume preamble
        router.on("long", lambda last, texts: Text("finished after the restart"))
        run_host(WorkerHost(settings_for(offline_codex, tmp_path), store))
        task = store.get_task("t-long")
        assert task.status == "completed"
        assert task.result_text == "finished after the restart"
        first = [last for name, last in router.calls if name == "long"][-1]
        assert "[Resume notice: this task was restarted after a platform interruption]" in first
        assert "[agent:long] a long job" in first


@pytest.mark.rule("WRK-1")
def test_a_missing_codex_binary_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with worker_store("sqlite", tmp_path):
        pass
    done = cli(
        "worker",
        "run",
        "--db",
        str(tmp_path / "w.db"),
        "--project",
        "p1",
        "--codex-bin",
        str(tmp_path / "no-codex"),
    )
    one_line_failure(done, f"codex binary not found: {tmp_path / 'no-codex'}")


@pytest.mark.rule("WRK-10", "WRK-8")
def test_worker_status_text_and_json(tmp_path: Path) -> None:
    """One read of the store's fleet snapshot gives both: the JSON is
    `worker_status_json` of it (CLI.md), the text the same hosts, tasks and holds."""
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-1", "one")
        add_task(store, "t-2", "two")
        add_task(store, "t-3", "three")
        store.put_quota(Quota("bob", total_usd=Decimal("0.01"), used_usd=Decimal("0.02")))
        add_task(store, "t-held", "four", created_by="bob")
        store.claim_task("p1", "h1", now=time.time(), lease_seconds=600)  # t-1, leased
        store.claim_task("p1", "h2")  # t-2, by a worker that takes no lease
    done = cli("worker", "status", "--db", str(tmp_path / "w.db"), "--project", "p1", "--json")
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["tasks"] == {"queued": 2, "running": 2}
    (host,) = status["hosts"]  # the hosts holding a live lease
    assert host["host"] == "h1" and host["running"][0]["task_id"] == "t-1"
    assert host["running"][0]["turn"] == 1
    assert status["unleased"] == [
        {"task_id": "t-2", "host": "h2", "turn": 1, "started_at": None, "lease_expires_at": None}
    ]
    assert status["held_by_quota"] == [
        {
            "task_id": "t-held",
            "created_by": "bob",
            "reason": "held by quota: bob has spent $0.02 of $0.01; no host claims the task"
            " until the quota is raised",
        }
    ]
    text = cli("worker", "status", "--db", str(tmp_path / "w.db"), "--project", "p1").stdout
    lines = text.splitlines()
    assert lines[0] == "tasks: queued 2, running 2"
    assert re.fullmatch(r"host h1: 1 running, lease until \d\d:\d\d:\d\d", lines[1])
    assert re.fullmatch(r"  t-1: turn 1, running for \d+ s", lines[2])
    assert lines[3:] == [
        "no live lease: t-2 (turn 1) is running but no host holds it - host h2 claimed it"
        " without a lease; a `markertools worker run` host of its project requeues it after"
        " one lease period",
        "held by quota: t-held (creator bob has used $0.02 of a $0.01 quota)",
    ]


@pytest.mark.rule("WRK-10", "WRK-6")
def test_worker_status_flags_running_tasks_no_host_holds(tmp_path: Path) -> None:
    """Issue 36: the example world has three tasks written `running` that no host holds;
    `worker status` shows each as such, with what recovers it, in text and JSON."""
    db = tmp_path / "shop.db"
    loaded = cli("world", "load", str(ROOT / "examples" / "worlds" / "shop.json"), "--db", str(db))
    assert loaded.returncode == 0, loaded.stderr
    text = cli("worker", "status", "--db", str(db)).stdout.splitlines()
    assert text[0] == "tasks: completed 1, failed 1, running 3"
    assert text[1:] == [
        f"no live lease: {t} (turn 0) is running but no host holds it - no host ever claimed"
        " it (written running, e.g. by a world file); a `markertools worker run` host of its"
        " project requeues it after one lease period"
        for t in ("t-api", "t-bob", "t-lead")
    ]
    doc = json.loads(cli("worker", "status", "--db", str(db), "--json").stdout)
    assert [(u["task_id"], u["host"]) for u in doc["unleased"]] == [
        ("t-api", None),
        ("t-bob", None),
        ("t-lead", None),
    ]


@pytest.mark.rule("WRK-10", "WRK-1")
def test_a_terminal_shows_the_running_tasks_and_ctrl_c_requeues(
    offline_codex, tmp_path: Path
) -> None:
    from support.terminal import markertools

    router = routed(offline_codex)
    router.on("live", lambda last, texts: Hang())
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-live", "[agent:live] watch me")
        env = dict(offline_codex.env)
        env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
        term = markertools(
            "worker",
            "run",
            "--db",
            str(tmp_path / "w.db"),
            "--project",
            "p1",
            "--host",
            "h1",
            "--codex-bin",
            offline_codex.binary,
            "--worktrees",
            str(tmp_path / "worktrees"),
            "--grace-seconds",
            "0.5",
            "--no-tools",
            env=env,
        )
        term.wait_for("markertools worker h1: ")
        term.wait_for_pattern(r"t-live\W+1\W+turn running")
        assert offline_codex.fake.hanging.wait(20)
        term.ctrl_c()
        assert term.exit_code() == 130  # Ctrl-C, as everywhere in markertools (issue 36)
        screen = term.screen()
        assert "Traceback" not in screen
        last = screen[screen.rindex("markertools worker h1: ") :]  # the last picture stays
        assert last.startswith("markertools worker h1: 0 running, 1 done")
        assert re.search(r"t-live\W+1\W+requeued", last), last
        # one line says what ran and what went back to the queue
        assert (
            "markertools worker h1 stopped (Ctrl-C): ran 1 task - 1 requeued for the next"
            " host (t-live)"
        ) in " ".join(screen.split())
        assert store.get_task("t-live").status == "queued"
        (attempt,) = store.list_attempts("t-live")
        assert attempt.interrupted_reason == (
            "host h1 shut down: the host stopped during the turn"
        )


@pytest.mark.rule("WRK-6", "WRK-1")
def test_the_one_host_example_recovers_tasks_loaded_as_running_and_finishes(
    offline_codex, tmp_path: Path
) -> None:
    """docs/worker.md "One host" as a newcomer runs it (issue 36): the example world has
    three tasks `running` that no host holds. The host says so, requeues them after one
    lease period, runs them, and `--until-idle` ends (it used to poll forever)."""
    from support.paths import REPO

    db = tmp_path / "shop.db"
    loaded = cli("world", "load", str(REPO / "examples" / "worlds" / "shop.json"), "--db", str(db))
    assert loaded.returncode == 0, loaded.stderr
    env = dict(offline_codex.env)
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    done = subprocess.run(
        [
            str(EXE),
            "worker",
            "run",
            "--db",
            str(db),
            "--project",
            "p-shop",
            "--until-idle",
            "--lease-seconds",
            "1",
            "--codex-bin",
            offline_codex.binary,
            "--worktrees",
            str(tmp_path / "worktrees"),
            "--no-tools",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "no host holds a lease" in line]
    assert sorted(line.split()[5] for line in warned) == ["t-api", "t-bob", "t-lead"], warned
    assert warned[0].startswith("markertools worker run: warning: task t-")
    assert warned[0].endswith("it is requeued in 1 s unless a host claims it")
    with __import__("markertools_adapters").connect(db, executor="noop") as store:
        for task_id in ("t-lead", "t-api", "t-bob"):
            task = store.get_task(task_id)
            assert task.status != "running", task_id
            (attempt,) = store.list_attempts(task_id)
            assert attempt.interrupted_reason.startswith(
                "the task was running with no host holding a lease on it for 1 s"
            )


@pytest.mark.rule("WRK-2")
def test_worktrees_that_cannot_be_used_is_one_line_and_exit_2(offline_codex, tmp_path: Path) -> None:
    """Issue 37 item 5: a --worktrees the host cannot create or write (a read-only
    filesystem, a file in the way, a missing parent it cannot make) is one line naming it
    and the system's reason, exit 2 - never an internal error."""
    with worker_store("sqlite", tmp_path):
        pass
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    for where, reason in (
        (blocker / "worktrees", "Not a directory"),
        (Path("/proc/no-such-process/worktrees"), "No such file or directory"),
    ):
        done = cli(
            "worker", "run", "--db", str(tmp_path / "w.db"), "--project", "p1",
            "--codex-bin", offline_codex.binary, "--worktrees", str(where), "--until-idle",
        )
        line = one_line_failure(done, f"--worktrees {where}: cannot use it: ")
        assert line.endswith(reason), line
