"""Shared builders, fakes and hypothesis strategies for the delivery-core tests.

Builders make small worlds and ports quickly; fakes stand in for failing ports (a
permission lookup that raises, an executor whose kill fails, a store call that raises);
strategies draw task forests and turns for the property and stateful tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs
from hypothesis import strategies as st

from markertools import (
    Command,
    DeliveryReport,
    PermissionGrant,
    Ports,
    Task,
    TurnPlan,
    deliver_turn,
)
from markertools.domain.model import (
    EFFORTS,
    EXECUTORS,
    PERMISSIONS,
    TASK_STATUSES,
    TODO_PRIORITIES,
    TODO_STATUSES,
    Automation,
    CostRow,
    Environment,
    Project,
    Quota,
    Todo,
)
from markertools.domain.ports import KillResult
from markertools.parse.params import (
    TaskCancelParams,
    TaskCreateParams,
    TaskPollParams,
    TaskRetryParams,
    WaitThreadsParams,
)
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.memory import MemoryStore
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

ALL_GRANTS = ("read", "create_task", "approve_merge")
NOW = 1_800_000_000.0


def task(task_id: str, project: str = "p1", **fields: Any) -> Task:
    fields.setdefault("created_by", "u1")
    return Task(task_id, project, **fields)


def make_world(
    *tasks: Task,
    grants: Iterable[str] = ALL_GRANTS,
    user: str = "u1",
    project: str = "p1",
    quotas: Sequence[Quota] = (),
    now: float = NOW,
    **extra: Any,
) -> World:
    return World(
        now=now,
        permissions=(PermissionGrant(user, project, tuple(grants)),),
        tasks=tasks,
        quotas=tuple(quotas),
        **extra,
    )


@attrs.define
class Rig:
    """A store, a virtual clock and the ports over them."""

    store: MemoryStore
    clock: VirtualClock
    ports: Ports

    def deliver(
        self,
        *commands: Command,
        sender: str = "t1",
        outcome: str = "completed",
        locale: str = "en",
        issues: tuple[Any, ...] = (),
    ) -> DeliveryReport:
        plan = TurnPlan(commands=tuple(commands), issues=issues)
        return deliver_turn(plan, sender=sender, outcome=outcome, ports=self.ports, locale=locale)

    def task(self, task_id: str) -> Task | None:
        return self.store.get_task(task_id)

    def world(self) -> World:
        return self.store.export_world(self.clock.now())


def rig(world: World, **port_overrides: Any) -> Rig:
    store = MemoryStore.from_world(world)
    clock = VirtualClock(world.now)
    ports = store_ports(store, clock=clock, random=SeededRandom(7), executor=NoopExecutor())
    if port_overrides:
        ports = attrs.evolve(ports, **port_overrides)
    return Rig(store, clock, ports)


def create(prompt: str = "do it", line: int = 1, **kw: Any) -> Command:
    return Command("task-create", line, TaskCreateParams(prompt=prompt, **kw))


def cancel(target: str, line: int = 2) -> Command:
    return Command("task-cancel", line, TaskCancelParams(target))


def retry(target: str, line: int = 3) -> Command:
    return Command("task-retry", line, TaskRetryParams(target))


def poll(target: str, line: int = 4, **kw: Any) -> Command:
    return Command("task-poll", line, TaskPollParams(target, **kw))


def wait(*targets: str, line: int = 5, **kw: Any) -> Command:
    return Command("wait-threads", line, WaitThreadsParams(tuple(targets), **kw))


# ---- fakes ------------------------------------------------------------------------------


class RaisingPermissions:
    """A permission lookup that always fails (GAT-2 / GAT-4)."""

    def has_permission(self, user: str | None, project_id: str, permission: str) -> bool:
        raise ConnectionError("permission service unreachable")


class FixedPermissions:
    """Answers from a fixed set of granted permission names."""

    def __init__(self, granted: Iterable[str]) -> None:
        self.granted = frozenset(granted)
        self.calls: list[str] = []

    def has_permission(self, user: str | None, project_id: str, permission: str) -> bool:
        self.calls.append(permission)
        return permission in self.granted


class RecordingExecutor:
    def __init__(self, signalled: bool = True, fail: bool = False) -> None:
        self.killed: list[str] = []
        self.signalled = signalled
        self.fail = fail

    def kill(self, task: Task) -> KillResult:
        self.killed.append(task.id)
        if self.fail:
            raise OSError("kill(-4242): operation not permitted")
        return KillResult(self.signalled, "pgid 4242" if self.signalled else "")


class FailingStore:
    """Wraps a store; the named methods raise (TRN-8), the rest pass through."""

    def __init__(self, inner: Any, failing: Iterable[str]) -> None:
        self._inner = inner
        self._failing = frozenset(failing)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name in self._failing:

            def boom(*args: Any, **kwargs: Any) -> Any:
                raise RuntimeError(f"{name} failed: disk I/O error")

            return boom
        return attr


class CountingStore:
    """Wraps a store and counts calls per method name."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return attr(*args, **kwargs)

        return counted


# ---- strategies ---------------------------------------------------------------------------

statuses = st.sampled_from(TASK_STATUSES)
PROJECTS = ("p1", "p1", "p1", "p2")
CREATORS = ("u1", "u1", "u2", None)


