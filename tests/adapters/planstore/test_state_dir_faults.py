"""The run-state store against a hostile or failing state directory (issue 26): a link
or a FIFO where a run file should be is never followed or opened; a link at a temp file
or lock name is never written through; an append that fails half-way leaves the log and
the journal as they were; an fsync that fails fails the journal and says whether its
unsynced lines are gone; a checkpoint that fails is retried after more events, not in a
loop. Faults are real (links, FIFOs, file-size limits, a disk that answers EIO)."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import resource
import threading
from pathlib import Path

import pytest
from support.statedir import failing_disk, immutable
from support.strategies.plans import role_dict, run_of

from markertools.plans import Cancel, Dispatch, Pause, RunState, StartRun
from markertools_adapters import planstore
from markertools_adapters.planstore import (
    CorruptStore,
    HostLock,
    PlanStore,
    RunJournal,
    StateDirUnwritable,
    _files,
    quarantined,
)


def fresh_run() -> RunState:
    return run_of([role_dict("reader"), role_dict("fixer", ["reader"])])


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.rule("DOT-2")
def test_a_linked_record_or_log_is_never_followed(tmp_path: Path) -> None:
    root = tmp_path / "state"
    outside = tmp_path / "outside.txt"
    outside.write_text("not yours\n")
    before = digest(outside)
    passwd = digest(Path("/etc/passwd"))
    with planstore.host(root) as (store, lock):
        RunJournal.create(store, lock, fresh_run())
        (root / "run-x.json").symlink_to("/etc/passwd")
        with pytest.raises(CorruptStore) as record:
            store.load("x")
        assert str(record.value) == f"{root}/run-x.json: a symbolic link to /etc/passwd, never followed"
        store.log_path("r1").symlink_to(outside)
        with pytest.raises(CorruptStore) as log:
            store.read_events("r1")
        assert str(log.value) == f"{root}/run-r1.jsonl: a symbolic link to {outside}, never followed"
        with pytest.raises(StateDirUnwritable) as append:
            store.append_raw("r1", "tuning", 1.0, {"worker": "reader"})
        assert str(append.value) == (
            f"{root}/run-r1.jsonl: a symbolic link to {outside}, never followed; the run's log "
            "cannot be appended"
        )
    assert digest(outside) == before and digest(Path("/etc/passwd")) == passwd


@pytest.mark.rule("DOT-2")
def test_a_fifo_or_a_directory_is_never_opened(tmp_path: Path) -> None:
    store = PlanStore(tmp_path)
    os.mkfifo(tmp_path / "run-fifo.json")  # opened for reading, it would wait for a writer
    (tmp_path / "run-dir.json").mkdir()
    os.mkfifo(tmp_path / "run-r1.jsonl")
    with pytest.raises(CorruptStore) as fifo:
        store.load("fifo")
    assert str(fifo.value) == f"{tmp_path}/run-fifo.json: a FIFO, not a regular file (never opened)"
    with pytest.raises(CorruptStore) as folder:
        store.load("dir")
    assert str(folder.value) == f"{tmp_path}/run-dir.json: a directory, not a regular file (never opened)"
    fifo_log = f"{tmp_path}/run-r1.jsonl: a FIFO, not a regular file (never opened)"
    for read in (lambda: store.read_events("r1"), lambda: store.read_raw("r1", "notification")):
        with pytest.raises(CorruptStore) as log:
            read()
        assert str(log.value) == fifo_log
    assert store.run_ids() == ["dir", "fifo"]


@pytest.mark.rule("DOT-2")
def test_a_link_at_a_temp_file_name_is_replaced_not_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    store = PlanStore(tmp_path / "state")
    saved = store.create(fresh_run())
    temp = store.root / f".run-r1.json.{os.getpid()}.{threading.get_ident()}.tmp"
    temp.symlink_to(victim)
    store.save(saved, saved.revision)
    assert victim.read_text() == "keep me\n"
    assert not temp.exists() and not temp.is_symlink()
    assert store.load("r1").revision == 2


@pytest.mark.rule("DOT-1")
def test_a_linked_host_lock_is_set_aside_never_written_through(tmp_path: Path) -> None:
    root = tmp_path / "state"
    root.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (root / "host.lock").symlink_to(victim)
    lock = HostLock.acquire(root)
    try:
        assert victim.read_text() == "keep me\n"
        assert not (root / "host.lock").is_symlink()
        (entry,) = quarantined(root)
        assert entry.file == "host.lock"
        assert entry.reason == f"a symbolic link to {victim}, never followed"
        assert os.readlink(Path(entry.moved_to) / "host.lock") == str(victim)  # moved, intact
    finally:
        lock.release()


@pytest.mark.rule("DOT-1")
def test_an_append_that_fails_half_way_changes_nothing(tmp_path: Path) -> None:
    """A line cut short by the file-size limit (a real partial write, then EFBIG): the
    fragment is cut off again, the journal's state and sequence stay as they were, and
    the next event continues the log as if the failure had not happened."""
    with planstore.host(tmp_path) as (store, lock):
        journal = RunJournal.create(store, lock, fresh_run())
        journal.submit(StartRun("s"), 1.0)
        log_path = store.log_path("r1")
        before_bytes = log_path.read_bytes()
        before_state = journal.state
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (len(before_bytes) + 40, hard))
        try:
            with pytest.raises(StateDirUnwritable) as failed:
                journal.submit(Dispatch("d", "reader", "no-such-decision", "x" * 500), 2.0)
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        assert str(failed.value) == f"{log_path}: cannot append (File too large)"
        assert failed.value.undone and journal.failed is None
        assert log_path.read_bytes() == before_bytes  # the partial line is gone again
        assert journal.state is before_state
        journal.submit(Pause("p"), 3.0)
        assert [e.seq for e in store.read_events("r1")] == [1, 2]
        assert journal.state.status == "paused"
    with planstore.host(tmp_path) as (store, lock):
        reloaded, _ = RunJournal.open(store, lock, "r1", now=4.0, restart_event_id="h")
        assert reloaded.state.status == "paused" and "d" not in reloaded.state.seen_events


@pytest.mark.rule("DOT-1")
def test_an_fsync_that_fails_fails_the_journal_and_says_its_lines_may_remain(
    tmp_path: Path,
) -> None:
    """A real EIO: ext4 on a loop device whose backing store fills up. The unsynced
    lines cannot be cut off (the file system turned read-only), so the journal is failed
    and says so; it refuses every later event and saves nothing."""
    with failing_disk(tmp_path) as (mnt, fail):
        root = mnt / "state"
        with planstore.host(root) as (store, lock):
            journal = RunJournal.create(store, lock, fresh_run())
            journal.submit(StartRun("s"), 1.0, durable=False)
            journal.sync()
            journal.submit(Pause("p"), 1.5, durable=False)
            assert journal.state.status == "paused"  # in memory, not durable yet
            for n in range(200):  # enough unsynced data for the disk to need new blocks
                journal.submit(Dispatch(f"d{n}", "reader", "none", "y" * 2000), 2.0, durable=False)
            fail()
            with pytest.raises(StateDirUnwritable) as failed:
                journal.sync()
            log_path = store.log_path("r1")
            # the kernel says EIO or ENOSPC for the lost blocks, then EIO or EROFS
            assert re.fullmatch(
                re.escape(f"{log_path}: fsync failed (")
                + r"(Input/output error|No space left on device)\); the lines written since "
                r"the last good fsync could not be removed \((Input/output error|Read-only file "
                r"system)\), so nothing more is appended to this log",
                str(failed.value),
            ), failed.value
            assert not failed.value.undone
            assert journal.failed == str(failed.value)
            with pytest.raises(StateDirUnwritable, match="fsync failed"):
                journal.submit(Pause("p2"), 3.0)
            with pytest.raises(StateDirUnwritable, match="fsync failed"):
                journal.sync(checkpoint=True)
            # memory is back at the last good fsync: the pause is not in it
            assert journal.state.status == "running"


@pytest.mark.rule("DOT-1", "FLT-3")
def test_an_fsync_that_fails_removes_the_unsynced_lines_and_keeps_them_for_a_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other outcome of a failed fsync, when the file system still takes the cut (an
    fsync error that leaves the disk writable cannot be made for real here, so os.fsync
    fails once for the log, by a patch): the lines written since the last good fsync are
    removed from the log, so a reload never replays what was not durable; since FLT-3
    (an I/O error may pass) the journal keeps them in memory (`pending`: nothing may act
    on them meanwhile) and the next sync writes them again."""
    with planstore.host(tmp_path) as (store, lock):
        journal = RunJournal.create(store, lock, fresh_run())
        journal.submit(StartRun("s"), 1.0, durable=False)
        journal.sync()
        log_path = store.log_path("r1")
        synced = log_path.read_bytes()
        journal.submit(Pause("p"), 2.0, durable=False)
        written = log_path.read_bytes()
        assert written != synced
        real_fsync = os.fsync
        calls = {"n": 0}

        def fsync_fails_once(fd: int) -> None:
            calls["n"] += 1
            if calls["n"] == 1:
                raise OSError(5, "Input/output error")
            real_fsync(fd)

        monkeypatch.setattr(_files.os, "fsync", fsync_fails_once)
        with pytest.raises(StateDirUnwritable) as failed:
            journal.sync()
        monkeypatch.setattr(_files.os, "fsync", real_fsync)
        assert failed.value.undone and failed.value.transient
        assert str(failed.value) == (
            f"{log_path}: fsync failed (Input/output error); the lines written since the last "
            "good fsync were removed"
        )
        assert log_path.read_bytes() == synced  # not on disk: a reload now replays none of it
        assert journal.failed is None and journal.pending
        assert journal.state.status == "paused"  # kept in memory, waiting to be written
        journal.sync()  # the disk takes it again: written once more, fsynced
        assert not journal.pending
        assert log_path.read_bytes() == written
    with planstore.host(tmp_path) as (store, lock):
        reloaded, _ = RunJournal.open(store, lock, "r1", now=3.0, restart_event_id="h")
        assert reloaded.state.status == "paused"  # the pause, durable at last, replays


