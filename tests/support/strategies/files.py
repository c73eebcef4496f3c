"""Shared helpers for the task-files tests (no hypothesis strategies yet): a worktree root
markertools_adapters.worktrees documents, and small assertions."""

from __future__ import annotations

from pathlib import Path

import attrs

from markertools import Command, DeliveryReport, TurnPlan, deliver_turn
from markertools.domain.model import PermissionGrant, Task
from markertools.domain.ports import (
    FileAnswer,
    FileListing,
    FileRefused,
    FileText,
    PermissionLookup,
    Ports,
    TaskExecutor,
    TaskFiles,
)
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.memory import MemoryStore
from markertools_adapters.wiring import store_ports
from markertools_adapters.worktrees import WorktreeFiles
from markertools_adapters.world import World

SECRET = "TOP-SECRET-OUTSIDE-7f3a9c"


def make_root(tmp_path: Path) -> tuple[Path, Path]:
    """(root, outside): a worktree root and a directory beside it holding SECRET."""
    root = tmp_path / "root"
    (root / "host-worktrees").mkdir(parents=True)
    (root / "tenants").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    (outside / "sub").mkdir()
    (outside / "sub" / "file.txt").write_text(SECRET + " in sub\n")
    (root / "secret-at-root.txt").write_text(SECRET + " at root\n")
    return root, outside


def make_worktree(root: Path, task_id: str, where: str = "host-worktrees") -> Path:
    wt = root / where / task_id
    wt.mkdir(parents=True)
    return wt


def answer_text(answer: FileAnswer) -> str:
    """Everything an answer would show, for leak checks."""
    if isinstance(answer, FileText):
        return answer.path + "\n" + answer.text
    if isinstance(answer, FileListing):
        return "\n".join(answer.entries)
    return answer.reason.render("en") + answer.reason.render("zh")


def refused_key(answer: FileAnswer) -> str:
    assert isinstance(answer, FileRefused), repr(answer)[:300]
    return answer.reason.key


def files(root: Path, host: str | None = "h1") -> WorktreeFiles:
    return WorktreeFiles(root, host)


def task(task_id: str = "t1", **kw: object) -> Task:
    return Task(task_id, "p1", **kw)  # type: ignore[arg-type]


# ---- delivery rig --------------------------------------------------------------------


def files_ports(
    world_tasks: tuple[Task, ...],
    *,
    files_port: TaskFiles | None,
    grants: tuple[str, ...] = ("read", "create_task", "approve_merge"),
    permissions: PermissionLookup | None = None,
    executor: TaskExecutor | None = None,
) -> tuple[MemoryStore, Ports]:
    """(store, ports) over a MemoryStore holding `world_tasks` and u1's grants on p1."""
    world = World(
        now=1_800_000_000.0,
        permissions=(PermissionGrant("u1", "p1", grants),),
        tasks=world_tasks,
    )
    store = MemoryStore.from_world(world)
    ports = store_ports(
        store,
        clock=VirtualClock(world.now),
        random=SeededRandom(7),
        files=files_port,
        executor=executor if executor is not None else NoopExecutor(),
    )
    if permissions is not None:
        ports = attrs.evolve(ports, permissions=permissions)
    return store, ports


def plan(*commands: Command) -> TurnPlan:
    return TurnPlan(commands=commands)


def deliver(
    ports: Ports, *commands: Command, sender: str = "t1", locale: str = "en"
) -> DeliveryReport:
    return deliver_turn(
        plan(*commands), sender=sender, outcome="completed", ports=ports, locale=locale
    )
