"""The run-state store (markertools_adapters.planstore): atomic run records, the
append-only event log, the host lock, and crash-and-reload (PLN-6, PLN-9)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import attrs
import pytest
from support.paths import REPO
from support.strategies.plans import role_dict, run_of

from markertools.plans import (
    Applied,
    Dispatch,
    Duplicate,
    Event,
    Finish,
    Launch,
    NotifyResult,
    Refused,
    Resume,
    RunState,
    StartRun,
    TurnEnded,
    TurnStarted,
    apply,
    decision_ids_needed,
    due_notices,
    launch_payload,
    launchable,
)
from markertools_adapters import planstore
from markertools_adapters.planstore import (
    CorruptStore,
    HostLock,
    HostLockHeld,
    LoggedEvent,
    PlanStore,
    PlanStoreError,
    RunExists,
    RunJournal,
    RunNotFound,
    StaleRevision,
    check_run_id,
    pid_alive,
)
from markertools_adapters.planstore import _lock as lock_module

ROOT = REPO


def fresh_run() -> RunState:
    return run_of([role_dict("reader"), role_dict("fixer", ["reader"])])


# ---- records and log ---------------------------------------------------------------


def test_create_load_and_compare_and_set(tmp_path: Path) -> None:
    store = PlanStore(tmp_path / "state")
    saved = store.create(fresh_run())
    assert saved.revision == 1 and store.load("r1") == saved
    with pytest.raises(RunExists):
        store.create(fresh_run())
    step = apply(saved, StartRun("s"), 5.0)
    second = store.save(step.state, expected_revision=1)
    assert second.revision == 2 and store.load("r1") == second
    with pytest.raises(StaleRevision, match="revision 2, not 1"):
        store.save(step.state, expected_revision=1)  # a writer holding an old revision
    assert store.load("r1") == second
    with pytest.raises(RunNotFound):
        store.load("nope")
    assert store.run_ids() == ["r1"]
    mode = stat.S_IMODE(os.stat(store.record_path("r1")).st_mode)
    assert mode == 0o600


def test_record_is_json_with_camel_case(tmp_path: Path) -> None:
    store = PlanStore(tmp_path)
    store.create(fresh_run())
    record = json.loads(store.record_path("r1").read_text(encoding="utf-8"))
    assert record["runId"] == "r1" and record["proposal"]["maxTurns"] == 12
    assert record["roles"][1]["pendingInstruction"] == "first instruction of fixer"


@pytest.mark.parametrize("bad", ["../x", "a/b", "", ".hidden", "a\\b", "x" * 200, "a..b"])
def test_run_ids_are_safe_file_names(bad: str) -> None:
    with pytest.raises(ValueError):
        check_run_id(bad)
    assert check_run_id("run-2024.01_x") == "run-2024.01_x"


def test_corrupt_record_is_a_clear_error(tmp_path: Path) -> None:
    store = PlanStore(tmp_path)
    store.create(fresh_run())
    store.record_path("r1").write_text('{"runId": "r1"}', encoding="utf-8")
    with pytest.raises(CorruptStore, match="not a valid run record"):
        store.load("r1")


class Crash(Exception):
    pass


def test_crash_before_replace_keeps_old_record(tmp_path: Path) -> None:
    points: list[str] = []

    def probe(point: str) -> None:
        points.append(point)
        if point == "record-written" and len(points) > 2:
            raise Crash

    store = PlanStore(tmp_path, probe=probe)
    saved = store.create(fresh_run())
    with pytest.raises(Crash):
        store.save(apply(saved, StartRun("s"), 2.0).state, 1)
    assert PlanStore(tmp_path).load("r1") == saved  # old record intact
    assert list(tmp_path.glob(".run-*.tmp"))
    assert PlanStore(tmp_path).remove_temp_files() == 1


def test_torn_log_tail_is_cut_and_damaged_middle_refused(tmp_path: Path) -> None:
    store = PlanStore(tmp_path)
    store.create(fresh_run())
    store.append_event("r1", LoggedEvent(1, 1.0, "applied", StartRun("s")))
    store.append_event("r1", LoggedEvent(2, 2.0, "applied", Launch("l", "reader")))
    path = store.log_path("r1")
    good = path.read_bytes()
    path.write_bytes(good + b'{"seq":3,"at":3.0,"outcome":"app')  # crash mid-append
    assert [e.seq for e in store.read_events("r1")] == [1, 2]
    assert path.read_bytes() != good
    assert [e.seq for e in store.read_events("r1", repair=True)] == [1, 2]
    assert path.read_bytes() == good
    path.write_bytes(good.replace(b'"seq":1', b'"seq":1,,'))
    with pytest.raises(CorruptStore, match="line 1 is damaged"):
        store.read_events("r1")


def test_journal_needs_the_host_lock(tmp_path: Path) -> None:
    store = PlanStore(tmp_path / "a")
    lock = HostLock.acquire(tmp_path / "b")
    try:
        with pytest.raises(PlanStoreError, match="host lock"):
            RunJournal.create(store, lock, fresh_run())
    finally:
        lock.release()
    lock = HostLock.acquire(tmp_path / "a")
    lock.release()
    with pytest.raises(PlanStoreError, match="host lock"):
        RunJournal.create(store, lock, fresh_run())


@pytest.mark.rule("PLN-9")
def test_journal_logs_before_saving_and_skips_duplicates(tmp_path: Path) -> None:
    with planstore.host(tmp_path) as (store, lock):
        j = RunJournal.create(store, lock, fresh_run())
        assert isinstance(j.submit(StartRun("s"), 1.0).outcome, Applied)
        assert isinstance(j.submit(StartRun("s"), 1.0).outcome, Duplicate)
        assert isinstance(j.submit(Launch("x", "fixer"), 1.0).outcome, Refused)
        entries = store.read_events("r1")
        assert [(e.seq, e.outcome, e.event.event_id) for e in entries] == [
            (1, "applied", "s"),
            (2, "refused", "x"),
        ]
        assert store.load("r1").log_seq == 1 and j.state.revision == 2


# ---- host lock -----------------------------------------------------------------------

HOLDER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {src!r})
    from markertools_adapters.planstore import HostLock, HostLockHeld
    try:
        lock = HostLock.acquire(sys.argv[1])
    except HostLockHeld as exc:
        print("held", exc.pid, flush=True)
        sys.exit(3)
    print("locked", flush=True)
    sys.stdin.readline()
    if sys.argv[2] == "release":
        lock.release()
    """
).format(src=str(ROOT / "src"))