@pytest.mark.rule("DOT-1", "DOT-11")
def test_a_checkpoint_that_fails_is_retried_after_more_events_not_in_a_loop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The directory takes no new file (immutable), the open log still takes lines: every
    event stays durable in the log, the record is not saved, one warning says so, and
    syncing again does not try again until CHECKPOINT_EVERY more events."""
    caplog.set_level(logging.WARNING, logger="markertools.planstore")
    root = tmp_path / "state"
    with planstore.host(root) as (store, lock):
        journal = RunJournal.create(store, lock, fresh_run())
        journal.submit(StartRun("s"), 1.0, durable=False)
        journal.sync()  # the log is open from here on
        record = store.record_path("r1")
        with immutable(root, record):
            journal.submit(Cancel("c"), 2.0, durable=False)  # finished: every sync would save
            for _ in range(5):
                journal.sync()
            assert journal.checkpoint_error is not None
            assert journal.checkpoint_error.startswith(f"{record}: cannot be saved (")
        warnings = [r.getMessage() for r in caplog.records]
        assert len(warnings) == 1
        assert warnings[0].startswith("run r1: the record could not be saved (")
        assert warnings[0].endswith(
            "; its log holds every event, the save is tried again after 64 more events"
        )
        assert store.load("r1").status == "ready"  # the record: the checkpoint before
        assert store.load_current("r1").status == "cancelled"  # the log: the truth
    with planstore.host(root) as (store, lock):
        reloaded, _ = RunJournal.open(store, lock, "r1", now=3.0, restart_event_id="h")
        assert reloaded.state.status == "cancelled"
        assert store.load("r1").status == "cancelled"  # the reload saved the replayed tail