@st.composite
def forests(draw: st.DrawFn, max_tasks: int = 14) -> tuple[Task, ...]:
    """Random task forests over two projects: parents point at earlier tasks (sometimes at
    a missing id), some goal / coordinator tasks, random creators and statuses."""
    n = draw(st.integers(2, max_tasks))
    tasks: list[Task] = []
    for i in range(n):
        ident = f"t{i + 1}"
        parent: str | None = None
        if i > 0 and draw(st.booleans()):
            parent = draw(st.sampled_from([t.id for t in tasks] + ["ghost"]))
        tasks.append(
            Task(
                ident,
                draw(st.sampled_from(PROJECTS)) if i > 0 else "p1",
                status=draw(statuses) if i > 0 else "running",
                created_by=draw(st.sampled_from(CREATORS)) if i > 0 else "u1",
                parent_task_id=parent,
                goal_mode=draw(st.booleans()) and i > 0 and draw(st.booleans()),
                verify_command=draw(st.sampled_from([None, None, None, "pytest"]))
                if i > 0
                else None,
                is_coordinator=i > 0 and draw(st.integers(0, 9)) == 0,
                coordinator_part=draw(st.sampled_from([None, None, None, "part-a"]))
                if i > 0
                else None,
                result_text=draw(st.sampled_from([None, "ok", "x" * 300])),
            )
        )
    return tuple(tasks)


def target_ids(tasks: Sequence[Task]) -> st.SearchStrategy[str]:
    return st.sampled_from([t.id for t in tasks] + ["missing", "@a", "@b"])


# ---- valid world files ------------------------------------------------------------------------


_text = st.text(max_size=12)
_opt_text = st.none() | _text
_times = st.floats(0, 4e9, allow_nan=False) | st.integers(0, 4_000_000_000).map(float)
_ids = st.text(alphabet="abcdefghijk0123456789-é", min_size=1, max_size=6)

world_tasks = st.builds(
    Task,
    id=_ids,
    project_id=st.sampled_from(["p1", "p2"]),
    status=statuses,
    created_by=st.none() | st.sampled_from(["u1", "u2"]),
    parent_task_id=st.none() | _ids,
    executor=st.sampled_from(EXECUTORS),
    environment_id=_opt_text,
    model=_opt_text,
    effort=st.none() | st.sampled_from(EFFORTS),
    goal_mode=st.booleans(),
    verify_command=_opt_text,
    is_coordinator=st.booleans(),
    coordinator_part=_opt_text,
    prompt=st.text(max_size=40),
    result_text=_opt_text,
    error_text=_opt_text,
    actual_model=_opt_text,
    worktree=_opt_text,
    host=_opt_text,
    created_at=_times,
    goal=_opt_text,
    interrupted_reason=_opt_text,
    auto_resume_count=st.integers(0, 5),
)


def _unique(items, key):
    seen, out = set(), []
    for item in items:
        if key(item) not in seen:
            seen.add(key(item))
            out.append(item)
    return tuple(out)


@st.composite
def world_files(draw: st.DrawFn) -> Any:
    from markertools_adapters.world import World

    return World(
        now=draw(_times),
        projects=_unique(
            draw(
                st.lists(
                    st.builds(
                        Project,
                        id=_ids,
                        name=_text,
                        repo_url=_opt_text,
                        environment=st.none()
                        | st.builds(Environment, _opt_text, _opt_text, _opt_text),
                    ),
                    max_size=3,
                )
            ),
            lambda p: p.id,
        ),
        permissions=tuple(
            draw(
                st.lists(
                    st.builds(
                        PermissionGrant,
                        user=st.sampled_from(["u1", "u2"]),
                        project=_ids,
                        grants=st.lists(st.sampled_from(PERMISSIONS), unique=True).map(tuple),
                    ),
                    max_size=3,
                )
            )
        ),
        tasks=_unique(draw(st.lists(world_tasks, max_size=6)), lambda t: t.id),
        todos=_unique(
            draw(
                st.lists(
                    st.builds(
                        Todo,
                        id=_ids,
                        project_id=_ids,
                        title=_text,
                        description=_opt_text,
                        status=st.sampled_from(TODO_STATUSES),
                        priority=st.sampled_from(TODO_PRIORITIES),
                        due_at=st.none() | _times,
                        task_id=st.none() | _ids,
                        sort_order=st.none() | st.integers(-5, 5),
                        completed_at=st.none() | _times,
                        created_at=_times,
                    ),
                    max_size=3,
                )
            ),
            lambda d: d.id,
        ),
        automations=_unique(
            draw(
                st.lists(
                    st.builds(
                        Automation,
                        id=_ids,
                        project_id=_ids,
                        name=_text,
                        prompt=_text,
                        interval_seconds=st.integers(60, 2_592_000),
                        first_run_at=st.none() | _times,
                        run_once=st.booleans(),
                        bind=st.sampled_from([None, "cron", "heartbeat"]),
                        created_by=st.none() | st.just("u1"),
                        created_at=_times,
                        run_count=st.integers(0, 9),
                    ),
                    max_size=2,
                )
            ),
            lambda a: a.id,
        ),
        costs=tuple(
            draw(
                st.lists(
                    st.builds(
                        CostRow,
                        task_id=_ids,
                        round=st.integers(1, 9),
                        usd=st.none() | st.floats(0, 100),
                        tokens=st.integers(0, 10**7),
                        estimated=st.booleans(),
                        priced=st.booleans(),
                        priced_by=st.none() | st.sampled_from(["claude-code", "table", "é"]),
                    ),
                    max_size=4,
                )
            )
        ),
        quotas=_unique(
            draw(
                st.lists(
                    st.builds(
                        Quota,
                        user=_ids,
                        total_usd=st.none() | st.floats(0, 1e6),
                        used_usd=st.floats(0, 1e6),
                    ),
                    max_size=2,
                )
            ),
            lambda q: q.user,
        ),
    )
