"""DockerExecutor against a fake `docker` program that records its argv (CTL-2), plus the
cloud executor, the no-op executor and make_executor."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.paths import TESTS

from markertools.domain.model import Task
from markertools.domain.ports import KillResult
from markertools_adapters.executors import (
    CloudExecutor,
    DispatchingExecutor,
    DockerExecutor,
    ExecutorUnavailable,
    NoopExecutor,
    make_executor,
)

FAKE = TESTS / "support" / "fake_docker" / "docker"
DOCKER_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]+")  # what the docker daemon accepts
PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # ids used verbatim in the name


@attrs.define
class FakeDocker:
    path: Path
    log: Path
    state: Path

    def set(self, **containers: dict[str, bool]) -> None:
        self.state.write_text(json.dumps({"containers": containers}))

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def container(self, name: str) -> dict[str, bool]:
        return dict(json.loads(self.state.read_text())["containers"][name])


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeDocker:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    path = bin_dir / "docker"
    shutil.copy(FAKE, path)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    fake = FakeDocker(path, tmp_path / "docker.log", tmp_path / "docker-state.json")
    fake.set()
    monkeypatch.setenv("FAKE_DOCKER_LOG", str(fake.log))
    monkeypatch.setenv("FAKE_DOCKER_STATE", str(fake.state))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return fake


TASK = Task("t-42", "p1", executor="docker")
NAME = "markertools-task-t-42"


@pytest.mark.rule("CTL-2")
def test_running_container_is_stopped(fake_docker: FakeDocker) -> None:
    fake_docker.set(**{NAME: {"running": True}})
    result = DockerExecutor(stop_timeout=7).kill(TASK)  # "docker" found on PATH
    assert result.signalled is True and NAME in result.detail
    assert fake_docker.calls() == [
        ["inspect", "--type", "container", "--format", "{{.State.Running}}", NAME],
        ["stop", "--time", "7", NAME],
    ]
    assert fake_docker.container(NAME)["running"] is False


@pytest.mark.rule("CTL-2")
def test_missing_or_stopped_container_is_no_live_process(fake_docker: FakeDocker) -> None:
    executor = DockerExecutor(str(fake_docker.path))
    missing = executor.kill(TASK)
    assert missing == KillResult(False, f"no live process: no container named {NAME}")
    fake_docker.set(**{NAME: {"running": False}})
    stopped = executor.kill(TASK)
    assert stopped.signalled is False and "not running" in stopped.detail
    assert [c[0] for c in fake_docker.calls()] == ["inspect", "inspect"]  # nothing signalled


@pytest.mark.rule("CTL-2")
def test_failed_stop_falls_back_to_kill(fake_docker: FakeDocker) -> None:
    fake_docker.set(**{NAME: {"running": True, "stop_fails": True}})
    result = DockerExecutor(str(fake_docker.path)).kill(TASK)
    assert result.signalled is True and "killed" in result.detail
    assert "permission denied" in result.detail
    assert [c[0] for c in fake_docker.calls()] == ["inspect", "stop", "kill"]
    assert fake_docker.container(NAME)["running"] is False


@pytest.mark.rule("CTL-2")
def test_failing_stop_and_kill_raise_with_both_errors(fake_docker: FakeDocker) -> None:
    fake_docker.set(**{NAME: {"running": True, "stop_fails": True, "kill_fails": True}})
    with pytest.raises(RuntimeError) as info:
        DockerExecutor(str(fake_docker.path)).kill(TASK)
    text = str(info.value)
    assert "docker stop" in text and "docker kill" in text and "permission denied" in text


@pytest.mark.rule("CTL-2")
def test_container_gone_during_stop_is_not_an_error(fake_docker: FakeDocker) -> None:
    fake_docker.set(**{NAME: {"running": True, "stop_fails": True}})
    executor = DockerExecutor(str(fake_docker.path))

    # the container exits between the failed stop and the kill
    real_run = executor._run

    def run(args: list[str], timeout: float) -> object:
        if args[0] == "kill":
            fake_docker.set(**{NAME: {"running": False}})
        return real_run(args, timeout)

    executor._run = run  # type: ignore[assignment,method-assign]
    result = executor.kill(TASK)
    assert result.signalled is False and "no longer running" in result.detail


def test_docker_cli_missing_or_hanging_raises(fake_docker: FakeDocker, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="docker CLI not found"):
        DockerExecutor(str(tmp_path / "no-docker-here")).kill(TASK)
    fake_docker.set(**{NAME: {"running": True, "hang": True}})
    with pytest.raises(RuntimeError, match="timed out"):
        DockerExecutor(str(fake_docker.path), command_timeout=0.5).kill(TASK)


@given(st.text(max_size=300))
def test_container_names_are_valid_and_distinct(task_id: str) -> None:
    executor = DockerExecutor()
    name = executor.container_name(Task(task_id, "p1"))
    assert DOCKER_NAME.fullmatch(name), name
    assert name.startswith("markertools-task-")
    if PLAIN_ID.fullmatch(task_id) and len(task_id) <= 200 and not HASHED.fullmatch(task_id):
        assert name == "markertools-task-" + task_id
    else:
        assert name == executor.container_name(Task(task_id, "p2"))  # deterministic
        assert re.fullmatch(r"markertools-task-h[0-9a-f]{24}", name)


HASHED = re.compile(r"h[0-9a-f]{24}")


@pytest.mark.rule("CTL-2")
@given(st.text(max_size=40))
def test_an_id_shaped_like_a_hashed_name_never_shares_its_container(task_id: str) -> None:
    """A cancel acts on its own target only: the task whose id is the hashed form of
    another id must not be given (and so stop) that other task's container."""
    executor = DockerExecutor()
    hashed = executor.container_name(Task(task_id, "p1"))
    suffix = hashed.removeprefix("markertools-task-")
    lookalike = Task(suffix, "p1")
    if suffix != task_id:
        assert executor.container_name(lookalike) != hashed


