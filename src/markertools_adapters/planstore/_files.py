# Owns: the files of a plan state directory: run records (`run-<id>.json`, replaced
# atomically, compare-and-set on `revision`) and event logs (`run-<id>.jsonl`,
# append-only, fsynced), plus the store's errors. Never decides anything about a run.
#
# Invariants:
#   Rule 1: a record save is compare-and-set on the record's `revision`; a writer
#           holding a stale revision is refused (StaleRevision), never merged.
#   Rule 2: a record is written to a temp file in the same directory, fsynced, then
#           os.replace'd and the directory fsynced: readers see the old or the new
#           record, never a mix.
#   Rule 3: a torn last log line (a crash mid-append, never acknowledged) is ignored
#           and cut off on repair; a damaged line elsewhere is an error, never skipped.
#   Rule 4: run ids are safe file names; files are created mode 0600 (they hold user
#           task content), and the directory itself 0700 (`make_state_dir`, the one
#           place every command creates a state directory).
from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import attrs

from markertools.plans import (
    Event,
    RunState,
    event_from_json,
    event_to_json,
    run_from_json,
    run_to_json,
)
from markertools_adapters.errors import MarkertoolsError

DEFAULT_STATE_DIR: Final[str] = "~/.dsh/codex-dots/v2"
LOCK_NAME: Final[str] = "host.lock"
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")

Probe = Callable[[str], None]
_RAW_KINDS: Final[frozenset[str]] = frozenset({"notification", "tuning"})


class PlanStoreError(MarkertoolsError):
    """Base of every error this store raises (one-line messages)."""


class RunExists(PlanStoreError):
    """A run with this id already exists in the state directory."""

    pass


class RunNotFound(PlanStoreError):
    """No run with this id in the state directory."""

    pass


class StaleRevision(PlanStoreError):
    """The run changed since it was read (compare-and-set on its revision failed)."""

    pass


class CorruptStore(PlanStoreError):
    """A run record or journal cannot be read back (not what the plan store wrote)."""

    pass


class HostLockHeld(PlanStoreError):
    """Another live supervisor holds the state directory's `host.lock`."""

    def __init__(self, path: Path, pid: int | None, *, unreadable: bool = False) -> None:
        if unreadable:
            text = (
                f"{path} exists but names no process that can be checked; refusing to start "
                "(remove it only if no host is running)"
            )
        else:
            who = f"pid {pid}" if pid is not None else "another process"
            text = f"{path} is held by a live host ({who}); refusing to start a second one"
        super().__init__(text)
        self.pid = pid


def make_state_dir(root: str | os.PathLike[str]) -> Path:
    """`root` (with `~` expanded), created when missing: the directory itself mode 0700,
    missing parents with the default mode. Every command that works in a state
    directory goes through here (the supervisor, the host lock, `dots probe`)."""
    directory = Path(root).expanduser()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    return directory


def check_run_id(run_id: str) -> str:
    """Run ids become file names: letters, digits, '.', '_', '-' (no separators)."""
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id) or ".." in run_id:
        raise ValueError(f"invalid run id {run_id!r}: use letters, digits, '.', '_' or '-'")
    return run_id


