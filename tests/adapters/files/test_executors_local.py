"""LocalProcessExecutor with real process trees (CTL-2): a task's whole process group
dies on cancel - children, grandchildren, processes ignoring SIGTERM - and a group
started by another process is found through the pid-file registry."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from markertools.domain.model import Task
from markertools_adapters.executors import (
    DispatchingExecutor,
    ExecutorUnavailable,
    GroupRecord,
    LocalProcessExecutor,
    PgidRegistry,
)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="uses /proc and ps")

TREE = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    ignore = sys.argv[2] == "ignore-term"
    if ignore:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # inherited by the children below
    kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            for _ in range(2)]
    kids.append(subprocess.Popen(["sh", "-c", "sleep 600 & sleep 600 & wait"]))
    time.sleep(0.2)
    with open(sys.argv[1], "w") as fh:
        fh.write("ready")
    time.sleep(600)
    """
)


def _wait_for(path: Path, what: str) -> None:
    deadline = time.monotonic() + 60  # liveness guard, not a timing assertion
    while not path.exists():
        assert time.monotonic() < deadline, f"{what} never became ready"
        time.sleep(0.02)


def _ps_group(pgid: int) -> list[int]:
    """Live (non-zombie) pids in group `pgid`, according to ps (independent of the adapter)."""
    out = subprocess.run(
        ["ps", "-e", "-o", "pid=,pgid=,stat="], capture_output=True, text=True, check=True
    ).stdout
    pids = []
    for line in out.splitlines():
        pid, group, state = line.split(None, 2)
        if int(group) == pgid and not state.startswith("Z"):
            pids.append(int(pid))
    return pids


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.fixture
def cleanup() -> Iterator[list[int]]:
    """Groups to SIGKILL after the test, whatever happened."""
    groups: list[int] = []
    yield groups
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def _start_tree(
    executor: LocalProcessExecutor, task: Task, tmp_path: Path, mode: str = "plain"
) -> tuple[int, list[int]]:
    ready = tmp_path / f"ready-{task.id}"
    pid = executor.start(task, [sys.executable, "-c", TREE, str(ready), mode], tmp_path)
    _wait_for(ready, "the process tree")
    members = _ps_group(pid)
    return pid, members


@pytest.mark.rule("CTL-2")
@pytest.mark.slow
def test_kill_takes_down_children_and_grandchildren(tmp_path: Path, cleanup: list[int]) -> None:
    executor = LocalProcessExecutor(tmp_path / "state", grace_seconds=10)
    task = Task("t1", "p1")
    pgid, members = _start_tree(executor, task, tmp_path)
    cleanup.append(pgid)
    assert pgid in members and len(members) >= 6  # leader, 2 pythons, sh, 2 sleeps
    result = executor.kill(task)
    assert result.signalled is True
    assert f"process group {pgid}" in result.detail and "SIGKILL" not in result.detail
    survivors = [pid for pid in members if _alive(pid)]
    assert survivors == []
    assert _ps_group(pgid) == []
    # the group is forgotten: a second cancel finds no live process, not an error
    again = executor.kill(task)
    assert again.signalled is False and "no live process" in again.detail


@pytest.mark.rule("CTL-2")
@pytest.mark.slow
def test_processes_ignoring_sigterm_get_sigkill(tmp_path: Path, cleanup: list[int]) -> None:
    executor = LocalProcessExecutor(tmp_path / "state", grace_seconds=0.3)
    task = Task("stubborn", "p1")
    pgid, members = _start_tree(executor, task, tmp_path, "ignore-term")
    cleanup.append(pgid)
    result = executor.kill(task)
    assert result.signalled is True
    assert "SIGKILL" in result.detail
    assert [pid for pid in members if _alive(pid)] == []


