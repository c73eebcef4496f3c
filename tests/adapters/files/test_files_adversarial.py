"""Adversarial task-files reads against real filesystems: symlinks out of the worktree,
loops, prefix-sharing siblings, components swapped for symlinks while reads run, FIFOs,
device files, a 50 MB file and non-UTF-8 names. A unique secret lives outside the
worktree; no answer may ever contain it (FIL-4, FIL-5)."""

from __future__ import annotations

import os
import stat
import threading
import tracemalloc
from pathlib import Path

import pytest
from support.strategies.files import (
    SECRET,
    answer_text,
    files,
    make_root,
    make_worktree,
    refused_key,
    task,
)

from markertools.domain.ports import FileAnswer, FileListing, FileRefused, FileText
from markertools_adapters.worktrees import WorktreeFiles

SWAP_ITERATIONS = 3000


def _no_leak(answer: FileAnswer) -> None:
    assert SECRET not in answer_text(answer)


# ---- symlinks out of the worktree -------------------------------------------------------


@pytest.mark.rule("FIL-4")
@pytest.mark.parametrize("absolute", [False, True])
def test_symlinked_file_pointing_outside(tmp_path: Path, absolute: bool) -> None:
    root, outside = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    target = outside / "secret.txt"
    (wt / "leak.txt").symlink_to(target if absolute else os.path.relpath(target, wt))
    (wt / "root-leak").symlink_to("../../secret-at-root.txt")
    (wt / "etc").symlink_to("/etc/passwd")
    for path in ("leak.txt", "root-leak", "etc"):
        answer = files(root).read(task("t1"), path, 20000)
        assert refused_key(answer) == "files.symlink_outside"
        _no_leak(answer)


@pytest.mark.rule("FIL-4")
@pytest.mark.parametrize("absolute", [False, True])
def test_symlinked_directory_pointing_outside(tmp_path: Path, absolute: bool) -> None:
    root, outside = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    (wt / "inner").mkdir()
    target = outside / "sub"
    link = wt / "inner" / "out"
    link.symlink_to(target if absolute else os.path.relpath(target, link.parent))
    for path in ("inner/out", "inner/out/file.txt", "inner/out/"):
        answer = files(root).read(task("t1"), path, 20000)
        assert refused_key(answer) == "files.symlink_outside"
        _no_leak(answer)
    # the link itself is listed (as a plain name), never followed for classification
    assert files(root).read(task("t1"), "inner", 100) == FileListing(("out",), 0)


@pytest.mark.rule("FIL-4")
def test_symlink_that_climbs_out_and_back_in_is_refused(tmp_path: Path) -> None:
    """`../t1/x` leaves the worktree before re-entering it: refused (the walk never
    looks above the worktree, even transiently)."""
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    (wt / "x").write_text("inside")
    (wt / "round-trip").symlink_to("../t1/x")
    assert refused_key(files(root).read(task("t1"), "round-trip", 100)) == "files.symlink_outside"


@pytest.mark.rule("FIL-4")
def test_symlink_loops(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    (wt / "self").symlink_to("self")
    (wt / "a").symlink_to("b")
    (wt / "b").symlink_to("a")
    (wt / "dir").mkdir()
    (wt / "dir" / "again").symlink_to("../dir/again")
    (wt / "deep").symlink_to(".")  # not a loop by itself: deep/deep/... is finite per path
    for path in ("self", "a", "b", "dir/again", "a/x"):
        assert refused_key(files(root).read(task("t1"), path, 100)) == "files.symlink_loop"
    chain = "/".join(["deep"] * 41)
    assert refused_key(files(root).read(task("t1"), chain, 100)) == "files.symlink_loop"
    assert isinstance(files(root).read(task("t1"), "/".join(["deep"] * 40), 100), FileListing)


@pytest.mark.rule("FIL-4", "FIL-5")
def test_sibling_sharing_the_worktree_name_prefix(tmp_path: Path) -> None:
    """`wt` and `wt_evil`: a lexical prefix check without a separator would let an
    absolute link from wt into wt_evil pass."""
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "wt")
    evil = make_worktree(root, "wt_evil")
    (evil / "loot.txt").write_text(SECRET)
    (wt / "link").symlink_to(evil / "loot.txt")
    (wt / "rel").symlink_to("../wt_evil/loot.txt")
    for path in ("link", "rel"):
        answer = files(root).read(task("wt"), path, 100)
        assert refused_key(answer) == "files.symlink_outside"
        _no_leak(answer)
    answer = files(root).read(task("wt", worktree=str(evil)), "loot.txt", 100)
    assert refused_key(answer) == "files.worktree_not_own"
    _no_leak(answer)
    # and the legitimate owner can read it
    assert isinstance(files(root).read(task("wt_evil"), "loot.txt", 100), FileText)


