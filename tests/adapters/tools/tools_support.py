"""Shared helpers of the `tools serve` tests (no tests of its own): a world of two
projects' tasks in a real store (SQLite file, or the throwaway PostgreSQL), task tokens
minted through the library, a ToolsMcp over it, and the SDK's in-process client in both
protocol eras."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import attrs
from mcp import Client
from mcp_types import CallToolResult

from markertools import Task, mint_task_token
from markertools.domain.model import PermissionGrant, Project
from markertools_adapters import connect
from markertools_adapters._carries import attach_ports
from markertools_adapters.clock import SystemClock, SystemRandom
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.tools import CALL_ID_META_KEY, ToolsMcp
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

LEGACY = "legacy"  # the initialize handshake (2025-11-25)
MODERN = "2026-07-28"  # the per-request envelope
ERAS = (LEGACY, MODERN)


VALID: dict[str, dict[str, Any]] = {  # the required fields of each tool, valid
    "task_create": {"prompt": "p"},
    "todo_create": {"title": "t"},
    "todo_update": {"id": "td-x"},
    "automation_create": {"prompt": "p"},
    "task_cancel": {"task_id": "t2"},
    "task_retry": {"task_id": "t3"},
    "task_cost": {"task_id": "t3"},
    "task_files": {"task_id": "t3"},
    "task_poll": {"task_id": "t3"},
    "wait_threads": {"task_ids": ["t3"]},
    "goal_convert": {"goal": "g"},
    "approval_answer": {"approval_id": "apr-x", "decision": "deny"},
}


def world(now: float | None = None) -> World:
    """t1 (running, turn 1) of u1 in p1 with a running child t2 and a finished child t3;
    t9 of another user's project; g1 a goal task (refused every tool, TOL-7)."""
    now = time.time() if now is None else now
    return World(
        now=now,
        projects=(Project("p1", "shop"), Project("p2", "other")),
        permissions=(
            PermissionGrant("u1", "p1", ("read", "create_task", "cancel_task")),
            PermissionGrant("u2", "p2", ("read", "create_task")),
        ),
        tasks=(
            Task("t1", "p1", status="running", created_by="u1", turn=1, prompt="lead"),
            Task("t2", "p1", status="running", created_by="u1", parent_task_id="t1"),
            Task(
                "t3",
                "p1",
                status="completed",
                created_by="u1",
                parent_task_id="t1",
                result_text="all done",
            ),
            Task("t9", "p2", status="running", created_by="u2", turn=1),
            Task("g1", "p1", status="running", created_by="u1", goal_mode=True, goal="ship"),
        ),
    )


def sqlite_store(path: Path, w: World | None = None) -> Any:
    store = connect(path, executor="noop")
    store.load_world(w if w is not None else world())
    return store


def mint(store: Any, task_id: str, ttl: float = 3600.0) -> str:
    ports = store_ports_of(store)
    minted = mint_task_token(
        store, task_id, now=ports.clock.now(), token_hex=ports.random.token_hex, ttl_seconds=ttl
    )
    return minted.token


class TokenHolder:
    """The token source of an in-process server: what the test put there."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token

    def __call__(self, ctx: Any) -> str | None:
        return self.token


def store_ports_of(store: Any) -> Any:
    """The store's ports: those `connect` attached, else (a throwaway PostgreSQL store)
    real-time ports with the store's LISTEN/NOTIFY change waiter."""
    try:
        return store.ports
    except Exception:
        ports = store_ports(
            store,
            clock=SystemClock(),
            random=SystemRandom(),
            executor=NoopExecutor(),
            waiter=store.change_waiter(),
        )
        attach_ports(store, ports)
        return ports


def tools_server(store: Any, holder: TokenHolder, **kw: Any) -> ToolsMcp:
    return ToolsMcp(store, store_ports_of(store), token_of=holder, **kw)


@asynccontextmanager
async def client(tools: ToolsMcp, mode: str = LEGACY, **kw: Any) -> AsyncIterator[Client]:
    async with Client(tools.server, mode=mode, read_timeout_seconds=60, **kw) as c:
        yield c


async def call(
    c: Client, tool: str, args: Any = None, call_id: str | None = None, **kw: Any
) -> CallToolResult:
    meta = {CALL_ID_META_KEY: call_id} if call_id is not None else None
    return await c.call_tool(tool, args if args is not None else {}, meta=meta, **kw)  # type: ignore[arg-type]


def body(result: CallToolResult) -> dict[str, Any]:
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


def text(result: CallToolResult) -> str:
    return result.content[0].text  # type: ignore[union-attr]


@contextmanager
def unchanged(store: Any, *, audited: int = 0) -> Iterator[None]:
    """Asserts the world (tasks, todos, automations, follow-ups, audit) is as before;
    `audited`: that many new audit records (TRN-7: of executed or rejected calls) aside."""
    now = store_ports_of(store).clock.now()
    before = store.export_world(now)
    yield
    after = store.export_world(now)
    if audited:
        assert len(after.audit) == len(before.audit) + audited
        assert all(r.source == "tool" for r in after.audit[len(before.audit) :])
        after, before = attrs.evolve(after, audit=()), attrs.evolve(before, audit=())
    changed = [
        f.name
        for f in attrs.fields(type(after))
        if getattr(after, f.name) != getattr(before, f.name)
    ]
    assert not changed, changed
