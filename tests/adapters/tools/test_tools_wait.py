"""TOL-6: task_poll and wait_threads through `tools serve` wait at most --max-wait-ms per
call and then say what is still running; a change of a waited task wakes them early (a
status read per slice on SQLite, LISTEN/NOTIFY on the real PostgreSQL); a cancelled
request (`notifications/cancelled`) ends the wait at once; a client that sent a progress
token gets `notifications/progress` while the call waits."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from support.postgres import throwaway_store
from tools_support import (
    ERAS,
    TokenHolder,
    body,
    call,
    client,
    mint,
    sqlite_store,
    text,
    tools_server,
    unchanged,
    world,
)

from markertools_adapters.tools import ToolsMcp

BOUND = 30.0  # seconds any wait of a test may take before it fails


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    s = sqlite_store(tmp_path / "w.db") if request.param == "sqlite" else throwaway_store(world())
    yield s
    s.close()


@pytest.mark.rule("TOL-6")
@pytest.mark.parametrize("mode", ERAS)
def test_a_wait_cut_short_says_what_is_still_running_and_can_be_repeated(
    tmp_path: Path, mode: str
) -> None:
    store = sqlite_store(tmp_path / "w.db")
    tools = tools_server(store, TokenHolder(mint(store, "t1")), max_wait_ms=300)

    async def scenario() -> list[Any]:
        async with client(tools, mode) as c:
            poll = await call(c, "task_poll", {"task_id": "t2", "timeout_seconds": 600})
            wait = await call(c, "wait_threads", {"task_ids": ["t2", "t3"], "timeout_seconds": 600})
            return [poll, wait]

    try:
        poll, wait = asyncio.run(scenario())
    finally:
        store.close()
    for result in (poll, wait):
        assert not result.is_error
        assert body(result)["cut_short"] is True and body(result)["still_running"] == ["t2"]
        assert text(result).endswith(
            "This call waited the server's limit of 300 ms per call; still running: t2. "
            "Repeat the call to keep waiting."
        )
        assert body(result)["text"] == text(result)
    assert "1 finished, 1 not finished" in text(wait)


@pytest.mark.rule("TOL-6")
@pytest.mark.parametrize("tool", ["task_poll", "wait_threads"])
def test_a_change_of_the_waited_task_wakes_the_call_early(store: Any, tool: str) -> None:
    # interval 60 s and a 20 s limit: only an early wake-up can see t2 finish
    tools = tools_server(store, TokenHolder(mint(store, "t1")), max_wait_ms=20_000)
    args: dict[str, Any] = {"interval_seconds": 60, "timeout_seconds": 600}
    args.update({"task_id": "t2"} if tool == "task_poll" else {"task_ids": ["t2"]})

    def finish_t2() -> None:
        assert tools.wait_busy(BOUND)
        assert store.transition_task("t2", "running", {"status": "completed", "result_text": "ok"})

    async def scenario() -> Any:
        async with client(tools) as c:
            worker = threading.Thread(target=finish_t2)
            worker.start()
            try:
                return await call(c, tool, args)
            finally:
                await asyncio.to_thread(worker.join, BOUND)

    result = asyncio.run(scenario())
    assert not result.is_error and "cut_short" not in body(result)
    snap = body(result)["task"] if tool == "task_poll" else body(result)["tasks"][0]
    assert snap["status"] == "completed"
    assert "task t2: status 'completed', finished" in text(result)


@pytest.mark.rule("TOL-6")
@pytest.mark.parametrize("mode", ERAS)
def test_a_cancelled_request_ends_the_wait_at_once(tmp_path: Path, mode: str) -> None:
    store = sqlite_store(tmp_path / "w.db")
    tools = tools_server(store, TokenHolder(mint(store, "t1")), max_wait_ms=600_000)

    async def scenario() -> Any:
        async with client(tools, mode) as c:
            waiting = asyncio.ensure_future(
                call(
                    c,
                    "task_poll",
                    {"task_id": "t2", "interval_seconds": 60, "timeout_seconds": 3600},
                )
            )
            assert await asyncio.to_thread(tools.wait_busy, BOUND)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            # the delivery thread saw the cancellation: it ended long before its 60 s round
            assert await asyncio.to_thread(tools.wait_idle, BOUND / 3)
            return await call(c, "task_list", {})  # the server still answers

    try:
        with unchanged(store, audited=2):  # the cancelled poll's and the task_list's
            after = asyncio.run(scenario())
    finally:
        store.close()
    assert body(after)["outcome"] == "done"


@pytest.mark.rule("TOL-6")
def test_progress_notifications_while_a_call_waits(tmp_path: Path) -> None:
    store = sqlite_store(tmp_path / "w.db")
    tools = ToolsMcp(
        store,
        store.ports,
        token_of=TokenHolder(mint(store, "t1")),
        max_wait_ms=1_000,
        progress_seconds=0.1,
    )
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    async def scenario() -> Any:
        async with client(tools) as c:
            return await c.call_tool(
                "task_poll", {"task_id": "t2", "timeout_seconds": 60}, progress_callback=progress
            )

    try:
        result = asyncio.run(scenario())
    finally:
        store.close()
    assert body(result)["cut_short"] is True
    assert seen, "no notifications/progress arrived"
    assert all(total == 1000.0 and message == "waiting" for _, total, message in seen)
    values = [value for value, _, _ in seen]
    assert values == sorted(values) and values[-1] <= 1000.0
