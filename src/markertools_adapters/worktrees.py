# Owns: `WorktreeFiles`, the TaskFiles port (FIL-1..5) over worktrees on this machine:
# mapping a task to its own worktree directory under a configured root, listing a
# directory and reading a UTF-8 text file inside it, so that nothing outside the
# worktree can ever be read.
#
# Layout: a function (host, task id) -> the task's own directory (or several, tried in
# order) below the configured root; `seed_layout`, the default, gives
#   <root>/host-worktrees/<task_id>/      a task's worktree created by the host
#   <root>/tenants/<task_id>/...          a task's tenant directory
# and `template_layout("{host}/checkouts/{task_id}", ...)` builds one from templates.
# A task whose `worktree` field is unset uses the first of its directories that exists.
# A task whose `worktree` is set (absolute under the root, or relative to the root)
# uses exactly that directory, which must be one of its own directories or a directory
# below one of them (never a fallback).
#
# Invariants:
#   Rule 1 (FIL-5): a worktree is always the task's own existing directory: a plain
#           relative path below the root (no "..", not absolute) with the validated task
#           id as one of its components, as the layout gives it. The root, `tenants/`,
#           `host-worktrees/`, anything above, and any directory the layout gives
#           without the task id, are never one; a layout that raises or returns anything
#           else refuses the read (never a fallback to another directory).
#   Rule 2: every component below the root is opened relative to its parent's
#           descriptor with O_NOFOLLOW (`dir_fd` walk); intermediate components with
#           O_DIRECTORY, the final file with O_NONBLOCK | O_NOCTTY and then fstat'ed.
#           A symlink swapped in after a check makes the open fail ("changed"), so no
#           byte outside the worktree is ever read.
#   Rule 3: symlinks inside the worktree are followed by this walk itself (at most
#           40): a relative target is resolved against the link's directory on the
#           walk's own descriptor stack (".." pops it; popping the worktree itself is
#           "points outside"); an absolute target is accepted only when it names the
#           worktree (lexically, via the root as configured or as resolved).
#   Rule 4: only regular files are read and only directories are listed; anything else
#           (FIFO, device, socket) is refused without being opened.
#   Rule 5: bounded memory: a file is read in chunks until max_chars + 1 code points
#           are decoded or it ends; NUL bytes or invalid UTF-8 in the bytes read refuse
#           it; listing keeps only the first LIST_LIMIT names.
#   Rule 6: every failure is a FileRefused with a specific reason; read() never raises
#           for anything a task or a turn controls.
from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path, PurePath
from typing import Final, TypeAlias

from markertools import (
    Denied,
    FileAnswer,
    FileListing,
    FileRefused,
    FileText,
    InvalidArgument,
    Msg,
    Task,
    check_relative_path,
    display_name,
    msg,
    task_id_component_problem,
)
from markertools_adapters._fsread import list_directory, read_text
from markertools_adapters.errors import OperationFailed

HOST_WORKTREES_DIR: Final[str] = "host-worktrees"
TENANTS_DIR: Final[str] = "tenants"
LIST_LIMIT: Final[int] = 50
MAX_SYMLINKS: Final[int] = 40
MAX_DEPTH: Final[int] = 256  # directories below the worktree one path may descend through

LayoutDirs: TypeAlias = str | PurePath | Sequence[str | PurePath]
WorktreeLayout: TypeAlias = Callable[[str | None, str], LayoutDirs]
"""(local host name or None, task id) -> the task's own directory, or several tried in
order, relative to the worktree root."""


def seed_layout(host: str | None, task_id: str) -> tuple[str, str]:
    """The default layout: `host-worktrees/<task id>`, then `tenants/<task id>`."""
    return (f"{HOST_WORKTREES_DIR}/{task_id}", f"{TENANTS_DIR}/{task_id}")


def template_layout(*templates: str) -> WorktreeLayout:
    """A layout from `str.format` templates with the fields `{host}` and `{task_id}`,
    tried in order, e.g. `template_layout("{host}/checkouts/{task_id}")`. A template
    naming `{host}` is skipped while the reader has no local host.

    Raises:
        ValueError: no template, or a template without `{task_id}` (every task would
            share one directory).
    """
    if not templates:
        raise InvalidArgument("template_layout needs at least one template")
    for template in templates:
        if "{task_id}" not in template:
            raise InvalidArgument(f"worktree template {template!r} must contain {{task_id}}")

    def layout(host: str | None, task_id: str) -> tuple[str, ...]:
        return tuple(
            t.format(host=host, task_id=task_id)
            for t in templates
            if host is not None or "{host}" not in t
        )

    return layout


