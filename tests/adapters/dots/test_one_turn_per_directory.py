"""One turn per directory compares the directory itself, not its path (issue 37 item
10, DOT-6): a bind mount of one directory onto another and a symlink to it named two
"different" directories when paths were compared, so two roles ran in one directory at
once. Now the key is the directory's device and inode. On the real pinned Codex
(offline, the fake model), a real bind mount (`mount --bind`, as root; skipped with the
reason where the machine does not allow it) and a real symlink; that the two turns never
overlapped is read from the run's journal (each turn's start and end events, in order),
not from timing."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.codex import OfflineCodex
from support.dots import OWNER, plan, role, running, until, workdir

from markertools.plans import TurnEnded, TurnStarted
from markertools_adapters.codex.fakemodel import Hang, Text
from markertools_adapters.planstore import PlanStore


@contextlib.contextmanager
def bind_mount(source: Path, target: Path) -> Iterator[None]:
    target.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mount --bind needs root here")
    done = subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mount --bind is not allowed on this machine: {done.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", str(target)], check=True)


def turns_in_order(state: Path, run_id: str) -> list[tuple[str, str]]:
    """("start" | "end", role) of every turn, in the order the journal holds them."""
    out: list[tuple[str, str]] = []
    for entry in PlanStore(state, create=False).read_events(run_id):
        if isinstance(entry.event, TurnStarted):
            out.append(("start", entry.event.role))
        elif isinstance(entry.event, TurnEnded):
            out.append(("end", entry.event.role))
    return out


def run_two_roles(codex: OfflineCodex, tmp: Path, first: Path, second: Path) -> list[tuple[str, str]]:
    codex.fake.push(Text("a: done", delay=0.5), Text("b: done", delay=0.5))
    body = plan(role("a", first), role("b", second))
    state = tmp / "state"

    async def go() -> str:
        async with running(codex, state) as sup:
            run_id: str = (await sup.start(body, owner=OWNER))["runId"]
            await until(lambda: len(sup.pending_decisions(owner=OWNER)) == 2, 60)
            return run_id

    return turns_in_order(state, asyncio.run(go()))


def never_overlapped(order: list[tuple[str, str]]) -> bool:
    live = 0
    for kind, _ in order:
        live += 1 if kind == "start" else -1
        if live > 1:
            return False
    return True


@pytest.mark.rule("DOT-6")
def test_a_bind_mount_of_a_roles_directory_never_runs_a_second_turn_at_once(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    real = workdir(tmp_path, "project")
    mounted = tmp_path / "mounted"
    with bind_mount(real, mounted):
        assert os.path.realpath(mounted) != os.path.realpath(real)  # two paths, one directory
        order = run_two_roles(offline_codex, tmp_path, real, mounted)
    assert sorted(order) == [("end", "a"), ("end", "b"), ("start", "a"), ("start", "b")]
    assert never_overlapped(order), order


@pytest.mark.rule("DOT-6")
def test_a_symlink_to_a_roles_directory_never_runs_a_second_turn_at_once(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    real = workdir(tmp_path, "project")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    order = run_two_roles(offline_codex, tmp_path, real, link)
    assert sorted(order) == [("end", "a"), ("end", "b"), ("start", "a"), ("start", "b")]
    assert never_overlapped(order), order


@pytest.mark.rule("DOT-6")
def test_two_different_directories_still_run_at_once(offline_codex: OfflineCodex, tmp_path: Path) -> None:
    """The control: the key does not serialise what are truly two directories. The
    first model request hangs, so the first turn cannot end: the second role's turn
    starts all the same."""
    offline_codex.fake.push(Hang(), Text("b: done"))
    body = plan(role("a", workdir(tmp_path, "one")), role("b", workdir(tmp_path, "two")))

    async def go() -> list[str]:
        async with running(offline_codex, tmp_path / "state") as sup:
            run_id = (await sup.start(body, owner=OWNER))["runId"]

            def states() -> list[str]:
                return [w["state"] for w in sup.status(owner=OWNER, run_id=run_id)[0]["workers"]]

            await until(lambda: offline_codex.fake.hanging.is_set() and "queued" not in states(), 60)
            seen = states()
            offline_codex.fake.release_hangs()
            return seen

    seen = asyncio.run(go())
    assert "queued" not in seen and any(s in ("starting", "running") for s in seen), seen
