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
#   Rule 5: nothing in the state directory is opened through a symbolic link or when it
#           is not a regular file (`open_regular`: O_NOFOLLOW | O_NONBLOCK, then fstat):
#           a link is never followed out of the directory, a FIFO never blocks. Such a
#           record or log reads as CorruptStore (the supervisor quarantines its run).
#   Rule 6: a failed append leaves the log as it was (a partial line is cut off again);
#           a failed fsync removes every line written since the last good fsync. When
#           even that fails, the log is marked broken and refuses every later append,
#           so a fragment can only ever be the torn last line (Rule 3).
#   Rule 7: nothing is read whole without its size checked first (issue 37 item 7: a
#           1.5 GB sparse record took `dots serve` to 3.9 GB): a record is at most
#           MAX_RECORD_BYTES (checked with fstat before reading; a larger one is
#           CorruptStore naming its size, so its run is quarantined), and a log is read
#           as a stream, one line at a time, each line at most MAX_LINE_BYTES (a longer
#           one is a damaged line). What this store writes stays within both: a
#           notification too long for one line is kept as its head (`cut`: the
#           characters left out).
from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final, NoReturn

import attrs

from markertools import InvalidArgument
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
_RAW_KINDS: Final[frozenset[str]] = frozenset({"notification", "tuning", "outage"})
MAX_RECORD_BYTES: Final[int] = 64 * 1024 * 1024  # a run record (Rule 7)
MAX_LINE_BYTES: Final[int] = 16 * 1024 * 1024  # one line of a run's log (Rule 7)
MAX_NOTE_BYTES: Final[int] = 1024 * 1024  # a small file of the store (a quarantine note)


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
    """A run record or journal cannot be read back (not what the plan store wrote, or
    not a regular file); `path` names the file when known."""

    def __init__(self, message: str, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path


class StateDirUnwritable(PlanStoreError):
    """A write to the state directory failed (read-only, full, an I/O error): the
    directory cannot be created, the host lock taken, a record saved or a log line
    appended or fsynced. `undone` is True when nothing of the failed write remains in
    the log (it was cut off again), False when the log could not be repaired. `lost`
    is True when a failed fsync took every line written since the last good one with
    it (not only the failed write)."""

    def __init__(
        self, message: str, *, undone: bool = True, lost: bool = False, transient: bool = False
    ) -> None:
        super().__init__(message)
        self.undone = undone
        self.lost = lost
        # the directory may take the write again later (full, read-only, an I/O error)
        # and nothing of the failed write remains: worth retrying (FLT-3)
        self.transient = transient and undone


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


TRANSIENT_ERRNOS: Final[frozenset[int]] = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EPERM, errno.EACCES,
     errno.EAGAIN, errno.EINTR}
)  # a state directory that is full, read-only or failing now may not be so later


def transient(exc: OSError) -> bool:
    """Whether a failed write may succeed when tried again later (FLT-3)."""
    return exc.errno in TRANSIENT_ERRNOS


def why(exc: OSError) -> str:
    """An OSError as a person reads it: its strerror ("No space left on device")."""
    return exc.strerror or str(exc) or type(exc).__name__


def make_state_dir(root: str | os.PathLike[str]) -> Path:
    """`root` (with `~` expanded), created when missing: the directory itself mode 0700,
    missing parents with the default mode. Every command that creates a state
    directory goes through here (the supervisor and its host lock: `dots run`, `dots
    serve`; the inspection commands create none).

    Raises PlanStoreError (`root` is not a directory) or StateDirUnwritable (it cannot
    be created), one line each."""
    directory = Path(root).expanduser()
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    except FileExistsError:
        raise PlanStoreError(f"{directory}: exists and is not a directory") from None
    except OSError as exc:
        raise StateDirUnwritable(
            f"{directory}: the state directory cannot be created ({why(exc)})"
        ) from None
    return directory


def check_run_id(run_id: str) -> str:
    """Run ids become file names: letters, digits, '.', '_', '-' (no separators)."""
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id) or ".." in run_id:
        raise InvalidArgument(f"invalid run id {run_id!r}: use letters, digits, '.', '_' or '-'")
    return run_id


_NOFOLLOW: Final[int] = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK: Final[int] = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC: Final[int] = getattr(os, "O_CLOEXEC", 0)