def spawn_holder(root: Path, mode: str = "release") -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    return proc


@pytest.mark.rule("PLN-6")
def test_second_live_host_refused_then_stale_lock_of_killed_host_taken_over(tmp_path: Path) -> None:
    proc = spawn_holder(tmp_path, mode="hold")
    try:
        with pytest.raises(HostLockHeld) as info:
            HostLock.acquire(tmp_path)
        assert info.value.pid == proc.pid
        assert f"pid {proc.pid}" in str(info.value)
        old = time.time() - 10 * 365 * 86400  # the lock never expires by time
        os.utime(tmp_path / "host.lock", (old, old))
        with pytest.raises(HostLockHeld):
            HostLock.acquire(tmp_path)
    finally:
        proc.kill()
        proc.wait()
    assert not pid_alive(proc.pid)
    assert (tmp_path / "host.lock").exists()  # left behind by the dead host
    with HostLock.acquire(tmp_path) as lock:
        assert lock.held and lock.previous_pid == proc.pid
        record = json.loads((tmp_path / "host.lock").read_text())
        assert record["pid"] == os.getpid()
    assert not (tmp_path / "host.lock").exists()


def test_released_lock_is_free_again(tmp_path: Path) -> None:
    proc = spawn_holder(tmp_path, mode="release")
    assert proc.stdin is not None
    proc.stdin.write("\n")
    proc.stdin.flush()
    assert proc.wait() == 0
    lock = HostLock.acquire(tmp_path)
    assert lock.previous_pid is None
    with pytest.raises(HostLockHeld):  # same process, second acquisition: refused too
        HostLock.acquire(tmp_path)
    lock.release()
    lock.release()  # idempotent


def test_only_one_of_many_racing_hosts_wins(tmp_path: Path) -> None:
    racer = textwrap.dedent(
        """
        import os, sys, time
        sys.path.insert(0, {src!r})
        from markertools_adapters.planstore import HostLock, HostLockHeld
        go = os.path.join(sys.argv[1], "go")
        while not os.path.exists(go):
            time.sleep(0.001)
        try:
            lock = HostLock.acquire(os.path.join(sys.argv[1], "state"))
        except HostLockHeld:
            print("lost", flush=True)
            sys.exit(0)
        print("won", flush=True)
        sys.stdin.readline()
        """
    ).format(src=str(ROOT / "src"))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", racer, str(tmp_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    (tmp_path / "go").write_text("")
    results = []
    for p in procs:
        assert p.stdout is not None
        results.append(p.stdout.readline().strip())
    for p in procs:
        assert p.stdin is not None
        p.stdin.close()
        p.wait()
    assert sorted(results) == ["lost", "lost", "lost", "won"]


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert not pid_alive(proc.pid)
    return proc.pid