# ---- swapping components while reads run ----------------------------------------------


def _swapper(wt: Path, outside: Path, stop: threading.Event, errors: list[BaseException]) -> None:
    """Swap `sub` (a directory) and `f.txt` (a file) for symlinks to outside, absolute and
    relative in turn, and back, until stopped."""
    rel_sub = os.path.relpath(outside / "sub", wt)
    rel_file = os.path.relpath(outside / "secret.txt", wt)
    targets = [(str(outside / "sub"), str(outside / "secret.txt")), (rel_sub, rel_file)]
    turn = 0
    try:
        while not stop.is_set():
            sub_target, file_target = targets[turn % 2]
            turn += 1
            os.rename(wt / "sub", wt / "sub.real")
            os.symlink(sub_target, wt / "sub")
            os.rename(wt / "f.txt", wt / "f.real")
            os.symlink(file_target, wt / "f.txt")
            os.unlink(wt / "sub")
            os.rename(wt / "sub.real", wt / "sub")
            os.unlink(wt / "f.txt")
            os.rename(wt / "f.real", wt / "f.txt")
    except BaseException as exc:  # surfaced by the test
        errors.append(exc)


# the paths the component-swap races read, and what an answer may hold
SUB_PATHS: tuple[str | None, ...] = ("sub/file.txt", "f.txt", "sub")
SUB_TEXTS = ("inside sub\n", "inside file\n")
SUB_LISTINGS: tuple[tuple[str, ...], ...] = (("file.txt",), ())


def _sub_worktree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(root, outside, worktree of t1) with `sub/file.txt` and `f.txt` for the races."""
    root, outside = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    (wt / "sub").mkdir()
    (wt / "sub" / "file.txt").write_text(SUB_TEXTS[0])
    (wt / "f.txt").write_text(SUB_TEXTS[1])
    return root, outside, wt


def _classify_reads(
    reader: WorktreeFiles,
    paths: tuple[str | None, ...],
    texts: tuple[str, ...],
    listings: tuple[tuple[str, ...], ...],
    seen: dict[str, int],
) -> None:
    """One read of each path during a swap race: never a leak, only the expected text or
    listing when it answers, and the outcome (or refusal key) counted in `seen`."""
    for path in paths:
        answer = reader.read(task("t1"), path, 20000)
        _no_leak(answer)
        if isinstance(answer, FileText):
            assert answer.text in texts
            outcome = "text"
        elif isinstance(answer, FileListing):
            assert answer.entries in listings
            outcome = "listing"
        else:
            outcome = answer.reason.key
        seen[outcome] = seen.get(outcome, 0) + 1


@pytest.mark.rule("FIL-4")
@pytest.mark.slow
def test_components_swapped_for_symlinks_never_leak(tmp_path: Path) -> None:
    root, outside, wt = _sub_worktree(tmp_path)
    reader = files(root)
    stop = threading.Event()
    errors: list[BaseException] = []
    thread = threading.Thread(target=_swapper, args=(wt, outside, stop, errors))
    seen: dict[str, int] = {}
    thread.start()
    try:
        for i in range(SWAP_ITERATIONS):
            _classify_reads(reader, SUB_PATHS, SUB_TEXTS, SUB_LISTINGS, seen)
            if i == 0:
                assert not errors
    finally:
        stop.set()
        thread.join()
    assert not errors, errors
    allowed = {
        "text",
        "listing",
        "files.symlink_outside",
        "files.changed",
        "files.not_found",
        "files.not_a_directory",
    }
    assert set(seen) <= allowed, seen


def _swap_worktree_location(
    root: Path, outside: Path, stop: threading.Event, errors: list[BaseException]
) -> None:
    """Swap the task's worktree directory, then the whole `host-worktrees/` layout
    directory, for symbolic links to look-alike directories outside holding SECRET."""
    layout = root / "host-worktrees"
    fake_wt = outside / "fake-wt"
    fake_layout = outside / "fake-layout"
    try:
        while not stop.is_set():
            os.rename(layout / "t1", layout / "t1.real")
            os.symlink(fake_wt, layout / "t1")
            os.unlink(layout / "t1")
            os.rename(layout / "t1.real", layout / "t1")
            os.rename(layout, root / "host-worktrees.real")
            os.symlink(fake_layout, layout)
            os.unlink(layout)
            os.rename(root / "host-worktrees.real", layout)
    except BaseException as exc:  # surfaced by the test
        errors.append(exc)


@pytest.mark.rule("FIL-4", "FIL-5")
@pytest.mark.slow
def test_worktree_location_swapped_for_symlinks_never_leaks(tmp_path: Path) -> None:
    """The worktree directory itself (and the layout directory above it) swapped for a
    symlink while reads run: the resolver opens them with O_NOFOLLOW, so a read answers
    from the real worktree or is refused, never from the look-alike outside."""
    root, outside = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    (wt / "f.txt").write_text("inside file\n")
    for fake in (outside / "fake-wt", outside / "fake-layout" / "t1"):
        fake.mkdir(parents=True)
        (fake / "f.txt").write_text(SECRET + " look-alike\n")
    reader = files(root)
    stop = threading.Event()
    errors: list[BaseException] = []
    thread = threading.Thread(target=_swap_worktree_location, args=(root, outside, stop, errors))
    seen: dict[str, int] = {}
    thread.start()
    try:
        for _ in range(SWAP_ITERATIONS):
            _classify_reads(reader, ("f.txt", None), ("inside file\n",), (("f.txt",),), seen)
    finally:
        stop.set()
        thread.join()
    assert not errors, errors
    allowed = {"text", "listing", "files.worktree_not_dir", "files.no_local_worktree"}
    assert set(seen) <= allowed, seen


# A swapper in another process (true parallelism, no GIL hand-offs): it swaps `sub` and
# `f.txt` for symlinks to outside and back until the stop file appears; it prints
# "ready" once the first swap cycle is done.
_SWAPPER_PROCESS = """
import os, sys
wt, outside, stop = sys.argv[1:4]
sub, f = os.path.join(wt, "sub"), os.path.join(wt, "f.txt")
targets = [
    (os.path.join(outside, "sub"), os.path.join(outside, "secret.txt")),
    (os.path.relpath(os.path.join(outside, "sub"), wt),
     os.path.relpath(os.path.join(outside, "secret.txt"), wt)),
]
turn = 0
while True:
    sub_target, file_target = targets[turn % 2]
    os.rename(sub, sub + ".real"); os.symlink(sub_target, sub)
    os.rename(f, f + ".real"); os.symlink(file_target, f)
    os.unlink(sub); os.rename(sub + ".real", sub)
    os.unlink(f); os.rename(f + ".real", f)
    if turn == 0:
        print("ready", flush=True)
    turn += 1
    if os.path.exists(stop):
        break
