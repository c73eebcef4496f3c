# Owns: `LocalProcessExecutor` - starting a task's process in its own process group
# and killing that whole group on cancel (CTL-2) - and `PgidRegistry`, the pid-file
# registry that lets any process (another worker, the CLI) find a task's group.
#
# Registry: one JSON file per task under <state_dir>/pgids/, named by the SHA-256 of
# the task id (any id is safe as a file name), holding
# {"task_id", "pgid", "leader_start", "boot_id"}. leader_start is the group leader's
# start time (clock ticks since boot, /proc/<pid>/stat field 22) and boot_id the
# kernel boot id; both guard against signalling an unrelated group after pid reuse.
#
# Invariants:
#   Rule 1: never signals process group 0 or 1, nor this process's own group.
#   Rule 2: kill = SIGTERM to the group, wait up to the grace period, SIGKILL to the
#           group, wait again; success only when no live (non-zombie) process is left
#           in the group; otherwise it raises (the cancel's status change stands).
#   Rule 3: a group with no live process, a missing record, or a record whose leader
#           pid now belongs to another process (different start time or boot) is
#           "no live process": signalled=False, never an error.
#   Rule 4: a process that leaves its group (setsid / setpgid) escapes a group kill;
#           this is a property of process groups (use the Docker executor, or a cgroup
#           supervisor, for stronger containment).
#   Rule 5: a record decides which group gets signalled, so it is trusted only when it is
#           a regular file (not a symlink) owned by this user and not writable by group or
#           others; records are written mode 0600. An untrusted record fails the kill.
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Final

import attrs

from markertools import KillResult, Task
from markertools_adapters.errors import OperationFailed

_PROC: Final[Path] = Path("/proc")
_NOFOLLOW: Final[int] = getattr(os, "O_NOFOLLOW", 0)


