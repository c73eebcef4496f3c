"""FLT-3 for `tools serve`: a store outage is ridden out, against the console script
serving Streamable HTTP and a real PostgreSQL server of the test's own that the test
halts mid-call and resumes: a waiting call keeps waiting and answers once its target
finishes, a call made during the outage waits for the store (within its own limit) and
is then answered, or refused naming the outage when its limit passes first; the outage
is logged once when it begins and once when it ends, with its cause; past
--store-outage-seconds the server exits 75 with one line - never a crash or a hang."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import pytest
from http_support import Served, http_client, http_server
from outage_support import PrivatePostgres, private_postgres
from tools_support import body, mint, text, world

from markertools_adapters import connect

BEGAN = "markertools tools serve: the store outage began: StoreUnavailable: "
ENDED = "markertools tools serve: the store outage ended after "


@pytest.fixture
def pg() -> Any:
    with private_postgres() as server:
        yield server


def _token(pg: PrivatePostgres) -> str:
    store = connect(pg.dsn, executor="noop")
    try:
        store.load_world(world())
        return mint(store, "t1")
    finally:
        store.close()


def _finish_t2(pg: PrivatePostgres) -> None:
    store = connect(pg.dsn, executor="noop")
    try:
        assert store.transition_task("t2", "running", {"status": "completed", "result_text": "ok"})
    finally:
        store.close()


@pytest.mark.rule("FLT-3", "TOL-6")
def test_an_outage_mid_call_is_ridden_out_and_logged_once(
    pg: PrivatePostgres, tmp_path: Path
) -> None:
    tok = _token(pg)
    errlog = tmp_path / "stderr.txt"
    seen: dict[str, Any] = {}

    async def scenario(served: Served) -> None:
        async with http_client(served.url, tok) as c:
            waiting = asyncio.ensure_future(
                c.call_tool(
                    "task_poll", {"task_id": "t2", "interval_seconds": 60, "timeout_seconds": 600}
                )
            )
            await asyncio.sleep(0.5)  # the poll waits on the server
            await asyncio.to_thread(pg.halt)
            during = asyncio.ensure_future(c.call_tool("task_list", {}))
            await asyncio.sleep(2.0)  # both calls wait through the outage
            seen["pending"] = not waiting.done() and not during.done()
            await asyncio.to_thread(pg.resume)
            seen["during"] = await during
            await asyncio.to_thread(_finish_t2, pg)
            seen["waiting"] = await waiting
            seen["after"] = await c.call_tool("todo_list", {})

    with http_server(pg.dsn, errlog, "--max-wait-ms", "60000") as served:
        asyncio.run(scenario(served))
        seen["alive"] = served.proc.poll() is None
    assert seen["pending"] and seen["alive"]
    assert body(seen["during"])["outcome"] == "done" and "task(s) of your project" in text(
        seen["during"]
    )
    assert body(seen["waiting"])["outcome"] == "done"
    assert "task t2: status 'completed', finished" in text(seen["waiting"])
    assert body(seen["after"])["outcome"] == "done"
    lines = errlog.read_text().splitlines()
    assert [line for line in lines if line.startswith(BEGAN)] != []
    assert len([line for line in lines if "outage began" in line]) == 1, lines
    assert len([line for line in lines if line.startswith(ENDED)]) == 1, lines
    assert "Traceback" not in errlog.read_text()
    assert len(lines) <= 12, lines  # the pool's reconnect lines are rate-limited, one line each


@pytest.mark.rule("FLT-3")
def test_a_call_whose_limit_passes_in_an_outage_is_refused_naming_it(
    pg: PrivatePostgres, tmp_path: Path
) -> None:
    tok = _token(pg)
    seen: dict[str, Any] = {}

    async def scenario(served: Served) -> None:
        async with http_client(served.url, tok) as c:
            assert body(await c.call_tool("task_list", {}))["outcome"] == "done"
            await asyncio.to_thread(pg.halt)
            try:
                seen["first"] = await c.call_tool("task_list", {})
                seen["second"] = await c.call_tool("task_create", {"prompt": "not now"})
            finally:
                await asyncio.to_thread(pg.resume)
            deadline = time.monotonic() + 60
            while True:  # the server notices the store is back (its watchdog probes)
                again = await c.call_tool("task_list", {})
                if not again.is_error or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
            seen["again"] = again

    with http_server(pg.dsn, tmp_path / "e.txt", "--max-wait-ms", "1500") as served:
        asyncio.run(scenario(served))
    for name in ("first", "second"):
        result = seen[name]
        assert result.is_error and body(result)["outcome"] == "rejected", text(result)
        assert text(result).startswith("rejected: the store has been unavailable for ")
        assert "StoreUnavailable" in text(result) and text(result).endswith(
            "; nothing was done - call again later"
        )
    assert body(seen["again"])["outcome"] == "done"
    store = connect(pg.dsn, executor="noop")
    try:
        prompts = [t.prompt for t in store.export_world(time.time()).tasks]
    finally:
        store.close()
    assert "not now" not in prompts  # refused: nothing was done


@pytest.mark.rule("FLT-3")
def test_an_outage_past_its_budget_exits_75_with_one_line(
    pg: PrivatePostgres, tmp_path: Path
) -> None:
    tok = _token(pg)
    errlog = tmp_path / "stderr.txt"

    async def scenario(served: Served) -> Any:
        async with http_client(served.url, tok) as c:
            await asyncio.to_thread(pg.halt)
            return await c.call_tool("task_list", {})

    with http_server(
        pg.dsn, errlog, "--max-wait-ms", "1000", "--store-outage-seconds", "2"
    ) as served:
        refused = asyncio.run(scenario(served))
        code = served.proc.wait(60)  # bounded: the budget is 2 s, a probe at most 5 s apart
    assert refused.is_error and "the store has been unavailable" in text(refused)
    assert code == 75
    lines = errlog.read_text().splitlines()
    last = lines[-1]
    assert re.fullmatch(
        r"markertools tools serve: the store was unavailable for (\d+(\.\d+)?) s, longer than"
        r" the outage budget of 2 s \(--store-outage-seconds\); last error: StoreUnavailable: .+",
        last,
    ), last
    assert float(re.search(r"for ([\d.]+) s", last).group(1)) > 2  # type: ignore[union-attr]
    assert (
        "longer than the outage budget of 2 s (--store-outage-seconds); last error: " in lines[-1]
    )
    assert "Traceback" not in errlog.read_text()


@pytest.mark.rule("FLT-3")
def test_an_outage_past_its_budget_ends_a_stdio_server_with_75_too(pg: PrivatePostgres) -> None:
    import json
    import os
    import subprocess

    from support.cli import EXE

    tok = _token(pg)
    env = {**os.environ, "MARKERTOOLS_TASK_TOKEN": tok}
    argv = [str(EXE), "tools", "serve", "--db", pg.dsn, "--max-wait-ms", "1000"]
    proc = subprocess.Popen(
        [*argv, "--store-outage-seconds", "2"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})  # fmt: skip
        assert json.loads(proc.stdout.readline())["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        pg.halt()
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "task_list", "arguments": {}}})  # fmt: skip
        refused = json.loads(proc.stdout.readline())["result"]
        code = proc.wait(60)  # standard input still open: the outage alone ends it
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert refused["isError"] and "the store has been unavailable" in refused["content"][0]["text"]
    assert code == 75
    stderr = proc.stderr.read().decode()
    assert stderr.splitlines()[-1].startswith("markertools tools serve: the store was unavailable for ")
    assert "Traceback" not in stderr