@pytest.mark.parametrize("use_flock", [True, False])
def test_stale_lock_file_of_a_dead_pid_is_taken_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use_flock: bool
) -> None:
    if not use_flock:
        monkeypatch.setattr(lock_module, "_fcntl", None)
    pid = dead_pid()
    (tmp_path / "host.lock").write_text(json.dumps({"pid": pid, "host": "x"}))
    with HostLock.acquire(tmp_path) as lock:
        assert lock.previous_pid == pid
        with pytest.raises(HostLockHeld):
            HostLock.acquire(tmp_path)


def test_pid_fallback_refuses_live_and_unreadable_holders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lock_module, "_fcntl", None)
    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.readline()"], stdin=subprocess.PIPE
    )
    try:
        (tmp_path / "host.lock").write_text(json.dumps({"pid": sleeper.pid}))
        with pytest.raises(HostLockHeld) as info:
            HostLock.acquire(tmp_path)
        assert info.value.pid == sleeper.pid
    finally:
        sleeper.kill()
        sleeper.wait()
    (tmp_path / "host.lock").write_text("garbage")
    with pytest.raises(HostLockHeld, match="remove it only if no host is running"):
        HostLock.acquire(tmp_path)  # cannot tell who holds it: refuse (never guess)


# ---- crash and reload at every step ------------------------------------------------


