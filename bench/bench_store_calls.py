"""Store calls per delivered turn, counted through a wrapper around the in-memory store.

1. A turn with 5 task-create, 5 task-cancel, 5 task-poll and 2 wait-threads of 8 targets:
   calls per port method and in total.
2. wait-threads alone with 1, 4 and 8 targets over the same number of rounds: the store
   reads per round must stay at one, whatever the number of targets (WAI-4).
3. Wall time of the big turn relative to an empty turn (baseline measured in the same run).

Run:  .venv/bin/python bench/bench_store_calls.py     (prints; not a test)
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from _common import turn_plan

from markertools import Command, PermissionGrant, Task, TurnPlan, deliver_turn
from markertools.parse.params import WaitThreadsParams
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.memory import MemoryStore
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

STORAGE_PORTS = (
    "tasks",
    "todos",
    "automations",
    "projects",
    "costs",
    "attempts",
    "audit",
    "followups",
    "permissions",
)


class Counting:
    """Counts every method call that reaches the wrapped store."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return attr(*args, **kwargs)

        return counted


def world(children: int) -> World:
    # the targets hang below an intermediate task, so the sender's direct-children cap
    # (LIN-3) leaves room for the 5 creations
    tasks = [Task("t1", "p1", created_by="u1", prompt="lead")]
    tasks.append(Task("mid", "p1", created_by="u1", parent_task_id="t1", prompt="mid"))
    tasks += [
        Task(f"k{i}", "p1", created_by="u1", parent_task_id="mid", prompt=f"job {i}")
        for i in range(children)
    ]
    return World(
        now=1_800_000_000.0,
        permissions=(PermissionGrant("u1", "p1", ("read", "create_task", "approve_merge")),),
        tasks=tuple(tasks),
    )


def deliver(plan: TurnPlan, w: World) -> tuple[Counter[str], float, int]:
    counting = Counting(MemoryStore.from_world(w))
    clock = VirtualClock(w.now)
    ports = store_ports(counting, clock=clock, random=SeededRandom(1), executor=NoopExecutor())
    start = time.perf_counter()
    report = deliver_turn(plan, sender="t1", outcome="completed", ports=ports)
    elapsed = time.perf_counter() - start
    assert report.delivered
    return counting.calls, elapsed, len(clock.slept)


def big_turn() -> TurnPlan:
    return turn_plan(
        [f"new job {i}" for i in range(5)],
        [f"k{i}" for i in range(5)],
        [f"k{i}" for i in range(5, 10)],
        [[f"k{i}" for i in range(10, 18)]] * 2,
        line_step=1,
        poll={"interval_seconds": 10, "timeout_seconds": 30},
        wait={"interval_seconds": 10, "timeout_seconds": 60},
    )


def wait_only(targets: int) -> TurnPlan:
    ids = tuple(f"k{i}" for i in range(targets))
    return TurnPlan(
        commands=(
            Command(
                "wait-threads", 1, WaitThreadsParams(ids, interval_seconds=10, timeout_seconds=60)
            ),
        )
    )


def main() -> None:
    w = world(18)
    calls, _, _ = deliver(big_turn(), w)
    print(
        "1) turn: 5 task-create, 5 task-cancel, 5 task-poll (30 s / 10 s), 2 wait-threads x 8 targets (60 s / 10 s)"
    )
    for name, n in sorted(calls.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"   {name:<20} {n:>4}")
    print(f"   {'TOTAL':<20} {sum(calls.values()):>4}")

    print("2) wait-threads alone, 60 s timeout, 10 s interval (7 rounds: at once + 6)")
    print("   targets  rounds  get_tasks  get_task  store calls  reads/round")
    for n in (1, 4, 8):
        c, _, slept = deliver(wait_only(n), world(8))
        rounds = slept + 1
        print(
            f"   {n:>7}  {rounds:>6}  {c['get_tasks']:>9}  {c['get_task']:>8}  {sum(c.values()):>11}  {c['get_tasks'] / rounds:>11.2f}"
        )

    base_times = [deliver(TurnPlan(), w)[1] for _ in range(50)]
    big_times = [deliver(big_turn(), w)[1] for _ in range(50)]
    base, big = sorted(base_times)[25], sorted(big_times)[25]
    print(
        f"3) wall time, median of 50: empty turn {base * 1e6:.0f} us (baseline), big turn {big * 1e6:.0f} us = {big / base:.1f}x baseline"
    )


if __name__ == "__main__":
    main()