def default_state_dir() -> Path:
    """$MARKERTOOLS_STATE_DIR, else $XDG_STATE_HOME/markertools, else
    ~/.local/state/markertools. Created only when a process is registered."""
    explicit = os.environ.get("MARKERTOOLS_STATE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "state"
    return base / "markertools"


def _proc_stat(pid: int) -> list[str] | None:
    """Fields 3.. of /proc/<pid>/stat (index 0 = state), None when unavailable."""
    try:
        raw = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    return raw[raw.rfind(b")") + 2 :].decode("ascii", "replace").split()


def proc_start_time(pid: int) -> int | None:
    fields = _proc_stat(pid)
    return int(fields[19]) if fields is not None and len(fields) > 19 else None


def boot_id() -> str | None:
    try:
        return (_PROC / "sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def live_group_members(pgid: int) -> list[int] | None:
    """Pids of live (not zombie / dead) processes in group `pgid`; None without /proc."""
    if not (_PROC / "self" / "stat").exists():
        return None
    members: list[int] = []
    for entry in os.scandir(_PROC):
        if not entry.name.isdigit():
            continue
        fields = _proc_stat(int(entry.name))
        if fields is None or len(fields) < 3:
            continue
        if fields[2] == str(pgid) and fields[0] not in ("Z", "X", "x"):
            members.append(int(entry.name))
    return members


def descendant_groups(pid: int) -> list[int]:
    """The process groups of `pid`'s live descendants that are not `pid`'s own group
    (children that made a session or group of their own, e.g. a sandbox's): every
    group a kill of `pid`'s group would miss. Empty without /proc."""
    if not (_PROC / "self" / "stat").exists():
        return []
    parents: dict[int, tuple[int, int]] = {}  # pid -> (parent, group)
    for entry in os.scandir(_PROC):
        if not entry.name.isdigit():
            continue
        fields = _proc_stat(int(entry.name))
        if fields is not None and len(fields) > 2 and fields[0] not in ("Z", "X", "x"):
            parents[int(entry.name)] = (int(fields[1]), int(fields[2]))
    own = parents.get(pid, (0, pid))[1]
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for child, (ppid, group) in parents.items():
            if ppid == parent:
                frontier.append(child)
                if group not in (own, 0, 1, os.getpgrp()) and group not in found:
                    found.append(group)
    return found


def group_alive(pgid: int) -> bool:
    members = live_group_members(pgid)
    if members is not None:
        return bool(members)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@attrs.frozen
class GroupRecord:
    task_id: str
    pgid: int
    leader_start: int | None = None
    boot_id: str | None = None


class PgidRegistry:
    """Pid files under `<state_dir>/pgids/` (see the header)."""

    def __init__(self, state_dir: Path | str) -> None:
        self.directory = Path(state_dir) / "pgids"

    def _file(self, task_id: str) -> Path:
        digest = hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()
        return self.directory / f"{digest}.json"

    def record(self, record: GroupRecord) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        target = self._file(record.task_id)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(attrs.asdict(record)))
        os.replace(tmp, target)

    @staticmethod
    def _read_trusted(path: Path) -> str:
        """The record's text, from a regular file this user owns that nobody else may
        write (Rule 5); otherwise RuntimeError (the kill fails, it never guesses)."""
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fd)
            owner_ok = not hasattr(os, "geteuid") or st.st_uid == os.geteuid()
            if not stat.S_ISREG(st.st_mode) or not owner_ok or st.st_mode & 0o022:
                raise OperationFailed(
                    f"untrusted process-group record {path.name}: it must be a regular file"
                    " owned by this user and writable by nobody else"
                )
            return fh.read(64 * 1024).decode("utf-8")

    def lookup(self, task_id: str) -> GroupRecord | None:
        try:
            data = json.loads(self._read_trusted(self._file(task_id)))
            record = GroupRecord(
                task_id=str(data["task_id"]),
                pgid=int(data["pgid"]),
                leader_start=None
                if data.get("leader_start") is None
                else int(data["leader_start"]),
                boot_id=None if data.get("boot_id") is None else str(data["boot_id"]),
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise OperationFailed(
                f"unreadable process-group record for task {task_id!r}: {exc}"
            ) from exc
        return record if record.task_id == task_id else None

    def forget(self, task_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._file(task_id).unlink()


class LocalProcessExecutor:
    """Starts tasks in their own process group and kills the whole group (CTL-2).

    The group of a task is found, in order: through `pgid_lookup(task)` when given (the
    caller's own table), else through the registry under `state_dir` (written by
    `start` or `register`, possibly by another process)."""

    def __init__(
        self,
        state_dir: Path | str | None = None,
        *,
        grace_seconds: float = 5.0,
        kill_wait_seconds: float = 5.0,
        poll_seconds: float = 0.02,
        pgid_lookup: Callable[[Task], int | None] | None = None,
    ) -> None:
        self.registry = PgidRegistry(state_dir if state_dir is not None else default_state_dir())
        self.grace_seconds = grace_seconds
        self.kill_wait_seconds = kill_wait_seconds
        self.poll_seconds = poll_seconds
        self._pgid_lookup = pgid_lookup
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    # ---- starting ----------------------------------------------------------------

    def start(
        self,
        task: Task,
        argv: Sequence[str],
        cwd: Path | str,
        *,
        env: Mapping[str, str] | None = None,
        stdout: IO[Any] | int | None = subprocess.DEVNULL,
        stderr: IO[Any] | int | None = subprocess.DEVNULL,
    ) -> int:
        """Start `argv` in `cwd` as the leader of a new session and process group; record
        the group for `task` and return the pid (= the pgid)."""
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
            close_fds=True,
        )
        self._children[proc.pid] = proc
        try:
            self.register(task, proc.pid)
        except BaseException:  # an unrecorded group could never be cancelled: stop it
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            del self._children[proc.pid]
            raise
        return proc.pid

    def register(self, task: Task, pgid: int) -> None:
        """Record a group the caller started itself (its leader must still be running
        for the pid-reuse guard to be armed)."""
        self.registry.record(GroupRecord(task.id, pgid, proc_start_time(pgid), boot_id()))

    # ---- finding and killing -----------------------------------------------------

    def process_group(self, task: Task) -> tuple[int | None, str]:
        """(pgid, "") of the task's live group, or (None, why there is none)."""
        if self._pgid_lookup is not None:
            pgid = self._pgid_lookup(task)
            if pgid is None:
                return None, "the caller's lookup knows no process group for it"
            return pgid, ""
        record = self.registry.lookup(task.id)
        if record is None:
            return None, "no process group is recorded for it"
        current_boot = boot_id()
        if record.boot_id and current_boot and record.boot_id != current_boot:
            self.registry.forget(task.id)
            return None, f"its recorded process group {record.pgid} is from before a reboot"
        start = proc_start_time(record.pgid)
        if record.leader_start is not None and start is not None and start != record.leader_start:
            self.registry.forget(task.id)
            return None, f"pid {record.pgid} now belongs to another process"
        return record.pgid, ""

    def _reap(self) -> None:
        for pid, proc in list(self._children.items()):
            if proc.poll() is not None:
                del self._children[pid]

    def _wait_gone(self, pgid: int, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while True:
            self._reap()
            if not group_alive(pgid):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(self.poll_seconds)

    def kill(self, task: Task) -> KillResult:
        pgid, why = self.process_group(task)
        if pgid is None:
            return KillResult(False, f"no live process for task {task.id}: {why}")
        if pgid <= 1 or pgid == os.getpgrp():
            raise OperationFailed(f"refusing to signal process group {pgid} for task {task.id}")
        self._reap()
        if not group_alive(pgid):
            self.registry.forget(task.id)
            return KillResult(False, f"no live process: process group {pgid} has already exited")
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            self.registry.forget(task.id)
            return KillResult(False, f"no live process: process group {pgid} has already exited")
        if self._wait_gone(pgid, self.grace_seconds):
            self.registry.forget(task.id)
            return KillResult(True, f"process group {pgid}: SIGTERM; every process exited")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        if self._wait_gone(pgid, self.kill_wait_seconds):
            self.registry.forget(task.id)
            return KillResult(
                True,
                f"process group {pgid}: SIGTERM, then SIGKILL after {self.grace_seconds:g}s;"
                " every process exited",
            )
        left = live_group_members(pgid)
        raise OperationFailed(
            f"process group {pgid} still has live processes after SIGKILL"
            + (f": pids {', '.join(map(str, left))}" if left else "")
        )
