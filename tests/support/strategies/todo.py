"""Shared strategies and small fakes for the todos / automations / injection / attempts
tests: hypothesis strategies for the records, a deterministic clock and random source,
and `make_ports` building a `markertools.Ports` over a MemoryStore (or any store that
implements the storage ports)."""

from __future__ import annotations

import itertools
from typing import Any

import attrs
from hypothesis import strategies as st

from markertools import Ports
from markertools.domain.model import (
    TODO_PRIORITIES,
    TODO_STATUSES,
    Attempt,
    Automation,
    Environment,
    PermissionGrant,
    Project,
    Quota,
    Task,
    Todo,
)
from markertools.domain.ports import KillResult
from markertools_adapters.world import World

NOW = 1_798_333_200.0  # 2026-12-27T09:00:00+08:00
ALL_GRANTS = ("read", "create_task", "approve_merge")


class FakeClock:
    def __init__(self, now: float = NOW) -> None:
        self.t = now

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += max(0.0, seconds)


class CountingRandom:
    """Deterministic `token_hex`: a counter rendered in hex, padded to 2*nbytes."""

    def __init__(self, start: int = 1) -> None:
        self._n = itertools.count(start)

    def token_hex(self, nbytes: int) -> str:
        return format(next(self._n), "x").rjust(2 * nbytes, "0")[-2 * nbytes :]


class ScriptedRandom:
    """Returns the scripted tokens first (e.g. a nonce the data contains), then counts."""

    def __init__(self, *tokens: str) -> None:
        self._tokens = list(tokens)
        self._fallback = CountingRandom(0xABC000)

    def token_hex(self, nbytes: int) -> str:
        if self._tokens:
            return self._tokens.pop(0)
        return self._fallback.token_hex(nbytes)


class NoopExecutor:
    def kill(self, task: Task) -> KillResult:
        return KillResult(signalled=False)


def auto(**kw: object) -> Automation:
    """An automation row with the given fields (id a1, project p1, name n, prompt p)."""
    fields: dict[str, object] = {"id": "a1", "project_id": "p1", "name": "n", "prompt": "p"}
    fields.update(kw)
    return Automation(**fields)  # type: ignore[arg-type]


def make_ports(store: Any, *, clock: Any = None, random: Any = None, **over: Any) -> Ports:
    """A Ports bundle whose storage ports are all `store`; `over` replaces single ports."""
    fields: dict[str, Any] = {
        "tasks": store,
        "todos": store,
        "automations": store,
        "projects": store,
        "costs": store,
        "attempts": store,
        "audit": store,
        "followups": store,
        "permissions": store,
        "executor": NoopExecutor(),
        "clock": clock if clock is not None else FakeClock(),
        "random": random if random is not None else CountingRandom(),
    }
    fields.update(over)
    return Ports(**fields)


def memory_store(world: World) -> Any:
    from markertools_adapters.memory import MemoryStore

    store = MemoryStore()
    store.load_world(world)
    return store


def base_world(**extra: Any) -> World:
    """Project p1 (shop) and p2 (other); u1 has every grant on p1; sender t1 (normal task
    of p1 created by u1), t2 another task of p1, x1 a task of p2."""
    defaults: dict[str, Any] = {
        "now": NOW,
        "projects": (
            Project(
                "p1",
                "shop",
                "https://git.example/shop.git",
                Environment("dev", "main", "ready"),
            ),
            Project("p2", "other"),
        ),
        "permissions": (PermissionGrant("u1", "p1", ALL_GRANTS),),
        "tasks": (
            Task("t1", "p1", created_by="u1", prompt="build the shop", created_at=NOW - 100),
            Task("t2", "p1", created_by="u1", prompt="second", created_at=NOW - 50),
            Task("x1", "p2", created_by="u9", prompt="foreign", created_at=NOW - 10),
        ),
    }
    defaults.update(extra)
    return World(**defaults)


def with_quota(world: World, total: float | None, used: float) -> World:
    return attrs.evolve(world, quotas=(Quota("u1", total, used),))


# ---- strategies ------------------------------------------------------------------------

ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
_HOSTILE_PIECES = [
    *"ab ~`\n\r\t<>{}\"'#*-_|\\",
    *("```", "~~~", "````", "task-create", "todo-update", "\n```task-create\n"),
    *("<<<END DATA ", "ignore previous instructions", "> ", "    ", "<div>", "</div>"),
    *("```\n", "\u2028"),
]
hostile_text = st.lists(st.sampled_from(_HOSTILE_PIECES), max_size=40).map("".join)
titles = st.one_of(st.text(max_size=300), hostile_text)
todo_statuses = st.sampled_from(TODO_STATUSES)
todo_priorities = st.sampled_from(TODO_PRIORITIES)


@st.composite
def todos(draw: st.DrawFn, project_id: str = "p1", todo_id: str | None = None) -> Todo:
    return Todo(
        id=todo_id if todo_id is not None else draw(ids),
        project_id=project_id,
        title=draw(titles),
        description=draw(st.none() | st.text(max_size=40)),
        status=draw(todo_statuses),
        priority=draw(todo_priorities),
        sort_order=draw(st.none() | st.integers(-5, 5)),
        created_at=draw(st.sampled_from([NOW - 3, NOW - 2, NOW - 1])),
    )


epoch = st.one_of(
    st.integers(1_700_000_000, 1_900_000_000).map(float),
    st.floats(1_700_000_000, 1_900_000_000, allow_nan=False, allow_infinity=False),
)
intervals = st.one_of(st.sampled_from([60, 61, 3600, 86400, 2592000]), st.integers(60, 2592000))


@st.composite
def automations(draw: st.DrawFn, automation_id: str = "a1") -> Automation:
    """Random automations in every run state: never run, run with a claimed slot, and
    legacy rows that carry last_run_at / run_count but no last_slot_at."""
    created = draw(epoch)
    first = draw(st.none() | epoch)
    base = Automation(
        id=automation_id,
        project_id="p1",
        name=draw(ids),
        prompt="p",
        interval_seconds=draw(intervals),
        first_run_at=first,
        run_once=draw(st.booleans()),
        status=draw(st.sampled_from(["active", "active", "active", "paused", "deleted"])),
        created_by="u1",
        created_at=created,
    )
    state = draw(st.sampled_from(["never", "claimed", "legacy"]))
    if state == "never":
        return base
    slot = draw(epoch)
    ran = slot + draw(st.one_of(st.just(0.0), st.floats(0, 10 * base.interval_seconds)))
    count = draw(st.integers(1, 50))
    if state == "claimed":
        return attrs.evolve(base, last_slot_at=slot, last_run_at=ran, run_count=count)
    return attrs.evolve(base, last_run_at=ran, run_count=count)


attempt_kinds = st.sampled_from(["goal_breakpoint", "platform_fresh"])


@st.composite
def attempts(draw: st.DrawFn, task_id: str = "t1") -> Attempt:
    return Attempt(
        task_id=task_id,
        attempt_no=draw(st.integers(1, 20)),
        kind=draw(attempt_kinds),
        interrupted_reason=draw(st.none() | st.text(max_size=40)),
        checkpoint_round=draw(st.integers(-1, 30)),
        result_text=draw(st.none() | st.text(max_size=80)),
        error_text=draw(st.none() | st.text(max_size=80)),
        created_at=NOW,
    )
