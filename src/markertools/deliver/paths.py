# Owns: pure validation of the relative paths a task-files block names (FIL-4) and of
# task ids used as directory or file names (FIL-5), plus safe display of untrusted
# names. Never touches the filesystem: the adapter (markertools_adapters.worktrees)
# opens the validated components one by one with O_NOFOLLOW.
#
# Invariants:
#   Rule 1: `check_relative_path` either returns the path's components - each a
#           non-empty name that is not "." or ".." and holds no "/", "\\" or NUL - or
#           Denied with a specific reason. Joining the components under a directory
#           can never name anything above that directory (lexically).
#   Rule 2: both "/" and "\\" separate components (an agent may write Windows paths);
#           a name holding a backslash therefore cannot be addressed, by design.
#   Rule 3: empty and "." components are dropped ("a//b", "./a", "a/" are "a/b", "a",
#           "a"); a path with no component left means "the worktree's top level".
#   Rule 4: `display_name` never returns a control character, whatever the input: the
#           report stays one line per name (names are also framed as data, INJ-7).
from __future__ import annotations

import re
from typing import Final

import attrs

from markertools.domain.decision import Denied
from markertools.text.msg import msg

MAX_PATH_CHARS: Final[int] = 4096
MAX_TASK_ID_BYTES: Final[int] = 200  # file-name limit is 255 bytes; leave room for suffixes
DISPLAY_MAX_CHARS: Final[int] = 200

_SEPARATORS = re.compile(r"[/\\]")
_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


@attrs.frozen
class RelativePath:
    """A validated path inside a worktree; `parts` empty = the top level."""

    parts: tuple[str, ...]

    @property
    def is_top_level(self) -> bool:
        return not self.parts

    def __str__(self) -> str:
        return "/".join(self.parts)


def _escape_control(match: re.Match[str]) -> str:
    char = match.group(0)
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def _foreign_surrogate(char: str) -> bool:
    """A lone surrogate that surrogateescape did not produce (it cannot be encoded)."""
    return "\ud800" <= char <= "\udfff" and not "\udc80" <= char <= "\udcff"


def display_name(name: str, limit: int = DISPLAY_MAX_CHARS) -> str:
    """A safe one-line rendering of an untrusted name or path: lone surrogates (bytes
    that were not UTF-8, decoded with surrogateescape) become `\\xNN`, control
    characters become escapes, and the result is cut to `limit` code points."""
    if any("\ud800" <= c <= "\udfff" for c in name):
        # a lone surrogate outside surrogateescape's range cannot be encoded: escape it
        name = "".join(f"\\u{ord(c):04x}" if _foreign_surrogate(c) else c for c in name)
        raw = name.encode("utf-8", "surrogateescape")
        name = raw.decode("utf-8", "backslashreplace")
    shown = _CONTROL.sub(_escape_control, name)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def check_relative_path(path: str | None) -> RelativePath | Denied:
    """FIL-4: validate a task-files `path` (None or "" = top level). See Rules 1-3."""
    if path is None or path == "":
        return RelativePath(())
    shown = display_name(path)
    if "\x00" in path:
        return Denied(msg("files.path_nul", path=shown))
    if len(path) > MAX_PATH_CHARS:
        return Denied(msg("files.path_too_long", chars=len(path), limit=MAX_PATH_CHARS))
    if path[:2] in ("//", "\\\\", "/\\", "\\/"):
        return Denied(msg("files.path_unc", path=shown))
    if path[0] in "/\\":
        return Denied(msg("files.path_absolute", path=shown))
    if _DRIVE.match(path):
        return Denied(msg("files.path_drive", path=shown))
    parts: list[str] = []
    for part in _SEPARATORS.split(path):
        if part in ("", "."):
            continue
        if part == "..":
            return Denied(msg("files.path_dotdot", path=shown))
        parts.append(part)
    return RelativePath(tuple(parts))


def task_id_component_problem(task_id: str) -> str | None:
    """FIL-5: why `task_id` cannot be used as one path component, or None when it can.

    Refused: empty, ".", "..", any "/", "\\" or NUL, a control character, or longer than
    MAX_TASK_ID_BYTES bytes in UTF-8. The answer is a short English phrase for logs and
    adapter errors; reports use the `files.task_id_unusable` message."""
    if task_id in ("", ".", ".."):
        return "is empty or a dot name"
    if "/" in task_id or "\\" in task_id:
        return "contains a path separator"
    if "\x00" in task_id:
        return "contains a NUL byte"
    if _CONTROL.search(task_id):
        return "contains a control character"
    try:
        size = len(task_id.encode("utf-8"))
    except UnicodeEncodeError:
        return "is not valid Unicode text"
    if size > MAX_TASK_ID_BYTES:
        return f"is longer than {MAX_TASK_ID_BYTES} bytes"
    return None
