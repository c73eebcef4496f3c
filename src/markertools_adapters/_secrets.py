# Owns: keeping this process's store credentials out of what another process of the same
# user can read (TOL-10) - `hide_credentials(url)`: the password of a database URL (and
# PostgreSQL's PGPASSWORD) is overwritten in this process's original argument and
# environment blocks, which is what /proc/PID/cmdline and /proc/PID/environ show, and the
# process is made non-dumpable (prctl PR_SET_DUMPABLE 0: its /proc/PID/environ and memory
# are then unreadable to other processes of the user, and it cannot be ptrace-attached by
# them). Linux only; elsewhere it does nothing and says so.
#
# Must never: change what this process itself uses (Python's own `sys.argv` and
# `os.environ` are copies, left as they are); fail the command (a step that cannot be
# done is reported in the result, not raised).
from __future__ import annotations

import ctypes
import os
import sys
from urllib.parse import unquote, urlsplit

PR_SET_DUMPABLE = 4


def _secrets_of(url: str | None) -> list[bytes]:
    found: list[str] = []
    if url and "://" in url:
        try:
            password = urlsplit(url).password
        except ValueError:
            password = None
        if password:
            found += [password, unquote(password)]
    if os.environ.get("PGPASSWORD"):
        found.append(os.environ["PGPASSWORD"])
    return [s.encode() for s in dict.fromkeys(found) if len(s) >= 1]


def _blocks() -> list[tuple[int, int]]:
    """(start, end) of this process's original argv and environ blocks."""
    with open("/proc/self/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    # after the command name: field 3 (state) is index 0; arg_start .. env_end are 48..51
    arg_start, arg_end, env_start, env_end = (int(f) for f in fields[45:49])
    return [(arg_start, arg_end), (env_start, env_end)]


def _overwrite(secret: bytes, start: int, end: int) -> int:
    block = ctypes.string_at(start, end - start)
    count, pos = 0, block.find(secret)
    while pos >= 0:
        ctypes.memset(start + pos, ord("*"), len(secret))
        count += 1
        pos = block.find(secret, pos + len(secret))
    return count


def hide_credentials(url: str | None) -> list[str]:
    """TOL-10 for this process (see the module header); the steps done, in words."""
    if not sys.platform.startswith("linux"):
        return ["nothing: not Linux"]
    done: list[str] = []
    try:
        blocks = _blocks()
        hidden = sum(_overwrite(s, a, b) for s in _secrets_of(url) for a, b in blocks)
        if hidden:
            done.append(f"{hidden} password occurrence(s) overwritten in /proc/self/cmdline, environ")
    except (OSError, ValueError, IndexError) as exc:
        done.append(f"argv/environ not overwritten: {exc}")
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0:
            done.append("not dumpable")
    except (OSError, AttributeError) as exc:
        done.append(f"still dumpable: {exc}")
    return done


__all__ = ["hide_credentials"]
