"""Shared fixtures of the storage benchmarks (bench_sqlite.py, bench_postgres.py,
bench_store_calls.py): the typical turn, its sender's tasks and the background world.

Owns: what a benchmark turn and world look like, so every benchmark measures the same
thing. Must never: measure anything itself, or print.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from markertools.domain.model import PermissionGrant, Project, Task
from markertools.parse.params import (
    TaskCancelParams,
    TaskCreateParams,
    TaskPollParams,
    WaitThreadsParams,
)
from markertools.parse.plan import Command, TurnPlan
from markertools_adapters.world import World

PROJECT = "p"
USER = "u"
NOW = 1_800_000_000.0
GRANTS = ("approve_merge", "create_task", "read")


def fixture_tasks(sender: str, now: float) -> list[Task]:
    """A sender with 5 running children (cancelled) and 16 finished grandchildren (polled /
    waited)."""

    def task(task_id: str, status: str, prompt: str, **fields: Any) -> Task:
        return Task(
            id=task_id,
            project_id=PROJECT,
            status=status,
            created_by=USER,
            prompt=prompt,
            created_at=now,
            **fields,
        )

    rows = [task(sender, "running", "typical sender")]
    rows += [
        task(f"{sender}-c{k}", "running", "to cancel", parent_task_id=sender) for k in range(5)
    ]
    rows += [
        task(
            f"{sender}-f{k}",
            "completed",
            "finished",
            parent_task_id=f"{sender}-c0",
            result_text="done: " + "x" * 400,
        )
        for k in range(16)
    ]
    return rows


def turn_plan(
    creates: Sequence[str],
    cancels: Sequence[str],
    polls: Sequence[str],
    waits: Sequence[Sequence[str]],
    *,
    line_step: int = 4,
    poll: dict[str, Any] | None = None,
    wait: dict[str, Any] | None = None,
) -> TurnPlan:
    """task-create (one per prompt), task-cancel, task-poll, wait-threads blocks, in TRN-1
    execution order; `poll` / `wait` are extra params of those blocks."""
    params: list[tuple[str, Any]] = [
        *(("task-create", TaskCreateParams(prompt=p)) for p in creates),
        *(("task-cancel", TaskCancelParams(task_id=t)) for t in cancels),
        *(("task-poll", TaskPollParams(task_id=t, **(poll or {}))) for t in polls),
        *(("wait-threads", WaitThreadsParams(task_ids=tuple(g), **(wait or {}))) for g in waits),
    ]
    return TurnPlan(
        commands=tuple(
            Command(kind, 1 + n * line_step, block) for n, (kind, block) in enumerate(params)
        )
    )


def typical_plan(sender: str) -> TurnPlan:
    """5 creates, 5 cancels, 5 polls, 2 waits of 8 (in TRN-1 execution order)."""
    return turn_plan(
        [f"subtask {k}" for k in range(5)],
        [f"{sender}-c{k}" for k in range(5)],
        [f"{sender}-f{k}" for k in range(5)],
        [[f"{sender}-f{k}" for k in range(8 * w, 8 * w + 8)] for w in range(2)],
    )


def bench_world(filler: int, senders: Sequence[str], now: float = NOW) -> World:
    """`filler` background tasks (same project, a few lineages, mixed statuses) plus every
    sender's fixture tasks."""
    tasks: list[Task] = [
        Task(
            id=f"bg{i:07d}",
            project_id=PROJECT,
            status=("completed", "failed", "running", "queued")[i % 4],
            created_by=f"user{i % 50}",
            parent_task_id=f"bg{i - 1:07d}" if i % 10 else None,
            prompt=f"background task {i}",
            created_at=now - filler + i,
        )
        for i in range(filler)
    ]
    for sender in senders:
        tasks.extend(fixture_tasks(sender, now))
    return World(
        now=now,
        projects=(Project(id=PROJECT, name="bench"),),
        permissions=(PermissionGrant(USER, PROJECT, GRANTS),),
        tasks=tuple(sorted(tasks, key=lambda t: t.id)),
    )
