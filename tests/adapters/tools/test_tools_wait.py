"""TOL-6: task_poll and wait_threads through `tools serve` wait at most --max-wait-ms per
call and then say what is still running; a change of a waited task wakes them early (a
status read per slice on SQLite, LISTEN/NOTIFY on the real PostgreSQL); a cancelled
request (`notifications/cancelled`) ends the wait at once; a client that sent a progress
token gets `notifications/progress` while the call waits."""

from __future__ import annotations

import asyncio
import re
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


ADVICE = {
    "en": {
        "poll": "This call waited the server's limit of 300 ms per call; still running: t2. "
        "Call task_poll again to keep waiting: this turn allows 4 more.",
        "wait": "This call waited the server's limit of 300 ms per call; still running: t2. "
        "Call wait_threads again to keep waiting: this turn allows 1 more.",
        "last": "This call waited the server's limit of 300 ms per call; still running: t2. "
        "It was the last wait_threads call this turn allows (at most 2 per turn, blocks "
        "included), so another would be ignored: check on them in your next turn.",
        "state": r"task t2: status 'running', NOT finished: stopped waiting after 0\.3\d* s, "
        r"the limit of one call \(0\.3 s\), last status seen 'running'",
        "over": "over the per-turn cap: at most 2 wait-threads block(s) run per turn",
    },
    "zh": {
        "poll": "本次调用已等待到服务器的单次上限 300 毫秒；仍在运行：t2。"
        "再次调用 task_poll 即可继续等待：本轮还可调用 4 次。",
        "wait": "本次调用已等待到服务器的单次上限 300 毫秒；仍在运行：t2。"
        "再次调用 wait_threads 即可继续等待：本轮还可调用 1 次。",
        "last": "本次调用已等待到服务器的单次上限 300 毫秒；仍在运行：t2。这是本轮允许的最后一次 "
        "wait_threads 调用（每轮最多 2 次，含标记块），再调用也会被忽略：请在下一轮再查看它们。",
        "state": r"任务 t2：状态“running”，未结束：等待 0\.3\d* 秒后停止，已到单次调用的上限"
        r"（0\.3 秒），最后看到的状态为“running”",
        "over": "超过每轮上限：每轮最多执行 2 个 wait-threads 块",
    },
}


@pytest.mark.rule("TOL-6", "TOL-4")
@pytest.mark.parametrize(("mode", "locale"), [(ERAS[0], "en"), (ERAS[1], "en"), (ERAS[0], "zh")])
def test_a_wait_cut_short_gives_one_advice_that_respects_the_turns_cap(
    tmp_path: Path, mode: str, locale: str
) -> None:
    store = sqlite_store(tmp_path / "w.db")
    tools = tools_server(store, TokenHolder(mint(store, "t1")), max_wait_ms=300, locale=locale)
    waiting = {"task_ids": ["t2", "t3"], "timeout_seconds": 600}

    async def scenario() -> list[Any]:
        async with client(tools, mode) as c:
            poll = await call(c, "task_poll", {"task_id": "t2", "timeout_seconds": 600})
            waits = [await call(c, "wait_threads", waiting) for _ in range(3)]
            return [poll, *waits]

    try:
        poll, wait, last, over = asyncio.run(scenario())
    finally:
        store.close()
    said = ADVICE[locale]
    for result, advice, left in (
        (poll, said["poll"], 4),
        (wait, said["wait"], 1),
        (last, said["last"], 0),
    ):
        assert not result.is_error
        shown = body(result)
        assert shown["cut_short"] is True and shown["still_running"] == ["t2"]
        assert shown["calls_left"] == left
        assert shown["text"] == text(result)
        lines = text(result).splitlines()
        assert lines[-1] == advice  # one piece of advice, the last line
        assert re.search(said["state"], text(result)), text(result)
        for contradiction in ("later turn", "Repeat the call", "之后的轮次", "deadline"):
            assert contradiction not in text(result)
    assert (locale != "en") or "1 finished, 1 not finished" in text(wait)
    assert body(over)["outcome"] == "ignored" and said["over"] in text(over)
    assert "cut_short" not in body(over)


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
        # the poll was cancelled while it waited, before its delivery (TOL-11: a call
        # waits first, then is delivered): it is neither audited nor counted; the
        # task_list's audit record is the one new record
        with unchanged(store, audited=1):
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