def _fsync_dir(path: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _write_synced(path: Path, flags: int, data: bytes) -> None:
    """Open `path` (mode 0600 when created), write all of `data`, fsync, close."""
    fd = os.open(path, flags, 0o600)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


@attrs.frozen
class LoggedEvent:
    """One journal line: sequence number, time, the event and its outcome."""

    seq: int
    at: float
    outcome: str
    event: Event


class PlanStore:
    """Run records and event logs under `root` (created when missing, mode 0700).

    `probe` is called at named points of every write ("log-appended",
    "record-written", "record-replaced"); tests raise from it to simulate crashes."""

    def __init__(self, root: str | os.PathLike[str], *, probe: Probe | None = None) -> None:
        self.root = make_state_dir(root)
        self._probe = probe or (lambda point: None)
        self._mutex = threading.Lock()
        self._logs: dict[str, int] = {}  # run id -> an open append descriptor of its log

    def _log_fd(self, run_id: str) -> int:
        """The run's event log, opened once for appending (O_APPEND: every write lands
        at the end, whoever else appends); `close()` closes them."""
        fd = self._logs.get(run_id)
        if fd is None:
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
            fd = os.open(self.log_path(run_id), flags, 0o600)
            self._logs[run_id] = fd
        return fd

    def close(self) -> None:
        """Close the open log descriptors (a store is usable again afterwards)."""
        logs, self._logs = self._logs, {}
        for fd in logs.values():
            with contextlib.suppress(OSError):
                os.close(fd)

    def record_path(self, run_id: str) -> Path:
        return self.root / f"run-{check_run_id(run_id)}.json"

    def log_path(self, run_id: str) -> Path:
        return self.root / f"run-{check_run_id(run_id)}.jsonl"

    def run_ids(self) -> list[str]:
        ids = (p.name[4:-5] for p in self.root.glob("run-*.json"))
        return sorted(i for i in ids if _RUN_ID.match(i))

    # ---- run records -------------------------------------------------------------

    def _encode(self, state: RunState) -> bytes:
        return (json.dumps(run_to_json(state), ensure_ascii=False, indent=1) + "\n").encode()

    def _write_temp(self, path: Path, data: bytes) -> Path:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        _write_synced(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, data)
        self._probe("record-written")
        return tmp

    def create(self, state: RunState) -> RunState:
        """Store a new run (revision 1); refuses an existing run id (RunExists)."""
        path = self.record_path(state.run_id)
        saved = attrs.evolve(state, revision=1)
        with self._mutex:
            tmp = self._write_temp(path, self._encode(saved))
            try:
                os.link(tmp, path)  # atomic, and fails when the run exists
            except FileExistsError:
                raise RunExists(f"run {state.run_id!r} already exists in {self.root}") from None
            finally:
                tmp.unlink(missing_ok=True)
            self._probe("record-replaced")
            _fsync_dir(self.root)
        return saved

    def load(self, run_id: str) -> RunState:
        path = self.record_path(run_id)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise RunNotFound(f"no run {run_id!r} in {self.root}") from None
        try:
            return run_from_json(json.loads(raw))
        except Exception as exc:  # malformed JSON or record: one line, never a traceback
            detail = " ".join(str(exc).split())[:200]
            raise CorruptStore(f"{path}: not a valid run record ({detail})") from None

    def save(self, state: RunState, expected_revision: int) -> RunState:
        """Compare-and-set (Rule 1): write `state` as revision expected+1 only when the
        stored record is still at `expected_revision`."""
        path = self.record_path(state.run_id)
        with self._mutex:
            current = self.load(state.run_id).revision
            if current != expected_revision:
                raise StaleRevision(
                    f"run {state.run_id!r} is at revision {current}, not {expected_revision}"
                )
            saved = attrs.evolve(state, revision=expected_revision + 1)
            tmp = self._write_temp(path, self._encode(saved))
            os.replace(tmp, path)
            self._probe("record-replaced")
            _fsync_dir(self.root)
        return saved

    def remove_temp_files(self) -> int:
        """Delete temp files a crash left behind (call only while holding the lock)."""
        count = 0
        for p in self.root.glob(".run-*.tmp"):
            p.unlink(missing_ok=True)
            count += 1
        return count

    # ---- event log ---------------------------------------------------------------

    def append_event(self, run_id: str, entry: LoggedEvent, *, sync: bool = True) -> None:
        """Append one event line; fsynced unless `sync` is False (then `sync_log`
        makes it durable later, before anything acts on it)."""
        line = {
            "seq": entry.seq,
            "at": entry.at,
            "outcome": entry.outcome,
            "event": event_to_json(entry.event),
        }
        data = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        fd = self._log_fd(run_id)
        _write_all(fd, data)
        if sync:
            os.fsync(fd)
        self._probe("log-appended")

    def sync_log(self, run_id: str) -> None:
        """fsync the run's event log: every line appended so far is durable."""
        os.fsync(self._log_fd(run_id))
        self._probe("log-synced")

    def load_current(self, run_id: str) -> RunState:
        """The run as its journal holds it now: the record, then every logged event it
        has not applied yet (a live supervisor saves its record only now and then; the
        log is the truth). Read-only: a torn last line is ignored, nothing is repaired."""
        from markertools.plans import apply

        state = self.load(run_id)
        for entry in self.read_events(run_id):
            if entry.seq > state.log_seq:
                state = attrs.evolve(apply(state, entry.event, entry.at).state, log_seq=entry.seq)
        return state

    def append_raw(self, run_id: str, kind: str, at: float, body: Any) -> None:
        """Append a record that is not an event (DOT-2): `kind` "notification" (`body`:
        the app-server's line, verbatim, as a string) or "tuning" (`body`: the change).
        Not fsynced on its own (notifications are many); the next event's fsync covers
        it. `read_events` skips these records."""
        line = {kind: body, "at": at}
        data = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        _write_all(self._log_fd(run_id), data)

    def read_raw(self, run_id: str, kind: str) -> list[Any]:
        """The bodies of the `kind` records of a run's log, in order."""
        try:
            raw = self.log_path(run_id).read_bytes()
        except FileNotFoundError:
            return []
        out: list[Any] = []
        for chunk in raw.split(b"\n"):
            if not chunk.strip():
                continue
            try:
                obj = json.loads(chunk)
            except ValueError:
                continue
            if isinstance(obj, dict) and kind in obj and "seq" not in obj:
                out.append(obj[kind])
        return out

    def read_events(self, run_id: str, *, repair: bool = False) -> list[LoggedEvent]:
        """Every logged event in order. A torn last line is ignored, and cut off when
        `repair` (Rule 3); a damaged line elsewhere raises CorruptStore."""
        path = self.log_path(run_id)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return []
        out: list[LoggedEvent] = []
        offset = 0
        lines = raw.split(b"\n")
        for number, chunk in enumerate(lines, start=1):
            is_last = number == len(lines)
            if is_last and not chunk:
                break
            try:
                if is_last:  # no newline: the append never finished
                    raise ValueError("torn line")
                obj = json.loads(chunk)
                if isinstance(obj, dict) and "seq" not in obj and _RAW_KINDS & obj.keys():
                    offset += len(chunk) + 1
                    continue  # a notification or tuning record (append_raw)
                out.append(
                    LoggedEvent(
                        int(obj["seq"]),
                        float(obj["at"]),
                        str(obj.get("outcome", "")),
                        event_from_json(obj["event"]),
                    )
                )
            except Exception as exc:
                if is_last:
                    if repair:
                        with open(path, "r+b") as fh:
                            fh.truncate(offset)
                            fh.flush()
                            os.fsync(fh.fileno())
                    break
                detail = " ".join(str(exc).split())[:200]
                raise CorruptStore(f"{path}: line {number} is damaged ({detail})") from None
            offset += len(chunk) + 1
        return out
