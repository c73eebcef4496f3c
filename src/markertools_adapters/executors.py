# Owns: the TaskExecutor adapters (docs/rules.md the ports, CTL-2) a worker wires into `Ports.executor`:
#   NoopExecutor          signals nothing (the CLI default; a library caller names it, as
#                         store_ports has no default): signalled=False, says so
#   LocalProcessExecutor  process groups (see _procgroups.py)
#   DockerExecutor        containers, through the docker CLI
#   CloudExecutor         asks a caller-supplied callback to cancel the cloud run
#   DispatchingExecutor   chooses one of the above by `task.executor`
# and `make_executor(name)`, the factory the CLI's `--executor` option calls.
#
# Invariants:
#   Rule 1: "no live process / no such container" is signalled=False, never an error;
#           a kill that was attempted and failed raises (the cancel's status change
#           stands and the report carries the error, CTL-2).
#   Rule 2: an executor never silently skips a task it cannot handle: the dispatcher
#           raises for an executor kind with no backend configured.
#   Rule 3: container names are derived from the task id deterministically and are
#           always valid docker names (see DockerExecutor.container_name); two different
#           task ids never share a name (a hashed name's shape is never used verbatim).
#   Rule 4: a name (custom naming or prefix included) that is not a valid container name
#           is never passed to the docker CLI (a leading "-" would be read as an option):
#           the kill fails with the reason instead.
from __future__ import annotations

import hashlib
import re
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

import attrs

from markertools import KillResult, Task, TaskExecutor
from markertools_adapters._procgroups import (
    GroupRecord,
    LocalProcessExecutor,
    PgidRegistry,
    default_state_dir,
)
from markertools_adapters.errors import MarkertoolsError, OperationFailed

__all__ = [
    "EXECUTOR_NAMES",
    "CloudExecutor",
    "DispatchingExecutor",
    "DockerExecutor",
    "ExecutorUnavailable",
    "GroupRecord",
    "LocalProcessExecutor",
    "NoopExecutor",
    "PgidRegistry",
    "UnknownExecutor",
    "default_state_dir",
    "make_executor",
]

EXECUTOR_NAMES: Final[tuple[str, ...]] = ("noop", "local", "docker")


class ExecutorUnavailable(RuntimeError, MarkertoolsError):
    """No backend is configured for the task's executor kind (Rule 2)."""


class UnknownExecutor(MarkertoolsError, ValueError):
    """`make_executor` (and `connect(executor=...)`) was given a name that is not one of
    EXECUTOR_NAMES. Also a ValueError, as before (FLT-8)."""


class NoopExecutor:
    """Signals nothing; the kill request is only recorded by delivery (report + audit),
    whose entry tells the agent so (DETAIL). `store_ports` never picks it for a caller:
    naming it is the worker's choice that a cancel stops nothing."""

    DETAIL: Final[str] = (
        "no executor is configured (noop executor): the task's status changed,"
        " no process was signalled"
    )

    def kill(self, task: Task) -> KillResult:
        """Signal nothing: KillResult(signalled=False, detail=NoopExecutor.DETAIL)."""
        return KillResult(False, self.DETAIL)


class CloudExecutor:
    """Cloud runs are stopped by their provider: `request_cancel(task)` asks for it and
    may return a detail line (e.g. the provider's request id); raising = kill failed."""

    def __init__(self, request_cancel: Callable[[Task], str | None]) -> None:
        self._request_cancel = request_cancel

    def kill(self, task: Task) -> KillResult:
        detail = self._request_cancel(task)
        text = "cloud cancellation requested; the provider stops the run asynchronously"
        return KillResult(True, f"{text} ({detail})" if detail else text)


_DOCKER_NAME: Final[re.Pattern[str]] = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# The shape of a hashed name's suffix: an id of exactly this shape is hashed too, so a
# task id can never name (and a cancel never stop) the container of a hashed id.
_HASHED_SUFFIX: Final[re.Pattern[str]] = re.compile(r"h[0-9a-f]{24}")
_NO_CONTAINER: Final[re.Pattern[str]] = re.compile(r"no such (container|object)", re.I)
_NOT_RUNNING: Final[re.Pattern[str]] = re.compile(r"is not running", re.I)


@attrs.frozen
class _Run:
    returncode: int
    stdout: str
    stderr: str


