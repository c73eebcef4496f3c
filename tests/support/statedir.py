"""Real file-system faults for the state-directory tests (issue 26): a read-only bind
mount, a tiny tmpfs that fills up, immutable files (the one kind of "read-only" that
stops root too, even through a descriptor opened before), and a disk whose fsync fails
(ext4 on a loop device whose backing file lives on a tmpfs that fills up: the kernel
answers EIO and the file system turns read-only). They need root, as this project's
test machines run; without it they fail with a clear message, they never skip."""

from __future__ import annotations

import array
import contextlib
import errno
import fcntl
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

FS_IOC_GETFLAGS = 0x80086601
FS_IOC_SETFLAGS = 0x40086602
FS_IMMUTABLE_FL = 0x00000010


def _root_needed(what: str) -> None:
    if os.geteuid() != 0:
        raise AssertionError(f"{what} needs root (mount, chattr): run the suite as root")


def _run(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed: {done.stderr.strip()}")


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[Path]:
    """`directory` as a read-only bind mount of itself (writes fail with EROFS)."""
    _root_needed("a read-only bind mount")
    _run("mount", "--bind", str(directory), str(directory))
    try:
        _run("mount", "-o", "remount,ro,bind", str(directory))
        yield directory
    finally:
        _run("umount", str(directory))


@contextlib.contextmanager
def tmpfs(directory: Path, size: str = "256k") -> Iterator[Path]:
    """A tmpfs of `size` mounted on `directory` (created when missing)."""
    _root_needed("a tmpfs")
    directory.mkdir(parents=True, exist_ok=True)
    _run("mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(directory))
    try:
        yield directory
    finally:
        _run("umount", "-l", str(directory))


def fill(directory: Path, name: str = "filler") -> Path:
    """Write a file in `directory` until its file system is full (ENOSPC)."""
    path = directory / name
    block = b"\0" * 4096
    with open(path, "ab", buffering=0) as fh:
        while True:
            try:
                fh.write(block)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
        with contextlib.suppress(OSError):  # the last partial page
            while fh.write(b"\0"):
                pass
    return path


def _flags(path: Path, set_: int = 0, clear: int = 0) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    try:
        buf = array.array("i", [0])
        fcntl.ioctl(fd, FS_IOC_GETFLAGS, buf, True)
        fcntl.ioctl(fd, FS_IOC_SETFLAGS, array.array("i", [(buf[0] | set_) & ~clear]))
    finally:
        os.close(fd)


@contextlib.contextmanager
def immutable(*paths: Path) -> Iterator[None]:
    """`chattr +i` on `paths` (a directory takes no new entry, a file no write, even
    through a descriptor opened before, even for root); cleared on the way out."""
    _root_needed("chattr +i")
    done: list[Path] = []
    try:
        for path in paths:
            _flags(path, set_=FS_IMMUTABLE_FL)
            done.append(path)
        yield
    finally:
        for path in reversed(done):
            _flags(path, clear=FS_IMMUTABLE_FL)


@contextlib.contextmanager
def failing_disk(base: Path) -> Iterator[tuple[Path, Callable[[], None]]]:
    """An ext4 file system mounted at `base/mnt` whose blocks live in a sparse file on a
    small tmpfs (`base/backing`); calling the returned `fail()` fills that tmpfs, after
    which the next fsync of new data fails with EIO (and ext4 turns read-only)."""
    _root_needed("a loop-mounted ext4")
    backing, mnt = base / "backing", base / "mnt"
    mnt.mkdir(parents=True, exist_ok=True)
    with tmpfs(backing, "8m"):
        image = backing / "disk.img"
        with open(image, "wb") as fh:
            fh.truncate(32 * 1024 * 1024)
        _run("mkfs.ext4", "-q", "-F", str(image))
        done = subprocess.run(
            ["losetup", "-f", "--show", str(image)], capture_output=True, text=True, check=True
        )
        loop = done.stdout.strip()
        try:
            _run("mount", loop, str(mnt))
            try:
                yield mnt, lambda: fill(backing)
            finally:
                _run("umount", "-l", str(mnt))
        finally:
            _run("losetup", "-d", loop)