def file_kind(mode: int) -> str:
    """What a file of this `st_mode` is, in words ("a symbolic link", "a FIFO")."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def not_regular(path: Path) -> str | None:
    """Why `path` must not be opened (Rule 5), or None for a regular file or nothing."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        with contextlib.suppress(OSError):  # readlink never opens the target
            return f"{path}: a symbolic link to {os.readlink(path)}, never followed"
    return f"{path}: {file_kind(mode)}, not a regular file (never opened)"


def open_regular(path: Path, flags: int, mode: int = 0o600) -> int:
    """Open a file of the state directory (Rule 5): never through a symbolic link
    (O_NOFOLLOW), never blocking (O_NONBLOCK: a FIFO opens at once), and only a regular
    file (fstat). Raises CorruptStore for anything else, OSError as usual otherwise
    (FileNotFoundError included)."""
    bad = not_regular(path)
    if bad is not None:
        raise CorruptStore(bad, path)
    try:
        fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, mode)
    except OSError as exc:  # replaced between lstat and open: say what it is now
        if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENXIO, errno.EISDIR):
            raise CorruptStore(not_regular(path) or f"{path}: {why(exc)}", path) from None
        raise
    try:
        kind = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(kind):
        os.close(fd)
        raise CorruptStore(f"{path}: {file_kind(kind)}, not a regular file (never opened)", path)
    return fd


def size_text(size: int) -> str:
    """A byte count for a person: "1.5 GB", "64 MiB" stays exact in the limits."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def read_regular(path: Path, limit: int) -> bytes:
    """All of a regular file of the state directory (see `open_regular`), when it is at
    most `limit` bytes (Rule 7: the size is checked before anything is read; a larger
    file is CorruptStore naming its size, never read)."""
    fd = open_regular(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            raise CorruptStore(
                f"{path}: {size_text(size)} ({size} bytes), more than the {limit} bytes "
                "this file may have (never read)",
                path,
            )
        return fh.read(limit + 1)


def log_lines(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """The lines of a run's log as a stream (Rule 7): (line number, the line without
    its newline, whether it ended with one). Only the last line can lack a newline (a
    torn append). A line longer than MAX_LINE_BYTES is CorruptStore (no more of it is
    read). Raises FileNotFoundError and OSError as `open_regular` does."""
    fd = open_regular(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as fh:
        number = 0
        while True:
            line = fh.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            number += 1
            if line.endswith(b"\n"):
                yield number, line[:-1], True
                continue
            if len(line) > MAX_LINE_BYTES:
                raise CorruptStore(
                    f"{path}: line {number} is longer than {MAX_LINE_BYTES} bytes, the most "
                    f"a line of a run's log may have (the log is {size_text(os.fstat(fh.fileno()).st_size)}; "
                    "the rest was not read)",
                    path,
                )
            yield number, line, False
            return


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


def write_new(path: Path, data: bytes) -> None:
    """Create `path` (mode 0600; never through a link: O_EXCL | O_NOFOLLOW), write all
    of `data`, fsync, close. A temp file of ours left by a crash (same name: pid and
    thread reused) is removed first; anything else in the way is an error."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        mode = os.lstat(path).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            raise
        path.unlink()  # a stale temp file, or a link in its place: never its target
        fd = os.open(path, flags, 0o600)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