_CLOEXEC: Final[int] = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW: Final[int] = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY: Final[int] = getattr(os, "O_DIRECTORY", 0)
_ROOT_FLAGS: Final[int] = os.O_RDONLY | _DIRECTORY | _CLOEXEC
_DIR_FLAGS: Final[int] = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
_FILE_FLAGS: Final[int] = (
    os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | _CLOEXEC
)


class _Refusal(Exception):
    def __init__(self, reason: Msg) -> None:
        super().__init__(reason.key)
        self.reason = reason


def _kind_of(mode: int) -> Msg:
    for test, key in (
        (stat.S_ISFIFO, "files.kind_fifo"),
        (stat.S_ISCHR, "files.kind_char_device"),
        (stat.S_ISBLK, "files.kind_block_device"),
        (stat.S_ISSOCK, "files.kind_socket"),
    ):
        if test(mode):
            return msg(key)
    return msg("files.kind_other")


def _os_error(path: str, exc: OSError) -> _Refusal:
    return _Refusal(msg("files.os_error", path=path, error=exc.strerror or type(exc).__name__))


class WorktreeFiles:
    """TaskFiles over `<root>` (see the layout above); `host` is the local host name
    FIL-2 compares a task's `host` with (None: tasks with a host set are refused).

    `layout` maps (host, task id) to the task's own directory below the root: a
    function (`WorktreeLayout`), a template string or a sequence of them (see
    `template_layout`); default `seed_layout`.

    Raises:
        ValueError: `root` is not an existing directory, or a template is unusable.
        RuntimeError: the platform lacks openat with O_NOFOLLOW / O_DIRECTORY.
    """

    def __init__(
        self,
        root: Path | str,
        host: str | None,
        *,
        layout: WorktreeLayout | str | Sequence[str] | None = None,
    ) -> None:
        if not (os.open in os.supports_dir_fd and _NOFOLLOW and _DIRECTORY):
            raise OperationFailed("WorktreeFiles needs POSIX openat with O_NOFOLLOW/O_DIRECTORY")
        path = Path(root)
        if not path.is_dir():
            raise InvalidArgument(f"worktree root {str(path)!r} is not an existing directory")
        self._root = os.path.abspath(path)
        self._root_real = os.path.realpath(path)
        self._host = host
        if layout is None:
            self._layout: WorktreeLayout = seed_layout
        elif isinstance(layout, str):
            self._layout = template_layout(layout)
        elif callable(layout):
            self._layout = layout
        else:
            self._layout = template_layout(*layout)

    @property
    def local_host(self) -> str | None:
        """The local host name FIL-2 compares a task's `host` with."""
        return self._host

    @property
    def root(self) -> Path:
        """The worktree root, as configured (made absolute)."""
        return Path(self._root)

    # ---- the port ----------------------------------------------------------------

    def read(self, task: Task, path: str | None, max_chars: int) -> FileAnswer:
        """TaskFiles.read: list a directory or read a UTF-8 file of `task`'s worktree
        (`path` None or "" = its top level); every failure is a FileRefused."""
        checked = check_relative_path(path)
        if isinstance(checked, Denied):
            return FileRefused(checked.reason)
        shown = display_name(str(checked)) or "."
        with contextlib.ExitStack() as fds:
            try:
                wt_fd, wt_parts = self._open_worktree(task, fds)
                fd, file_stat = self._resolve(wt_fd, wt_parts, checked.parts, fds)
                if file_stat is None:
                    entries, omitted = list_directory(fd, LIST_LIMIT)
                    return FileListing(entries, omitted)
                outcome = read_text(fd, max(0, max_chars))
                if isinstance(outcome, Msg):
                    return FileRefused(msg("files.not_text", path=shown, why=outcome))
                text, truncated, total = outcome
                return FileText(shown, text, truncated, total, file_stat.st_size)
            except _Refusal as refusal:
                return FileRefused(refusal.reason)
            except OSError as exc:  # anything unforeseen (EIO, ENOMEM...): still a refusal
                return FileRefused(_os_error(shown, exc).reason)

    # ---- locating the worktree (FIL-5) ---------------------------------------------

    def _worktree_candidates(self, task: Task) -> tuple[tuple[str, ...], ...]:
        """The worktree locations to try, as components below the root (Rule 1)."""
        problem = task_id_component_problem(task.id)
        if problem is not None:
            raise _Refusal(msg("files.task_id_unusable", problem=problem))
        own = self._own_dirs(task.id)
        recorded = task.worktree
        if recorded is None or recorded.strip() == "":
            return own
        parts = self._recorded_parts(recorded)
        if not any(len(parts) >= len(o) and parts[: len(o)] == o for o in own):
            raise _Refusal(
                msg(
                    "files.worktree_not_own",
                    path=display_name(recorded),
                    own=tuple("/".join(o) for o in own),
                )
            )
        return (parts,)

    def _own_dirs(self, task_id: str) -> tuple[tuple[str, ...], ...]:
        """Rule 1: the layout's directories for the task, as components below the root."""
        try:
            given = self._layout(self._host, task_id)
        except Exception as exc:
            raise _Refusal(
                msg("files.os_error", path="the worktree layout", error=f"it failed: {exc}")
            ) from exc
        if isinstance(given, str | PurePath):
            dirs: list[object] = [given]
        elif isinstance(given, list | tuple):
            dirs = list(given)
        else:
            raise _Refusal(self._bad_layout(given, "not a path or a sequence of paths"))
        own: list[tuple[str, ...]] = []
        for directory in dirs:
            text = str(directory) if isinstance(directory, str | PurePath) else None
            checked = check_relative_path(text) if text else None
            if text is None or checked is None or isinstance(checked, Denied):
                raise _Refusal(self._bad_layout(directory, "not a plain relative path"))
            parts = tuple(p for p in checked.parts if p not in ("", "."))
            if task_id not in parts:
                raise _Refusal(self._bad_layout(directory, "it does not contain the task id"))
            own.append(parts)
        if not own:
            raise _Refusal(msg("files.no_local_worktree", looked=()))
        return tuple(own)

    @staticmethod
    def _bad_layout(directory: object, why: str) -> Msg:
        shown = display_name(str(directory))
        return msg(
            "files.os_error",
            path="the worktree layout",
            error=f"it gave the unusable directory {shown} ({why})",
        )

    def _recorded_parts(self, recorded: str) -> tuple[str, ...]:
        relative = recorded
        if recorded.startswith("/"):
            for base in (self._root, self._root_real):
                if recorded == base or recorded.startswith(base.rstrip("/") + "/"):
                    relative = recorded[len(base) :].lstrip("/")
                    break
            else:
                raise _Refusal(msg("files.worktree_outside_root", path=display_name(recorded)))
        checked = check_relative_path(relative)
        if isinstance(checked, Denied):
            raise _Refusal(msg("files.worktree_invalid", path=display_name(recorded)))
        return checked.parts

    def _open_worktree(self, task: Task, fds: contextlib.ExitStack) -> tuple[int, tuple[str, ...]]:
        candidates = self._worktree_candidates(task)
        try:
            root_fd = os.open(self._root, _ROOT_FLAGS)
        except OSError as exc:
            raise _Refusal(
                msg("files.root_unavailable", error=exc.strerror or type(exc).__name__)
            ) from exc
        fds.callback(os.close, root_fd)
        for parts in candidates:
            fd = root_fd
            try:
                for index, part in enumerate(parts):
                    fd = self._open_dir(fd, part, "/".join(parts[: index + 1]), fds)
            except FileNotFoundError:
                continue
            return fd, parts
        shown = tuple(display_name("/".join(p)) for p in candidates)
        raise _Refusal(msg("files.no_local_worktree", looked=shown))

    @staticmethod
    def _open_dir(parent: int, name: str, shown: str, fds: contextlib.ExitStack) -> int:
        """Open a worktree-location component; a symlink or non-directory is refused."""
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise _Refusal(msg("files.worktree_not_dir", path=display_name(shown))) from exc
        fds.callback(os.close, fd)
        return fd

    # ---- resolving a path inside the worktree (Rules 2-4) ---------------------------

    def _absolute_link_parts(self, target: str, wt_parts: tuple[str, ...]) -> list[str] | None:
        """Components below the worktree for an absolute link target, None if outside."""
        for base in (self._root, self._root_real):
            worktree = os.path.join(base, *wt_parts)
            if target == worktree or target.startswith(worktree.rstrip("/") + "/"):
                return target[len(worktree) :].split("/")
        return None

    def _resolve(
        self,
        wt_fd: int,
        wt_parts: tuple[str, ...],
        parts: tuple[str, ...],
        fds: contextlib.ExitStack,
    ) -> tuple[int, os.stat_result | None]:
        """The descriptor `parts` names below the worktree, with the file's fstat (taken
        once it was opened), or None when it is a directory."""
        stack: list[int] = [wt_fd]
        names: list[str] = []  # the logical path below the worktree, parallel to stack[1:]
        pending: deque[str] = deque(parts)
        links = 0
        requested = display_name("/".join(parts))
        while pending:
            name = pending.popleft()
            if name in ("", "."):
                continue
            if name == "..":  # only ever from a symlink's target (paths refuse "..")
                if len(stack) == 1:
                    raise _Refusal(msg("files.symlink_outside", path=requested))
                stack.pop()
                names.pop()
                continue
            here = display_name("/".join([*names, name]))
            try:
                st = os.stat(name, dir_fd=stack[-1], follow_symlinks=False)
            except FileNotFoundError as exc:
                raise _Refusal(msg("files.not_found", path=here)) from exc
            except OSError as exc:
                raise _os_error(here, exc) from exc
            if stat.S_ISLNK(st.st_mode):
                links += 1
                if links > MAX_SYMLINKS:
                    raise _Refusal(msg("files.symlink_loop", path=requested, limit=MAX_SYMLINKS))
                try:
                    target = os.readlink(name, dir_fd=stack[-1])
                except OSError as exc:  # gone or no longer a link since the lstat
                    raise _Refusal(msg("files.changed", path=here)) from exc
                if target.startswith("/"):
                    inside = self._absolute_link_parts(target, wt_parts)
                    if inside is None:
                        raise _Refusal(msg("files.symlink_outside", path=requested))
                    del stack[1:], names[:]
                    pending.extendleft(reversed(inside))
                else:
                    pending.extendleft(reversed(target.split("/")))
                continue
            if stat.S_ISDIR(st.st_mode):
                if len(stack) > MAX_DEPTH:  # bounds the descriptors one read holds
                    raise _Refusal(msg("files.too_deep", path=requested, limit=MAX_DEPTH))
                fd, _ = self._open_checked(stack[-1], name, _DIR_FLAGS, st, here, fds)
                stack.append(fd)
                names.append(name)
                continue
            if pending:
                raise _Refusal(msg("files.not_a_directory", path=requested, component=here))
            if not stat.S_ISREG(st.st_mode):
                raise _Refusal(msg("files.not_regular", path=here, what=_kind_of(st.st_mode)))
            return self._open_checked(stack[-1], name, _FILE_FLAGS, st, here, fds)
        return stack[-1], None

    @staticmethod
    def _open_checked(
        parent: int,
        name: str,
        flags: int,
        seen: os.stat_result,
        here: str,
        fds: contextlib.ExitStack,
    ) -> tuple[int, os.stat_result]:
        """Open `name` and prove it is the object `seen` by lstat (Rule 2); returns the
        descriptor and its fstat."""
        try:
            fd = os.open(name, flags, dir_fd=parent)
        except FileNotFoundError as exc:
            raise _Refusal(msg("files.changed", path=here)) from exc
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EISDIR, errno.EMLINK):
                # a symlink (ELOOP; EMLINK on some BSDs) or another type swapped in
                raise _Refusal(msg("files.changed", path=here)) from exc
            raise _os_error(here, exc) from exc
        fds.callback(os.close, fd)
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino) or stat.S_IFMT(
            now.st_mode
        ) != stat.S_IFMT(seen.st_mode):
            raise _Refusal(msg("files.changed", path=here))
        return fd, now