class DockerExecutor:
    """Stops a task's container: `docker inspect` (not there / not running = no live
    process), then `docker stop --time N`, then `docker kill` when the stop failed.

    Container name: `name_prefix + task.id` when the id is made of letters, digits,
    `_`, `.` and `-` (at most 200 characters); otherwise `name_prefix + "h" +` the first
    24 hex digits of the id's SHA-256. Pass `container_name` to use your own naming."""

    def __init__(
        self,
        docker: str = "docker",
        *,
        stop_timeout: int = 10,
        name_prefix: str = "markertools-task-",
        container_name: Callable[[Task], str] | None = None,
        command_timeout: float = 60.0,
    ) -> None:
        self.docker = docker
        self.stop_timeout = stop_timeout
        self.name_prefix = name_prefix
        self.command_timeout = command_timeout
        self._container_name = container_name

    def container_name(self, task: Task) -> str:
        if self._container_name is not None:
            return self._container_name(task)
        plain = _DOCKER_NAME.fullmatch(task.id) and not _HASHED_SUFFIX.fullmatch(task.id)
        if len(task.id) <= 200 and plain:
            return self.name_prefix + task.id
        digest = hashlib.sha256(task.id.encode("utf-8", "surrogatepass")).hexdigest()
        return f"{self.name_prefix}h{digest[:24]}"

    def _run(self, args: Sequence[str], timeout: float) -> _Run:
        try:
            done = subprocess.run(
                [self.docker, *args],
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except FileNotFoundError as exc:
            raise OperationFailed(f"docker CLI not found ({self.docker!r})") from exc
        except subprocess.TimeoutExpired as exc:
            raise OperationFailed(f"docker {args[0]} timed out after {timeout:g}s") from exc
        return _Run(done.returncode, done.stdout, done.stderr)

    @staticmethod
    def _summary(run: _Run) -> str:
        text = " ".join((run.stderr or run.stdout).split())
        return (text[:200] + "…") if len(text) > 200 else text or f"exit status {run.returncode}"

    def kill(self, task: Task) -> KillResult:
        name = self.container_name(task)
        if not _DOCKER_NAME.fullmatch(name) or len(name) > 255:  # Rule 4
            raise OperationFailed(
                f"refusing to pass container name {name[:80]!r} for task {task.id!r} to docker"
                " (not a valid container name; it could be read as an option)"
            )
        inspect = self._run(
            ["inspect", "--type", "container", "--format", "{{.State.Running}}", name],
            self.command_timeout,
        )
        if inspect.returncode != 0:
            if _NO_CONTAINER.search(inspect.stderr + inspect.stdout):
                return KillResult(False, f"no live process: no container named {name}")
            raise OperationFailed(f"docker inspect {name} failed: {self._summary(inspect)}")
        if inspect.stdout.strip() == "false":
            return KillResult(False, f"no live process: container {name} is not running")
        stop = self._run(
            ["stop", "--time", str(self.stop_timeout), name],
            self.stop_timeout + self.command_timeout,
        )
        if stop.returncode == 0:
            return KillResult(
                True, f"container {name} stopped (docker stop --time {self.stop_timeout})"
            )
        if _NO_CONTAINER.search(stop.stderr + stop.stdout):
            return KillResult(False, f"no live process: container {name} is gone")
        kill = self._run(["kill", name], self.command_timeout)
        if kill.returncode == 0:
            return KillResult(
                True, f"container {name} killed (docker stop failed: {self._summary(stop)})"
            )
        if _NO_CONTAINER.search(kill.stderr + kill.stdout) or _NOT_RUNNING.search(kill.stderr):
            return KillResult(False, f"no live process: container {name} is no longer running")
        raise OperationFailed(
            f"could not stop container {name}: docker stop: {self._summary(stop)};"
            f" docker kill: {self._summary(kill)}"
        )


class DispatchingExecutor:
    """Chooses the backend by `task.executor` (`local`, `docker`, `cloud`); a kind
    with no backend raises ExecutorUnavailable (Rule 2)."""

    def __init__(
        self,
        *,
        local: TaskExecutor | None = None,
        docker: TaskExecutor | None = None,
        cloud: TaskExecutor | None = None,
    ) -> None:
        self.backends: dict[str, TaskExecutor | None] = {
            "local": local,
            "docker": docker,
            "cloud": cloud,
        }

    def kill(self, task: Task) -> KillResult:
        backend = self.backends.get(task.executor)
        if backend is None:
            raise ExecutorUnavailable(
                f"no executor is configured for {task.executor!r} tasks;"
                " the task's process was not signalled"
            )
        return backend.kill(task)


def make_executor(
    name: str,
    *,
    state_dir: Path | str | None = None,
    grace_seconds: float = 5.0,
    docker: str = "docker",
) -> TaskExecutor:
    """The executor behind the CLI's `--executor NAME`:

    - `noop`: NoopExecutor (nothing is signalled; the default);
    - `local`: local tasks' process groups, found in the registry under `state_dir`
      (default: default_state_dir()); tasks on other executors raise (not signalled);
    - `docker`: docker tasks' containers through the docker CLI; others raise.

    Another name raises UnknownExecutor (a ValueError) listing the three.
    """
    if name == "noop":
        return NoopExecutor()
    if name == "local":
        return DispatchingExecutor(
            local=LocalProcessExecutor(state_dir, grace_seconds=grace_seconds)
        )
    if name == "docker":
        return DispatchingExecutor(docker=DockerExecutor(docker))
    raise UnknownExecutor(f"unknown executor {name!r}; expected one of {', '.join(EXECUTOR_NAMES)}")
