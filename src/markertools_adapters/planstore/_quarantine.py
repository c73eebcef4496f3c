# Owns: the quarantine of a state directory (`<state>/quarantine/`): files a supervisor
# cannot use (a run record or log that does not read back, a link or a FIFO where a
# file should be) are moved there, each damaged run into its own entry
# `<UTC timestamp>-<file name>/` beside a `reason.json` note, and listed back for
# `dots status` and the supervisor. Never decides what is damaged (the store and the
# supervisor do); never deletes, never opens what it moves.
#
# Invariants:
#   Rule 1: a quarantine moves (os.rename: a link is moved as a link, a directory or
#           FIFO as itself), never copies, opens or deletes what it moves.
#   Rule 2: `quarantine/` must be a real directory (not a link): files are never moved
#           to a place outside the state directory.
#   Rule 3: listing is read-only and never opens anything but a regular `reason.json`;
#           an entry whose note cannot be read is still listed.
from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from markertools import InvalidArgument
from markertools_adapters.planstore._files import (
    MAX_NOTE_BYTES,
    PlanStoreError,
    StateDirUnwritable,
    _fsync_dir,
    file_kind,
    read_regular,
    why,
    write_new,
)

QUARANTINE_DIR: Final[str] = "quarantine"
NOTE: Final[str] = "reason.json"


@attrs.frozen
class Quarantined:
    """One entry of the quarantine: `file` could not be used because of `reason`; it
    was moved (with `files`, the run's other files) into `moved_to` at `at` (epoch
    seconds). `owner` and `run_id` are known when the record still named them."""

    file: str
    reason: str
    at: float
    moved_to: str
    files: tuple[str, ...] = ()
    owner: str | None = None
    run_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "reason": self.reason,
            "at": self.at,
            "movedTo": self.moved_to,
            "files": list(self.files),
            "owner": self.owner,
            "runId": self.run_id,
        }


def _base(root: Path) -> Path:
    """`root/quarantine`, created 0700 when missing; refuses a link or a non-directory
    there (Rule 2)."""
    base = root / QUARANTINE_DIR
    try:
        mode = os.lstat(base).st_mode
    except FileNotFoundError:
        try:
            base.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise StateDirUnwritable(f"{base}: cannot be created ({why(exc)})") from None
        mode = os.lstat(base).st_mode
    if not stat.S_ISDIR(mode):
        raise PlanStoreError(
            f"{base}: {file_kind(mode)}, not a directory; move it away so damaged files "
            "can be set aside there"
        )
    return base


def quarantine(
    root: Path,
    names: Sequence[str],
    *,
    file: str,
    reason: str,
    now: float,
    owner: str | None = None,
    run_id: str | None = None,
) -> Quarantined:
    """Move the entries `names` of `root` into a new quarantine entry with a note
    saying `reason` (Rule 1). Raises StateDirUnwritable (one line) when they cannot
    be moved; what was moved already stays moved and noted."""
    base = _base(root)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    entry = base / f"{stamp}-{file}"
    n = 1
    while True:
        try:
            entry.mkdir(mode=0o700)
            break
        except FileExistsError:
            n += 1
            entry = base / f"{stamp}-{file}-{n}"
        except OSError as exc:
            raise StateDirUnwritable(f"{entry}: cannot be created ({why(exc)})") from None
    moved: list[str] = []
    failure: str | None = None
    for name in names:
        try:
            os.rename(root / name, entry / name)
            moved.append(name)
        except FileNotFoundError:
            continue
        except OSError as exc:
            failure = f"{root / name}: cannot be moved to {entry} ({why(exc)})"
            break
    found = Quarantined(file, reason, now, str(entry), tuple(moved), owner, run_id)
    note = json.dumps(found.to_json(), ensure_ascii=False, indent=1) + "\n"
    try:
        write_new(entry / NOTE, note.encode())
        for directory in (entry, base, root):
            _fsync_dir(directory)
    except OSError as exc:
        failure = failure or f"{entry / NOTE}: cannot be written ({why(exc)})"
    if failure is not None:
        raise StateDirUnwritable(failure)
    return found


def quarantined(root: Path) -> list[Quarantined]:
    """Every entry of `root/quarantine`, oldest first (read-only, Rule 3)."""
    base = root / QUARANTINE_DIR
    try:
        if not stat.S_ISDIR(os.lstat(base).st_mode):
            return []
        entries = sorted(base.iterdir(), key=lambda p: p.name)
    except OSError:
        return []
    out: list[Quarantined] = []
    for entry in entries:
        with contextlib.suppress(OSError):
            if not stat.S_ISDIR(os.lstat(entry).st_mode):
                continue
        out.append(_read_note(entry))
    return sorted(out, key=lambda q: (q.at, q.moved_to))


def _read_note(entry: Path) -> Quarantined:
    try:
        raw = json.loads(read_regular(entry / NOTE, MAX_NOTE_BYTES))
        if not isinstance(raw, dict):
            raise InvalidArgument("not an object")
        files = raw.get("files")
        return Quarantined(
            file=str(raw["file"]),
            reason=str(raw["reason"]),
            at=float(raw["at"]),
            moved_to=str(entry),
            files=tuple(str(f) for f in files) if isinstance(files, list) else (),
            owner=raw["owner"] if isinstance(raw.get("owner"), str) else None,
            run_id=raw["runId"] if isinstance(raw.get("runId"), str) else None,
        )
    except Exception:
        try:
            at = os.lstat(entry).st_mtime
        except OSError:
            at = 0.0
        return Quarantined(entry.name, f"{entry / NOTE} cannot be read", at, str(entry))