"""


@pytest.mark.rule("FIL-4")
@pytest.mark.slow
def test_components_swapped_by_another_process_never_leak(tmp_path: Path) -> None:
    import subprocess
    import sys

    root, outside, wt = _sub_worktree(tmp_path)
    stop_file = tmp_path / "stop"
    proc = subprocess.Popen(
        [sys.executable, "-c", _SWAPPER_PROCESS, str(wt), str(outside), str(stop_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    reader = files(root)
    seen: dict[str, int] = {}
    try:
        for _ in range(SWAP_ITERATIONS):
            _classify_reads(reader, SUB_PATHS, SUB_TEXTS, SUB_LISTINGS, seen)
    finally:
        stop_file.touch()
        _, stderr = proc.communicate()
    assert proc.returncode == 0, stderr
    allowed = {
        "text",
        "listing",
        "files.symlink_outside",
        "files.changed",
        "files.not_found",
        "files.not_a_directory",
    }
    assert set(seen) <= allowed, seen


@pytest.mark.rule("FIL-4")
@pytest.mark.slow
def test_file_swapped_for_a_fifo_never_hangs(tmp_path: Path) -> None:
    """A FIFO swapped in between the type check and the open: the non-blocking open and
    the fstat re-check refuse it instead of blocking on a writer that never comes."""
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    (wt / "f.txt").write_text("text\n")
    os.mkfifo(wt / "pipe")
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            os.rename(wt / "f.txt", wt / "f.real")
            os.rename(wt / "pipe", wt / "f.txt")
            os.rename(wt / "f.txt", wt / "pipe")
            os.rename(wt / "f.real", wt / "f.txt")

    results: list[str] = []

    def read_many() -> None:
        for _ in range(SWAP_ITERATIONS):
            answer = files(root).read(task("t1"), "f.txt", 100)
            results.append("text" if isinstance(answer, FileText) else refused_key(answer))

    swapper = threading.Thread(target=swap)
    reader = threading.Thread(target=read_many, daemon=True)
    swapper.start()
    reader.start()
    reader.join(timeout=600)  # liveness guard only: a hang would block forever
    stop.set()
    swapper.join()
    assert not reader.is_alive(), "a read blocked on a FIFO"
    assert len(results) == SWAP_ITERATIONS
    assert set(results) <= {"text", "files.not_regular", "files.changed", "files.not_found"}


# ---- special files ---------------------------------------------------------------------


@pytest.mark.rule("FIL-4")
def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    os.mkfifo(wt / "pipe")
    (wt / "to-pipe").symlink_to("pipe")
    for path in ("pipe", "to-pipe"):
        answer = files(root).read(task("t1"), path, 100)
        assert refused_key(answer) == "files.not_regular"
        assert isinstance(answer, FileRefused)
        assert answer.reason.arg("what").key == "files.kind_fifo"  # type: ignore[union-attr]


@pytest.mark.rule("FIL-4")
def test_socket_is_refused(tmp_path: Path) -> None:
    import socket

    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    path = wt / "s.sock"
    if len(os.fsencode(path)) > 100:
        pytest.skip("temporary path too long for a unix socket")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        assert refused_key(files(root).read(task("t1"), "s.sock", 100)) == "files.not_regular"


@pytest.mark.rule("FIL-4")
def test_dev_null_via_symlink_is_refused(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    (wt / "null").symlink_to("/dev/null")
    (wt / "zero").symlink_to("/dev/zero")
    for path in ("null", "zero"):
        assert refused_key(files(root).read(task("t1"), path, 100)) == "files.symlink_outside"


@pytest.mark.rule("FIL-4")
def test_device_node_inside_the_worktree_is_refused(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    try:
        os.mknod(wt / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero
    except (PermissionError, OSError) as exc:
        pytest.skip(f"mknod not permitted here: {exc}")
    answer = files(root).read(task("t1"), "zero", 100)
    assert refused_key(answer) == "files.not_regular"
    assert isinstance(answer, FileRefused)
    assert answer.reason.arg("what").key == "files.kind_char_device"  # type: ignore[union-attr]


# ---- size and names ---------------------------------------------------------------------


@pytest.mark.rule("FIL-4")
@pytest.mark.slow
def test_50_mb_file_is_read_with_bounded_memory(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    line = ("0123456789abcdef" * 4 + "\n").encode()
    size = 50 * 1024 * 1024
    with open(wt / "big.log", "wb") as fh:
        block = line * (1024 * 1024 // len(line))
        written = 0
        while written < size:
            fh.write(block)
            written += len(block)
        fh.write(b"\xff\x00 binary garbage far beyond what is read")
    reader = files(root)
    tracemalloc.start()
    try:
        answer = reader.read(task("t1"), "big.log", 20000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(answer, FileText)
    assert answer.truncated and len(answer.text) == 20000
    assert answer.total_chars is None
    assert answer.size_bytes == os.path.getsize(wt / "big.log")
    assert answer.text == (line.decode() * 400)[:20000]
    # bounded: well under 1% of the file (one 64 KiB chunk plus the decoded text)
    assert peak < 512 * 1024, peak


@pytest.mark.rule("FIL-3", "FIL-4")
def test_non_utf8_names_are_listed_and_readable_by_escape(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    raw = b"r\xe9sum\xe9.txt"
    with open(os.path.join(os.fsencode(wt), raw), "wb") as fh:
        fh.write(b"contenu\n")
    listing = files(root).read(task("t1"), None, 100)
    assert listing == FileListing(("r\\xe9sum\\xe9.txt",), 0)
    # a JSON string can carry the surrogate-escaped name; it reads the same file
    answer = files(root).read(task("t1"), os.fsdecode(raw), 100)
    assert isinstance(answer, FileText)
    assert answer.text == "contenu\n"
    assert answer.path == "r\\xe9sum\\xe9.txt"
    answer.path.encode("utf-8")


@pytest.mark.rule("FIL-4")
def test_many_entries_listing_is_bounded(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    for i in range(3000):
        (wt / f"n{i:05d}").touch()
    tracemalloc.start()
    try:
        answer = WorktreeFiles(root, "h1").read(task("t1"), None, 100)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(answer, FileListing)
    assert answer.entries == tuple(f"n{i:05d}" for i in range(50))
    assert answer.omitted == 2950
    assert peak < 256 * 1024, peak


@pytest.mark.rule("FIL-4")
def test_very_deep_paths_are_refused_with_bounded_descriptors(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    deep = wt
    for _ in range(300):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "f.txt").write_text("bottom")
    path = "/".join(["d"] * 300) + "/f.txt"
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0
    assert refused_key(files(root).read(task("t1"), path, 100)) == "files.too_deep"
    ok = "/".join(["d"] * 250)
    assert isinstance(files(root).read(task("t1"), ok, 100), FileListing)
    if before:
        assert len(os.listdir("/proc/self/fd")) == before  # every descriptor was closed