class Transport:
    """The outside world: instructions sent to workers and notices to the main
    conversation. Sends survive a host crash (they already happened)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, int, str]] = []
        self.notified: list[str] = []


class Crasher:
    """Raises Crash at chosen global I/O points (store probes and the driver's sends)."""

    def __init__(self, at: set[int]) -> None:
        self.at = at
        self.count = 0
        self.log: list[str] = []

    def __call__(self, point: str) -> None:
        self.count += 1
        self.log.append(point)
        if self.count in self.at:
            raise Crash(point)


SCRIPT: list[Event] = [
    StartRun("start"),
    TurnStarted("ts-reader-1", "reader", "thr-r"),
    TurnEnded("te-reader-1", "reader", "d-r1", "found something"),
    Dispatch("dp-reader-1", "reader", "d-r1", "show the evidence"),
    TurnStarted("ts-reader-2", "reader"),
    TurnEnded("te-reader-2", "reader", "d-r2", "evidence: parse() line 40"),
    Finish("fin-reader", "reader", "bug in parse() line 40", "d-r2"),
    TurnStarted("ts-fixer-1", "fixer", "thr-f"),
    TurnEnded("te-fixer-1", "fixer", "d-f1", "fixed"),
    Finish("fin-fixer", "fixer", "parse() fixed, tests pass", "d-f1"),
]


def host_step(
    journal: RunJournal, world: Transport, crash: Crasher, event: Event, now: float
) -> None:
    """One iteration of a host loop: take an input event, then launch what is ready
    (persist, then send) and deliver due notices (send, then record)."""
    journal.submit(event, now)
    for name in launchable(journal.state):
        role = journal.state.role(name)
        assert role is not None
        step = journal.submit(Launch(f"launch:{name}:{role.turns + 1}", name), now)
        payload = launch_payload(step.state, name)
        if payload is not None:
            crash("before-send")
            world.sent.append((name, payload.turn, payload.instruction))
            crash("after-send")
    for notice in due_notices(journal.state, now):
        world.notified.append(notice.event_id)  # at-least-once: may repeat after a crash
        crash("notified")
        journal.submit(NotifyResult(f"nr:{notice.event_id}", notice.event_id, "delivered"), now)


def kill_host(lock: HostLock) -> None:
    """What the OS does when the host process dies: its descriptors close (the OS lock
    goes with them); nothing is unlinked or flushed by the dying process."""
    fd = lock._fd
    lock._fd = None
    if fd is not None:
        os.close(fd)


def play(
    root: Path, crash_at: set[int]
) -> tuple[RunJournal, Transport, Crasher, list[int], list[str]]:
    crash = Crasher(crash_at)
    world = Transport()
    restarts: list[int] = []
    acked: list[str] = []
    lock = HostLock.acquire(root)
    store = PlanStore(root, probe=crash)
    journal: RunJournal | None = None
    i = 0
    now = 1000.0
    while True:
        try:
            if journal is None:
                if "r1" in store.run_ids():
                    journal, _ = RunJournal.open(
                        store, lock, "r1", now=now, restart_event_id=f"restart-{len(restarts)}"
                    )
                else:
                    journal = RunJournal.create(store, lock, fresh_run())
            if i >= len(SCRIPT):
                break
            host_step(journal, world, crash, SCRIPT[i], now)
            acked.append(SCRIPT[i].event_id)
            i += 1  # acknowledged: the source will not deliver it again
            now += 1.0
        except Crash:
            restarts.append(crash.count)
            kill_host(lock)  # the process died: abandon every in-memory object
            journal = None
            lock = HostLock.acquire(root)
            assert lock.held  # the dead host's lock file is taken over
            store = PlanStore(root, probe=crash)
    lock.release()
    assert journal is not None
    return journal, world, crash, restarts, acked


def check_no_loss_no_duplicate(
    root: Path, journal: RunJournal, world: Transport, acked: list[str]
) -> None:
    store = PlanStore(root)
    entries = store.read_events("r1")
    applied_ids = [e.event.event_id for e in entries if e.outcome in ("applied", "dropped")]
    assert len(applied_ids) == len(set(applied_ids)), "an event was applied twice"
    for eid in acked:  # every acknowledged event is in the log (applied, dropped or refused)
        assert any(e.event.event_id == eid for e in entries), eid
    # the record agrees with a pure replay of the whole log
    state = fresh_run()
    for e in entries:
        state = apply(state, e.event, e.at).state
    disk = store.load("r1")
    assert attrs.evolve(disk, revision=0, log_seq=0, updated_at=0) == attrs.evolve(
        state, revision=0, log_seq=0, updated_at=0
    )
    assert disk == journal.state
    # never a duplicate dispatch: each (role, turn) and each instruction sent once
    assert len(world.sent) == len(set(world.sent))
    assert len({(r, t) for r, t, _ in world.sent}) == len(world.sent)
    assert len({text for _, _, text in world.sent}) == len(world.sent)


@pytest.mark.rule("PLN-6", "PLN-9")
def test_scripted_run_without_crash(tmp_path: Path) -> None:
    journal, world, crash, restarts, _ = play(tmp_path, set())
    assert restarts == [] and journal.state.status == "completed"
    assert world.sent == [
        ("reader", 1, "first instruction of reader"),
        ("reader", 2, "show the evidence"),
        ("fixer", 1, "first instruction of fixer"),
    ]
    check_no_loss_no_duplicate(tmp_path, journal, world, [e.event_id for e in SCRIPT])
    assert crash.count > 40


def baseline_points(tmp_path: Path) -> int:
    _, _, crash, _, _ = play(tmp_path / "baseline", set())
    return crash.count


@pytest.mark.slow
@pytest.mark.rule("PLN-6", "PLN-9")
def test_crash_and_reload_at_every_step(tmp_path: Path) -> None:
    total = baseline_points(tmp_path)
    outcomes: dict[str, int] = {"completed": 0, "paused": 0}
    for k in range(1, total + 1):
        root = tmp_path / f"crash-{k}"
        journal, world, crash, restarts, acked = play(root, {k})
        assert restarts == [k]
        check_no_loss_no_duplicate(root, journal, world, acked)
        state = journal.state
        interrupted = [r for r in state.roles if r.interrupted_instruction is not None]
        if state.status == "completed":
            outcomes["completed"] += 1
            assert not interrupted
            assert [r.conclusion for r in state.roles] == [
                "bug in parse() line 40",
                "parse() fixed, tests pass",
            ]
        else:  # a turn was live at the crash: paused, its instruction never re-sent
            outcomes["paused"] += 1
            assert state.status == "paused" and state.pause_reason == "host-restart", (
                k,
                crash.log[k - 1],
            )
            assert interrupted
            for r in interrupted:
                assert r.status == "paused"
                assert (
                    sum(
                        1
                        for name, _, text in world.sent
                        if name == r.name and text == r.interrupted_instruction
                    )
                    <= 1
                )
            # resuming asks for a decision; nothing is re-sent on its own
            ids = tuple((n, f"resume-{n}") for n in decision_ids_needed(state))
            resumed = apply(state, Resume("resume", ids), 5000.0).state
            assert {n for n in launchable(resumed)}.isdisjoint({r.name for r in interrupted})
    assert outcomes["completed"] > 0 and outcomes["paused"] > 0


@pytest.mark.slow
@pytest.mark.rule("PLN-6")
def test_crash_during_recovery_too(tmp_path: Path) -> None:
    total = baseline_points(tmp_path)
    for k in range(1, total + 1, 3):
        root = tmp_path / f"double-{k}"
        journal, world, _, restarts, acked = play(root, {k, k + 1, k + 2})
        assert len(restarts) >= 2
        check_no_loss_no_duplicate(root, journal, world, acked)
