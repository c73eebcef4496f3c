# Owns: the host lock (`host.lock`): one live host per state directory (seed:
# 进程存活锁；不按时间过期).
#
# Invariants:
#   Rule 1: a second live host is refused (HostLockHeld, naming the holder's pid).
#   Rule 2: liveness is the OS lock on the file (flock) where available - released by
#           the OS when the holder dies, whatever its pid becomes; elsewhere the
#           recorded pid is checked and an unreadable lock is refused, never guessed.
#   Rule 3: a lock left by a dead process is taken over (`previous_pid`); the lock
#           never expires by time.
#   Rule 4: after taking the OS lock, the path must still name the locked file (a
#           releasing holder unlinks it); otherwise retry.
#   Rule 5: the lock file is never opened through a link nor when it is not a regular
#           file (a link could point the pid record at any file): such a `host.lock`
#           is moved to the quarantine and a fresh one made. A directory that cannot
#           take the lock (read-only, full) is one line (StateDirUnwritable).
from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import time
from pathlib import Path
from typing import Any

from markertools_adapters.planstore._files import (
    LOCK_NAME,
    CorruptStore,
    HostLockHeld,
    StateDirUnwritable,
    _write_all,
    make_state_dir,
    not_regular,
    open_regular,
    why,
)

try:  # POSIX: the OS releases the lock when the holder dies, whatever its pid became
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - Windows: pid-based liveness only
    _fcntl = None  # type: ignore[assignment]


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (never signals it)."""
    if pid <= 0:
        return False
    if os.name == "nt":  # pragma: no cover - os.kill would terminate the process there
        import ctypes

        kernel32: Any = getattr(ctypes, "windll").kernel32  # noqa: B009
        handle = kernel32.OpenProcess(0x00100000, False, pid)  # SYNCHRONIZE
        if not handle:
            return False
        try:
            return bool(kernel32.WaitForSingleObject(handle, 0) == 0x102)  # WAIT_TIMEOUT
        finally:
            kernel32.CloseHandle(handle)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_pid(fd: int) -> int | None:
    try:
        if hasattr(os, "pread"):
            raw = os.pread(fd, 4096, 0)
        else:  # pragma: no cover - Windows
            os.lseek(fd, 0, os.SEEK_SET)
            raw = os.read(fd, 4096)
        pid = json.loads(raw or b"null")["pid"]
        return pid if isinstance(pid, int) and not isinstance(pid, bool) else None
    except Exception:
        return None


class HostLock:
    """The state directory's host lock (Rule 4). Use `HostLock.acquire(root)`, release
    with `release()` or a `with` block. `previous_pid` names the dead holder of a
    stale lock that was taken over (None when the file was free or new)."""

    def __init__(self, path: Path, fd: int, previous_pid: int | None) -> None:
        self.path = path
        self.root = path.parent
        self._fd: int | None = fd
        self.previous_pid = previous_pid

    @property
    def held(self) -> bool:
        return self._fd is not None

    @classmethod
    def acquire(cls, root: str | os.PathLike[str]) -> HostLock:
        """Take the lock of `root` (created when missing). Raises HostLockHeld (a live
        holder), StateDirUnwritable (the directory cannot take it), PlanStoreError."""
        path = make_state_dir(root) / LOCK_NAME
        try:
            return cls._acquire(path)
        except OSError as exc:
            raise StateDirUnwritable(
                f"{path}: the host lock cannot be taken ({why(exc)})"
            ) from None

    @staticmethod
    def _set_aside(path: Path) -> None:
        """Rule 5: a `host.lock` that is a link, a directory or a FIFO goes to the
        quarantine (never opened, never deleted)."""
        from markertools_adapters.planstore._quarantine import quarantine

        bad = not_regular(path)
        if bad is None:
            return
        reason = bad.removeprefix(f"{path}: ")
        found = quarantine(path.parent, [path.name], file=path.name, reason=reason, now=time.time())
        logging.getLogger("markertools.planstore").warning(
            "quarantined %s: %s (moved to %s)", path.name, reason, found.moved_to
        )

    @classmethod
    def _open(cls, path: Path, flags: int) -> int:
        for _ in range(8):
            cls._set_aside(path)
            try:
                return open_regular(path, flags)
            except CorruptStore:  # replaced meanwhile: set that aside too
                continue
        raise CorruptStore(f"{path}: keeps being replaced by something not a regular file")

    @classmethod
    def _acquire(cls, path: Path) -> HostLock:
        if _fcntl is None:  # pragma: no cover - exercised by a test that hides fcntl
            return cls._acquire_by_pid(path)
        while True:
            fd = cls._open(path, os.O_RDWR | os.O_CREAT)
            try:
                _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
            except OSError:
                holder = _read_pid(fd)
                os.close(fd)
                raise HostLockHeld(path, holder) from None
            try:  # the file may have been unlinked by a releasing holder meanwhile
                same = os.lstat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            previous = _read_pid(fd)
            try:
                return cls._claim(path, fd, previous)
            except OSError:  # nothing is held after a failure, and no empty lock is left
                with contextlib.suppress(OSError):
                    path.unlink()
                os.close(fd)
                raise

    @classmethod
    def _acquire_by_pid(cls, path: Path) -> HostLock:
        for _ in range(8):
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
                return cls._claim(path, fd, None)
            except FileExistsError:
                pass
            try:
                fd = cls._open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                holder = _read_pid(fd)
            finally:
                os.close(fd)
            if holder is not None and pid_alive(holder):
                raise HostLockHeld(path, holder)
            if holder is None:  # being written right now, or damaged: refuse, safely
                raise HostLockHeld(path, None, unreadable=True)
            # stale: move it aside atomically; only one contender's rename succeeds
            aside = path.with_name(f"{LOCK_NAME}.stale.{holder}.{os.getpid()}")
            try:
                os.rename(path, aside)
            except FileNotFoundError:
                continue
            aside.unlink(missing_ok=True)
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue
            return cls._claim(path, fd, holder)
        raise HostLockHeld(path, None)

    @classmethod
    def _claim(cls, path: Path, fd: int, previous: int | None) -> HostLock:
        record = {"pid": os.getpid(), "host": socket.gethostname()}
        data = json.dumps(record).encode()
        os.ftruncate(fd, 0)
        if hasattr(os, "pwrite"):
            os.pwrite(fd, data, 0)
        else:  # pragma: no cover
            _write_all(fd, data)
        os.fsync(fd)
        stale = previous if previous is not None and previous != os.getpid() else None
        return cls(path, fd, stale)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):  # gone, or a directory that turned read-only
            self.path.unlink()  # while still holding the OS lock (see acquire)
        os.close(fd)

    def __enter__(self) -> HostLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