@pytest.mark.rule("CTL-2")
@pytest.mark.slow
def test_group_started_by_another_process_is_found(tmp_path: Path, cleanup: list[int]) -> None:
    """Another worker process starts the task and exits; this process kills it through
    the registry in the shared state directory."""
    state = tmp_path / "state"
    ready = tmp_path / "ready"
    starter = textwrap.dedent(
        f"""
        import sys
        from markertools import Task
        from markertools_adapters.executors import LocalProcessExecutor
        ex = LocalProcessExecutor({str(state)!r})
        pid = ex.start(Task("remote-task", "p1"),
                       [sys.executable, "-c", {TREE!r}, {str(ready)!r}, "plain"], {str(tmp_path)!r})
        print(pid)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", starter], capture_output=True, text=True, check=True
    )
    pgid = int(out.stdout.strip())
    cleanup.append(pgid)
    _wait_for(ready, "the remote process tree")
    members = _ps_group(pgid)
    assert len(members) >= 6
    record = PgidRegistry(state).lookup("remote-task")
    assert record is not None and record.pgid == pgid and record.leader_start is not None
    result = LocalProcessExecutor(state, grace_seconds=10).kill(Task("remote-task", "p1"))
    assert result.signalled is True
    assert [pid for pid in members if _alive(pid)] == []
    assert PgidRegistry(state).lookup("remote-task") is None


@pytest.mark.rule("CTL-2")
def test_exited_task_is_not_an_error(tmp_path: Path) -> None:
    executor = LocalProcessExecutor(tmp_path / "state", grace_seconds=10)
    task = Task("quick", "p1")
    pid = executor.start(task, ["true"], tmp_path)
    deadline = time.monotonic() + 60
    while _alive(pid):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    result = executor.kill(task)
    assert result.signalled is False
    assert "no live process" in result.detail
    unknown = executor.kill(Task("never-started", "p1"))
    assert unknown.signalled is False and "no process group is recorded" in unknown.detail


@pytest.mark.rule("CTL-2")
def test_reused_pid_is_never_signalled(tmp_path: Path, cleanup: list[int]) -> None:
    """A stale record whose leader pid now belongs to another process (different start
    time) is 'no live process', and that process is left alone."""
    bystander = subprocess.Popen(["sleep", "600"], start_new_session=True)
    cleanup.append(bystander.pid)
    state = tmp_path / "state"
    PgidRegistry(state).record(GroupRecord("old-task", bystander.pid, leader_start=1, boot_id=None))
    result = LocalProcessExecutor(state).kill(Task("old-task", "p1"))
    assert result.signalled is False
    assert "belongs to another process" in result.detail
    assert _alive(bystander.pid)
    bystander.kill()
    bystander.wait()


@pytest.mark.rule("CTL-2")
def test_record_from_before_a_reboot_is_ignored(tmp_path: Path, cleanup: list[int]) -> None:
    bystander = subprocess.Popen(["sleep", "600"], start_new_session=True)
    cleanup.append(bystander.pid)
    state = tmp_path / "state"
    PgidRegistry(state).record(GroupRecord("t", bystander.pid, None, boot_id="another-boot"))
    result = LocalProcessExecutor(state).kill(Task("t", "p1"))
    assert result.signalled is False and "reboot" in result.detail
    assert _alive(bystander.pid)
    bystander.kill()
    bystander.wait()


def test_refuses_to_signal_own_group_or_init(tmp_path: Path) -> None:
    for pgid in (0, 1, os.getpgrp()):
        executor = LocalProcessExecutor(tmp_path, pgid_lookup=lambda task, g=pgid: g)
        with pytest.raises(RuntimeError, match="refusing to signal"):
            executor.kill(Task("t", "p1"))


@pytest.mark.rule("CTL-2")
@pytest.mark.slow
def test_caller_supplied_pgid_lookup(tmp_path: Path, cleanup: list[int]) -> None:
    proc = subprocess.Popen(["sh", "-c", "sleep 600 & sleep 600 & wait"], start_new_session=True)
    cleanup.append(proc.pid)
    table = {"mine": proc.pid}
    executor = LocalProcessExecutor(
        tmp_path / "unused", grace_seconds=10, pgid_lookup=lambda t: table.get(t.id)
    )
    deadline = time.monotonic() + 60
    while len(_ps_group(proc.pid)) < 3:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    members = _ps_group(proc.pid)
    result = executor.kill(Task("mine", "p1"))
    proc.wait()
    assert result.signalled is True
    assert [pid for pid in members if _alive(pid)] == []
    assert executor.kill(Task("other", "p1")).signalled is False
    assert not (tmp_path / "unused").exists()  # the registry is never created by kill


def test_unreadable_registry_record_raises(tmp_path: Path) -> None:
    registry = PgidRegistry(tmp_path)
    registry.record(GroupRecord("t", 12345))
    next(registry.directory.iterdir()).write_text("{not json")
    with pytest.raises(RuntimeError, match="unreadable process-group record"):
        LocalProcessExecutor(tmp_path).kill(Task("t", "p1"))


@pytest.mark.rule("CTL-2")
def test_untrusted_registry_records_are_never_acted_on(tmp_path: Path) -> None:
    """A record names the group to signal: one that others could have written (group or
    world writable, a symlink, another owner) fails the kill instead of signalling."""
    registry = PgidRegistry(tmp_path)
    registry.record(GroupRecord("t", 12345))
    record = next(registry.directory.iterdir())
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    executor = LocalProcessExecutor(tmp_path)
    for mode in (0o620, 0o602, 0o666):
        record.chmod(mode)
        with pytest.raises(RuntimeError, match="untrusted process-group record"):
            executor.kill(Task("t", "p1"))
    record.chmod(0o600)
    elsewhere = tmp_path / "planted.json"
    elsewhere.write_text(record.read_text())
    record.unlink()
    record.symlink_to(elsewhere)
    with pytest.raises(RuntimeError, match="unreadable process-group record"):
        executor.kill(Task("t", "p1"))
    if os.geteuid() == 0:  # only root can hand a file to another owner
        record.unlink()
        elsewhere.rename(record)
        os.chown(record, 54321, -1)
        with pytest.raises(RuntimeError, match="untrusted process-group record"):
            executor.kill(Task("t", "p1"))


def test_registry_names_any_task_id_safely(tmp_path: Path) -> None:
    registry = PgidRegistry(tmp_path)
    for task_id in ("../../etc/passwd", "a/b", "", "x" * 1000, "任务"):
        registry.record(GroupRecord(task_id, 4242))
        assert registry.lookup(task_id) == GroupRecord(task_id, 4242)
    assert all(p.parent == registry.directory for p in registry.directory.iterdir())
    registry.forget("a/b")
    assert registry.lookup("a/b") is None


@pytest.mark.rule("CTL-2")
def test_dispatcher_refuses_kinds_without_backend(tmp_path: Path) -> None:
    dispatcher = DispatchingExecutor(local=LocalProcessExecutor(tmp_path))
    assert dispatcher.kill(Task("t", "p1", executor="local")).signalled is False
    for kind in ("docker", "cloud", "k8s"):
        with pytest.raises(ExecutorUnavailable, match="not signalled"):
            dispatcher.kill(Task("t", "p1", executor=kind))


@pytest.mark.rule("CTL-2")
@pytest.mark.slow
def test_cancel_through_delivery_kills_the_process_group(
    tmp_path: Path, cleanup: list[int]
) -> None:
    """task-cancel sets the target interrupted, then the executor kills its whole group."""
    from support.strategies.files import deliver, files_ports

    from markertools import Command
    from markertools.parse.params import TaskCancelParams

    executor = LocalProcessExecutor(tmp_path / "state", grace_seconds=10)
    sender = Task("t1", "p1", created_by="u1")
    child = Task("child", "p1", created_by="u1", parent_task_id="t1")
    pgid, members = _start_tree(executor, child, tmp_path)
    cleanup.append(pgid)
    store, ports = files_ports((sender, child), files_port=None, executor=executor)
    report = deliver(ports, Command("task-cancel", 1, TaskCancelParams("child")))
    entry = report.entries[0]
    assert entry.outcome == "done"
    assert f"process group {pgid}" in entry.reason.render("en")
    assert [pid for pid in members if _alive(pid)] == []
    killed = store.get_task("child")
    assert killed is not None and killed.status == "interrupted"
    # cancelling it again: the gate refuses a terminal target; nothing is signalled
    again = deliver(ports, Command("task-cancel", 1, TaskCancelParams("child")))
    assert again.entries[0].outcome == "rejected"


@pytest.mark.rule("CTL-2")
def test_failing_kill_leaves_the_cancel_done_with_the_error(tmp_path: Path) -> None:
    """The dispatcher has no docker backend: the kill raises, the status change stands
    and the report carries the error."""
    from support.strategies.files import deliver, files_ports

    from markertools import Command
    from markertools.parse.params import TaskCancelParams

    sender = Task("t1", "p1", created_by="u1")
    boxed = Task("boxed", "p1", created_by="u1", executor="docker")
    store, ports = files_ports(
        (sender, boxed),
        files_port=None,
        executor=DispatchingExecutor(local=LocalProcessExecutor(tmp_path)),
    )
    report = deliver(ports, Command("task-cancel", 1, TaskCancelParams("boxed")))
    entry = report.entries[0]
    assert entry.outcome == "done"
    assert "no executor is configured for 'docker' tasks" in entry.reason.render("en")
    task = store.get_task("boxed")
    assert task is not None and task.status == "interrupted"
