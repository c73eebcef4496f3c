# Owns: a task's own directory on this host (WRK-2): `<worktrees>/<host>/<task id>`,
# mode 0700, the one task-files (FIL) resolves for the task on that host
# (`files_layout`). When the task's project names a local git repository (its
# `repo_url` is a directory holding `.git`), the directory is a git worktree of it on the
# branch `markertools/<task id>`; else an empty directory. A requeued task finds its
# directory as it was left.
#
# Must never: place a directory outside the root, or reuse another task's directory; follow
# a symbolic link at `<host>` or at the task's directory (a link planted there would send
# the agent - and a chmod - outside the root: refused, naming the link).
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Final

from markertools import InvalidArgument, task_id_component_problem
from markertools_adapters.errors import WorktreeFailed

LAYOUT: Final[str] = "{host}/{task_id}"  # the WorktreeFiles template of the host's dirs
_GIT_TIMEOUT: Final[float] = 60.0


def task_dir(root: Path, host: str, task_id: str) -> Path:
    """Where a task runs on `host`; ValueError for an id or host that is not one plain
    path component."""
    for label, value in (("host", host), ("task id", task_id)):
        problem = task_id_component_problem(value)
        if problem is not None:
            raise InvalidArgument(f"{label} {value!r} cannot name a directory: {problem}")
    return root / host / task_id


def local_repo(repo_url: str | None) -> Path | None:
    """The local git repository a project names, if it names one."""
    if not repo_url:
        return None
    text = repo_url.removeprefix("file://")
    path = Path(text)
    if path.is_absolute() and (path / ".git").exists():
        return path
    return None


def _no_link(path: Path, what: str) -> None:
    """Refuse a symbolic link (or anything but a directory) where a directory belongs."""
    if path.is_symlink():
        raise InvalidArgument(
            f"{what} {path} is a symbolic link (to {os.readlink(path)}): refused - a task's"
            " directory is never reached through a link; remove it"
        )
    if path.exists() and not path.is_dir():
        raise InvalidArgument(f"{what} {path} exists and is not a directory: refused")


def prepare_task_dir(root: Path, host: str, task_id: str, repo: Path | None) -> Path:
    """Create (or find again) the task's directory, 0700; a git worktree on
    `markertools/<task id>` when `repo` is given. Returns its absolute path. ValueError
    when `<host>` or the task's directory is a symbolic link (or not a directory), or
    when either resolves outside the root."""
    base = root.absolute()
    path = task_dir(base, host, task_id)
    _no_link(path.parent, "the host directory")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _no_link(path.parent, "the host directory")
    _no_link(path, "the task directory")
    if repo is not None and not path.exists():
        branch = f"markertools/{task_id}"
        exists = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
            capture_output=True,
            timeout=_GIT_TIMEOUT,
            check=False,
        )
        argv = ["git", "-C", str(repo), "worktree", "add"]
        argv += [str(path), branch] if exists.returncode == 0 else ["-b", branch, str(path)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_GIT_TIMEOUT)
        if done.returncode != 0:
            raise WorktreeFailed(f"git worktree add failed: {done.stderr.strip()[:300]}")
    _no_link(path, "the task directory")
    path.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)  # the link-free one
    try:
        os.fchmod(fd, 0o700)
    finally:
        os.close(fd)
    real_root = os.path.realpath(base)
    if os.path.commonpath([os.path.realpath(path), real_root]) != real_root:
        raise InvalidArgument(f"the task directory {path} resolves outside the root {base}: refused")
    return path