def test_custom_container_names(fake_docker: FakeDocker) -> None:
    fake_docker.set(box={"running": True})
    executor = DockerExecutor(str(fake_docker.path), container_name=lambda t: "box")
    assert executor.kill(TASK).signalled is True
    assert fake_docker.calls()[-1] == ["stop", "--time", "10", "box"]


@pytest.mark.rule("CTL-2")
@pytest.mark.parametrize("name", ["--help", "-f", "", "box;rm", "a b", "box\n--all"])
def test_invalid_custom_names_never_reach_the_docker_cli(
    fake_docker: FakeDocker, name: str
) -> None:
    """A custom name (or prefix) that is not a container name - one starting with '-'
    would be parsed as an option - fails the kill with the reason; docker is not run."""
    executor = DockerExecutor(str(fake_docker.path), container_name=lambda t: name)
    with pytest.raises(RuntimeError, match="refusing to pass container name"):
        executor.kill(TASK)
    prefixed = DockerExecutor(str(fake_docker.path), name_prefix="-")
    with pytest.raises(RuntimeError, match="refusing"):
        prefixed.kill(TASK)
    assert fake_docker.calls() == []


@pytest.mark.rule("CTL-2")
def test_cloud_executor_reports_requested_cancellation() -> None:
    requested: list[str] = []

    def ask(task: Task) -> str | None:
        requested.append(task.id)
        return "request r-7"

    result = CloudExecutor(ask).kill(Task("c1", "p1", executor="cloud"))
    assert result.signalled is True
    assert "cancellation requested" in result.detail and "request r-7" in result.detail
    assert requested == ["c1"]

    def fails(task: Task) -> str | None:
        raise ConnectionError("provider unreachable")

    with pytest.raises(ConnectionError):
        CloudExecutor(fails).kill(Task("c1", "p1", executor="cloud"))


def test_noop_executor_signals_nothing() -> None:
    result = NoopExecutor().kill(Task("t", "p1"))
    assert result.signalled is False
    assert result.detail == (
        "no executor is configured (noop executor): the task's status changed,"
        " no process was signalled"
    )


@pytest.mark.rule("CTL-2")
def test_make_executor_names(fake_docker: FakeDocker, tmp_path: Path) -> None:
    assert isinstance(make_executor("noop"), NoopExecutor)
    local = make_executor("local", state_dir=tmp_path / "state")
    assert isinstance(local, DispatchingExecutor)
    assert local.kill(Task("t", "p1", executor="local")).signalled is False
    with pytest.raises(ExecutorUnavailable):
        local.kill(TASK)
    docker = make_executor("docker")
    fake_docker.set(**{NAME: {"running": True}})
    assert docker.kill(TASK).signalled is True
    with pytest.raises(ValueError, match="expected one of noop, local, docker"):
        make_executor("podman")


@pytest.mark.rule("CTL-2")
def test_dispatcher_routes_by_task_executor(fake_docker: FakeDocker) -> None:
    fake_docker.set(**{NAME: {"running": True}})
    clouds: list[str] = []
    dispatcher = DispatchingExecutor(
        docker=DockerExecutor(str(fake_docker.path)),
        cloud=CloudExecutor(lambda t: clouds.append(t.id) or None),
    )
    assert dispatcher.kill(TASK).signalled is True
    assert dispatcher.kill(Task("c", "p1", executor="cloud")).signalled is True
    assert clouds == ["c"]
    assert [c[0] for c in fake_docker.calls()] == ["inspect", "stop"]