@attrs.define
class _Log:
    """One run's open event log: its descriptor, the bytes this store has written
    (`end`), the part known durable (`synced`), and why it is broken (Rule 6)."""

    path: Path
    fd: int
    end: int
    synced: int
    broken: str | None = None


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

    def __init__(
        self, root: str | os.PathLike[str], *, probe: Probe | None = None, create: bool = True
    ) -> None:
        self.root = make_state_dir(root) if create else Path(root).expanduser()
        self._probe = probe or (lambda point: None)
        self._mutex = threading.Lock()
        self._logs: dict[str, _Log] = {}  # run id -> its log, open for appending

    def _log(self, run_id: str) -> _Log:
        """The run's event log, opened once for appending (O_APPEND; Rule 5: never
        through a link, only a regular file); `close()` closes them."""
        log = self._logs.get(run_id)
        if log is None:
            path = self.log_path(run_id)
            try:
                fd = open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
                size = os.fstat(fd).st_size
            except CorruptStore as exc:
                raise StateDirUnwritable(f"{exc}; the run's log cannot be appended") from None
            except OSError as exc:
                raise StateDirUnwritable(
                    f"{path}: cannot be opened ({why(exc)})", transient=transient(exc)
                ) from None
            log = self._logs[run_id] = _Log(path, fd, size, size)
        return log

    def close(self) -> None:
        """Close the open log descriptors (a store is usable again afterwards)."""
        logs, self._logs = self._logs, {}
        for log in logs.values():
            with contextlib.suppress(OSError):
                os.close(log.fd)

    def close_log(self, run_id: str) -> None:
        """Close the run's log descriptor, if open (it is opened again when needed)."""
        log = self._logs.pop(run_id, None)
        if log is not None:
            with contextlib.suppress(OSError):
                os.close(log.fd)

    def check_writable(self) -> None:
        """The directory takes a new file, its bytes and an fsync; raises
        StateDirUnwritable (one line) when it is read-only or full."""
        probe = self.root / f".run-writable.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            write_new(probe, b"\n" * 4096)
            probe.unlink()
        except OSError as exc:
            with contextlib.suppress(OSError):
                probe.unlink()
            raise StateDirUnwritable(
                f"{self.root}: the state directory is not writable ({why(exc)})"
            ) from None

    def record_path(self, run_id: str) -> Path:
        return self.root / f"run-{check_run_id(run_id)}.json"

    def log_path(self, run_id: str) -> Path:
        return self.root / f"run-{check_run_id(run_id)}.jsonl"

    def run_ids(self) -> list[str]:
        """The ids of every `run-<id>.json` entry, whatever it is (a directory or a link
        named so too: loading it then says what it is)."""
        ids = (p.name[4:-5] for p in self.root.glob("run-*.json"))
        return sorted(i for i in ids if _RUN_ID.match(i) and ".." not in i)

    def owner_hint(self, run_id: str) -> str | None:
        """The `owner` a run record names, read as plain JSON (for a record that no
        longer loads as a run); None when it cannot be read. Never raises."""
        try:
            raw = json.loads(read_regular(self.record_path(run_id), MAX_RECORD_BYTES))
        except Exception:
            return None
        owner = raw.get("owner") if isinstance(raw, dict) else None
        return owner if isinstance(owner, str) else None

    # ---- run records -------------------------------------------------------------

    def _encode(self, state: RunState) -> bytes:
        return (json.dumps(run_to_json(state), ensure_ascii=False, indent=1) + "\n").encode()

    def _write_temp(self, path: Path, data: bytes) -> Path:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        write_new(tmp, data)
        self._probe("record-written")
        return tmp

    def create(self, state: RunState) -> RunState:
        """Store a new run (revision 1); refuses an existing run id (RunExists), and
        raises StateDirUnwritable when the record cannot be written."""
        path = self.record_path(state.run_id)
        saved = attrs.evolve(state, revision=1)
        with self._mutex:
            tmp: Path | None = None
            try:
                tmp = self._write_temp(path, self._encode(saved))
                os.link(tmp, path)  # atomic, and fails when the run exists
            except FileExistsError:
                raise RunExists(f"run {state.run_id!r} already exists in {self.root}") from None
            except OSError as exc:
                raise StateDirUnwritable(f"{path}: cannot be written ({why(exc)})") from None
            finally:
                if tmp is not None:
                    with contextlib.suppress(OSError):
                        tmp.unlink(missing_ok=True)
            self._probe("record-replaced")
            with contextlib.suppress(OSError):  # the link is made; a lost dir fsync is a crash
                _fsync_dir(self.root)
        return saved

    def remove_new(self, run_id: str) -> bool:
        """Remove the files of a run this store has just created and that never
        started (its creation failed half-way); False when they could not be removed."""
        self.close_log(run_id)
        removed = True
        for path in (self.log_path(run_id), self.record_path(run_id)):
            try:
                path.unlink(missing_ok=True)
            except OSError:
                removed = False
        return removed

    def load(self, run_id: str) -> RunState:
        path = self.record_path(run_id)
        try:
            raw = read_regular(path, MAX_RECORD_BYTES)
        except FileNotFoundError:
            raise RunNotFound(f"no run {run_id!r} in {self.root}") from None
        except OSError as exc:
            raise CorruptStore(f"{path}: cannot be read ({why(exc)})", path) from None
        try:
            return run_from_json(json.loads(raw))
        except Exception as exc:  # malformed JSON or record: one line, never a traceback
            raise CorruptStore(f"{path}: not a valid run record ({_detail(exc)})", path) from None

    def save(self, state: RunState, expected_revision: int) -> RunState:
        """Compare-and-set (Rule 1): write `state` as revision expected+1 only when the
        stored record is still at `expected_revision`. Raises StateDirUnwritable when
        the record cannot be written (the old one stays)."""
        path = self.record_path(state.run_id)
        with self._mutex:
            current = self.load(state.run_id).revision
            if current != expected_revision:
                raise StaleRevision(
                    f"run {state.run_id!r} is at revision {current}, not {expected_revision}"
                )
            saved = attrs.evolve(state, revision=expected_revision + 1)
            tmp: Path | None = None
            try:
                tmp = self._write_temp(path, self._encode(saved))
                os.replace(tmp, path)
                tmp = None
                self._probe("record-replaced")
                _fsync_dir(self.root)
            except OSError as exc:
                raise StateDirUnwritable(f"{path}: cannot be saved ({why(exc)})") from None
            finally:
                if tmp is not None:
                    with contextlib.suppress(OSError):
                        tmp.unlink(missing_ok=True)
        return saved

    def remove_temp_files(self) -> int:
        """Delete temp files a crash left behind (call only while holding the lock):
        regular files and links of that name only (a link is removed, never its
        target); anything else is left where it is."""
        count = 0
        for p in self.root.glob(".run-*.tmp"):
            try:
                mode = os.lstat(p).st_mode
                if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
                    p.unlink(missing_ok=True)
                    count += 1
            except OSError:
                continue
        return count

    # ---- event log ---------------------------------------------------------------

    def _append(self, run_id: str, data: bytes) -> None:
        """Write one line at the end of the run's log, or raise StateDirUnwritable with
        the log as it was (Rule 6)."""
        log = self._log(run_id)
        if log.broken is not None:
            raise StateDirUnwritable(log.broken, undone=False)
        try:
            _write_all(log.fd, data)
        except OSError as exc:
            failure = f"{log.path}: cannot append ({why(exc)})"
            self._cut_back(
                log, log.end, failure, "what was written of the line", transient(exc)
            )
        log.end += len(data)

    def append_line(self, run_id: str, data: bytes) -> None:
        """Append one line made by `event_line` or `raw_line` (not fsynced; `sync_log`
        makes it durable). A failure raises StateDirUnwritable (`transient` when the
        directory may take it later) and leaves the log as it was (Rule 6)."""
        self._append(run_id, data)
        self._probe("log-appended")

    def _cut_back(
        self, log: _Log, size: int, failure: str, what: str, retry: bool = False
    ) -> NoReturn:
        """Cut the log back to `size` bytes after `failure` and raise it; when the cut
        fails too, the log is broken (it refuses every later append, Rule 6)."""
        try:
            if os.fstat(log.fd).st_size != size:
                os.ftruncate(log.fd, size)
                os.fsync(log.fd)
        except OSError as exc:
            log.broken = (
                f"{failure}; {what} could not be removed ({why(exc)}), so nothing more is "
                "appended to this log"
            )
            raise StateDirUnwritable(log.broken, undone=False) from None
        log.end = size
        raise StateDirUnwritable(failure, undone=True, transient=retry)

    def append_event(self, run_id: str, entry: LoggedEvent, *, sync: bool = True) -> None:
        """Append one event line; fsynced unless `sync` is False (then `sync_log`
        makes it durable later, before anything acts on it). A failure raises
        StateDirUnwritable and leaves the log as it was (Rule 6)."""
        self._append(run_id, event_line(entry))
        if sync:
            self._fsync(self._log(run_id))
        self._probe("log-appended")

    def sync_log(self, run_id: str) -> None:
        """fsync the run's event log: every line appended so far is durable. A failed
        fsync raises StateDirUnwritable after removing every line written since the
        last good one (Rule 6): what was not made durable is not left to replay."""
        self._fsync(self._log(run_id))
        self._probe("log-synced")

    def _fsync(self, log: _Log) -> None:
        if log.broken is not None:
            raise StateDirUnwritable(log.broken, undone=False)
        try:
            os.fsync(log.fd)
        except OSError as exc:
            what = "the lines written since the last good fsync"
            try:
                failure = f"{log.path}: fsync failed ({why(exc)})"
                self._cut_back(log, log.synced, failure, what, transient(exc))
            except StateDirUnwritable as cut:
                text = str(cut) if not cut.undone else f"{cut}; {what} were removed"
                raise StateDirUnwritable(
                    text, undone=cut.undone, lost=True, transient=cut.transient
                ) from None
        log.synced = log.end

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
        it. `read_events` skips these records. A notification whose line would be longer
        than MAX_LINE_BYTES is kept as its head, with `cut`: the characters left out
        (Rule 7)."""
        self._append(run_id, raw_line(kind, at, body))

    def read_raw(self, run_id: str, kind: str) -> list[Any]:
        """The bodies of the `kind` records of a run's log, in order (read as a stream,
        Rule 7)."""
        path = self.log_path(run_id)
        out: list[Any] = []
        try:
            for _, chunk, _ in log_lines(path):
                if not chunk.strip():
                    continue
                try:
                    obj = json.loads(chunk)
                except ValueError:
                    continue
                if isinstance(obj, dict) and kind in obj and "seq" not in obj:
                    out.append(obj[kind])
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise CorruptStore(f"{path}: cannot be read ({why(exc)})", path) from None
        return out

    def read_events(self, run_id: str, *, repair: bool = False) -> list[LoggedEvent]:
        """Every logged event in order, the log read as a stream (Rule 7). A torn last
        line is ignored, and cut off when `repair` (Rule 3); a damaged line elsewhere,
        or a line longer than MAX_LINE_BYTES, raises CorruptStore."""
        path = self.log_path(run_id)
        out: list[LoggedEvent] = []
        offset = 0
        try:
            for number, chunk, whole in log_lines(path):
                try:
                    if not whole:  # no newline: the append never finished
                        raise InvalidArgument("torn line")
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
                    if not whole:
                        if repair:
                            self._cut_torn_line(run_id, path, offset)
                        break
                    detail = f"{path}: line {number} is damaged ({_detail(exc)})"
                    raise CorruptStore(detail, path) from None
                offset += len(chunk) + 1
        except FileNotFoundError:
            return []
        except CorruptStore:
            raise
        except OSError as exc:
            raise CorruptStore(f"{path}: cannot be read ({why(exc)})", path) from None
        return out

    def _cut_torn_line(self, run_id: str, path: Path, size: int) -> None:
        self.close_log(run_id)  # its idea of the log's end is about to change
        try:
            fd = open_regular(path, os.O_WRONLY)
            try:
                os.ftruncate(fd, size)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StateDirUnwritable(
                f"{path}: its torn last line cannot be cut off ({why(exc)})", undone=False
            ) from None


def event_line(entry: LoggedEvent) -> bytes:
    """One event's line of a run's log."""
    line = {
        "seq": entry.seq,
        "at": entry.at,
        "outcome": entry.outcome,
        "event": event_to_json(entry.event),
    }
    return (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def raw_line(kind: str, at: float, body: Any) -> bytes:
    """A record that is not an event (`append_raw`), within MAX_LINE_BYTES (Rule 7)."""
    line: dict[str, Any] = {kind: body, "at": at}
    data = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    while len(data) > MAX_LINE_BYTES and isinstance(body, str):
        keep = len(line[kind]) * (MAX_LINE_BYTES - 4096) // len(data)
        line = {kind: body[:keep], "cut": len(body) - keep, "at": at}
        data = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    return data


def _detail(exc: BaseException) -> str:
    """Why a record or line does not decode, on one short line (cattrs' own paths)."""
    try:
        import cattrs

        if isinstance(exc, cattrs.BaseValidationError):
            text = "; ".join(cattrs.transform_error(exc)[:2])
            text = re.sub(r"unknown error \((.*)\) @ (\S+)", r"\2: \1", text)
            return " ".join(text.split())[:200]
    except Exception:
        pass
    return " ".join(str(exc).split())[:200]
