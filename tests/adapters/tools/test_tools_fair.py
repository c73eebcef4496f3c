"""TOL-11, a shared `tools serve --http` is fair, against the console script as a server
process and the SDK's own client over real HTTP on loopback: a thousand waiting calls of
many tokens hold no thread (the server's thread count stays under a fixed bound) and
another task's call is answered while they wait; a token's ninth call at once is refused
naming the bound; a client that disconnects ends its wait (its slot is free again long
before the wait could end by itself); ten thousand initialize requests without a valid
bearer open no session (no mcp-session-id, bounded memory, bounded log lines) while a
valid token still works; sessions per token are bounded; the Host / Origin check holds
for every spelling of a loopback address; a start-up failure is one line and exit 2."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from http_support import (
    HEADERS,
    INIT,
    Served,
    http_client,
    http_server,
    raw_client,
    rss_mb,
    threads_of,
)
from support.cli import cli, one_line_failure
from tools_support import body, mint, sqlite_store, text

from markertools import Task
from markertools.domain.model import PermissionGrant, Project
from markertools_adapters import connect
from markertools_adapters.world import World

TOKENS = 125  # x 8 calls at once = 1,000 waiting calls
PER_TOKEN = 8
THREAD_BOUND = 32  # the server's threads, whatever the number of waiting calls
BOUND_TEXT = (
    "rejected: too many calls at once for this token: at most {n} run at the same time "
    "(--max-calls-per-token); call again once one has answered"
)
FOREVER = {"interval_seconds": 60, "timeout_seconds": 3600}


def fleet(n: int) -> World:
    """w0..w{n-1}, running tasks of p1, each with a running child c0..; `free`, a running
    task of its own; `done`, a finished one."""
    now = time.time()
    tasks = [Task("free", "p1", status="running", created_by="u1", turn=1)]
    tasks.append(Task("done", "p1", status="completed", created_by="u1", parent_task_id="free"))
    for i in range(n):
        tasks.append(Task(f"w{i}", "p1", status="running", created_by="u1", turn=1))
        tasks.append(Task(f"c{i}", "p1", status="running", created_by="u1", parent_task_id=f"w{i}"))
    return World(
        now=now,
        projects=(Project("p1", "shop"),),
        permissions=(PermissionGrant("u1", "p1", ("read", "create_task")),),
        tasks=tuple(tasks),
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.db"
    store = sqlite_store(path, fleet(TOKENS))
    store.close()
    return path


def tokens(db: Path, ids: list[str]) -> dict[str, str]:
    store = connect(db, executor="noop")
    try:
        return {i: mint(store, i) for i in ids}
    finally:
        store.close()


# ---- a thousand waiting calls ---------------------------------------------------------------


@pytest.mark.rule("TOL-11", "TOL-6")
def test_a_thousand_waiting_calls_hold_no_thread_and_another_tasks_call_is_answered(
    db: Path, tmp_path: Path
) -> None:
    toks = tokens(db, [f"w{i}" for i in range(TOKENS)] + ["free"])
    errlog = tmp_path / "stderr.txt"
    seen: dict[str, Any] = {}

    async def waiter(served: Served, i: int, waiting: dict[int, int], ready: asyncio.Event) -> None:
        async with http_client(served.url, toks[f"w{i}"], read_timeout_seconds=600) as c:

            async def one(n: int) -> Any:
                async def progress(value: float, total: float | None, message: str | None) -> None:
                    if (
                        waiting.get(i * PER_TOKEN + n, 0) == 0
                        and len(waiting) + 1 >= TOKENS * PER_TOKEN
                    ):
                        ready.set()
                    waiting[i * PER_TOKEN + n] = waiting.get(i * PER_TOKEN + n, 0) + 1

                return await c.call_tool(
                    "task_poll", {"task_id": f"c{i}", **FOREVER}, progress_callback=progress
                )

            calls = [asyncio.ensure_future(one(n)) for n in range(PER_TOKEN)]
            try:
                await asyncio.sleep(3600)  # cancelled when the test is done
            finally:
                seen.setdefault("returned", 0)
                seen["returned"] += sum(1 for f in calls if f.done() and not f.cancelled())
                for f in calls:
                    f.cancel()
                await asyncio.gather(*calls, return_exceptions=True)

    async def scenario(served: Served) -> None:
        waiting: dict[int, int] = {}
        ready = asyncio.Event()
        clients = [asyncio.ensure_future(waiter(served, i, waiting, ready)) for i in range(TOKENS)]
        try:
            # every one of the 1,000 calls reported progress: it waits on the server
            try:
                await asyncio.wait_for(ready.wait(), 240)
            except TimeoutError:
                raise AssertionError(f"{len(waiting)} of the calls reported progress") from None
            seen["waiting"] = len(waiting)
            seen["threads"] = threads_of(served.proc)
            seen["rss"] = rss_mb(served.proc)
            async with http_client(served.url, toks["w0"]) as ninth:
                seen["ninth"] = await ninth.call_tool("task_list", {})
            async with http_client(served.url, toks["free"]) as other:
                seen["list"] = await other.call_tool("task_list", {"q": "w1"})
                seen["poll"] = await other.call_tool("task_poll", {"task_id": "done"})
            seen["threads_after"] = threads_of(served.proc)
            seen["still_waiting"] = sum(1 for c in clients if not c.done())
        finally:
            for c in clients:
                c.cancel()
            await asyncio.gather(*clients, return_exceptions=True)

    with http_server(db, errlog, "--max-wait-ms", "600000") as served:
        asyncio.run(scenario(served))
        alive = served.proc.poll() is None
    assert alive
    assert seen["waiting"] == TOKENS * PER_TOKEN and seen["still_waiting"] == TOKENS
    assert seen["returned"] == 0  # no waiting call was answered: they all still waited
    assert seen["threads"] <= THREAD_BOUND and seen["threads_after"] <= THREAD_BOUND, seen
    assert seen["rss"] < 400, seen
    assert seen["ninth"].is_error and text(seen["ninth"]) == BOUND_TEXT.format(n=8)
    assert body(seen["list"])["outcome"] == "done" and "w1" in text(seen["list"])
    assert (
        body(seen["poll"])["outcome"] == "done"
        and body(seen["poll"])["task"]["status"] == "completed"
    )


# ---- a client that disconnects ----------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def main(url, tok):
        async def progress(value, total, message):
            print("waiting", flush=True)

        hc = create_mcp_http_client(headers={"Authorization": "Bearer " + tok})
        async with hc, Client(streamable_http_client(url, http_client=hc), mode="legacy") as c:
            await c.call_tool(
                "task_poll",
                {"task_id": "c0", "interval_seconds": 60, "timeout_seconds": 3600},
                progress_callback=progress,
            )

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


@pytest.mark.rule("TOL-11", "TOL-6")
def test_a_client_that_disconnects_ends_its_wait(db: Path, tmp_path: Path) -> None:
    toks = tokens(db, ["w0"])
    errlog = tmp_path / "stderr.txt"
    seen: dict[str, Any] = {}

    async def scenario(served: Served) -> None:
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CHILD, served.url, toks["w0"], stdout=asyncio.subprocess.PIPE
        )
        assert child.stdout is not None
        line = await asyncio.wait_for(child.stdout.readline(), 60)
        assert line == b"waiting\n"  # its call waits on the server
        async with http_client(served.url, toks["w0"]) as c:
            seen["while"] = await c.call_tool("task_list", {})  # the token's one call runs
            child.send_signal(signal.SIGKILL)  # no DELETE, no cancel: the socket just goes
            await child.wait()
            deadline = time.monotonic() + 60  # the wait itself would last 600 s
            while True:
                after = await c.call_tool("task_list", {})
                if not after.is_error or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.05)
            seen["after"] = after

    with http_server(db, errlog, "--max-wait-ms", "600000", "--max-calls-per-token", "1") as served:
        asyncio.run(scenario(served))
    assert text(seen["while"]) == BOUND_TEXT.format(n=1)
    assert body(seen["after"])["outcome"] == "done", text(seen["after"])
    with connect(db, executor="noop") as store:
        kinds = [r.kind for r in store.export_world(time.time()).audit]
    assert "task-poll" not in kinds  # the poll ended before its delivery: nothing done


# ---- no state without a valid bearer ----------------------------------------------------------


@pytest.mark.rule("TOL-11", "TOL-3")
def test_ten_thousand_initializes_without_a_valid_bearer_open_no_session(
    db: Path, tmp_path: Path
) -> None:
    toks = tokens(db, ["free"])
    errlog = tmp_path / "stderr.txt"
    seen: dict[str, Any] = {"statuses": {}, "sessions": 0}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "task_list", "arguments": {}}}  # fmt: skip

    async def flood(served: Served, requests: int, payload: dict[str, Any], bearer: bool) -> None:
        queue = list(range(requests))

        async def worker(client: Any) -> None:
            while queue:
                n = queue.pop()
                headers = dict(HEADERS)
                if bearer:  # a forged token, a new one every time
                    headers["authorization"] = f"Bearer mtt_{n:064x}"
                r = await client.post(served.url, json=payload, headers=headers)
                seen["statuses"][r.status_code] = seen["statuses"].get(r.status_code, 0) + 1
                seen["sessions"] += "mcp-session-id" in r.headers
                seen["last"] = r.text

        async with raw_client() as client:
            await asyncio.gather(*(worker(client) for _ in range(32)))

    async def scenario(served: Served) -> None:
        seen["rss_before"] = rss_mb(served.proc)
        await flood(served, 8000, INIT, bearer=False)
        await flood(served, 2000, INIT, bearer=True)
        await flood(served, 500, call, bearer=True)
        seen["refused_call"] = seen["last"]
        seen["rss_after"] = rss_mb(served.proc)
        async with http_client(served.url, toks["free"]) as c:
            seen["valid"] = await c.call_tool("task_list", {})

    started = time.monotonic()
    with http_server(db, errlog) as served:
        asyncio.run(scenario(served))
    took = time.monotonic() - started
    assert seen["statuses"] == {200: 10_500} and seen["sessions"] == 0
    assert '"isError":true' in seen["refused_call"]
    assert "not authorised: unknown token" in seen["refused_call"]
    assert body(seen["valid"])["outcome"] == "done"
    assert seen["rss_after"] < 300 and seen["rss_after"] - seen["rss_before"] < 60, seen
    lines = errlog.read_text().splitlines()
    assert len(lines) <= took / 10 + 3, lines  # refusals: one line per 10 s at most
    assert all(line.startswith("markertools tools serve: ") for line in lines), lines


# ---- sessions per token -----------------------------------------------------------------------


async def _open(client: Any, served: Served, tok: str) -> str:
    headers = {**HEADERS, "authorization": f"Bearer {tok}"}
    r = await client.post(served.url, json=INIT, headers=headers)
    assert r.status_code == 200, r.text
    sid = str(r.headers["mcp-session-id"])
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    done = await client.post(served.url, json=note, headers={**headers, "mcp-session-id": sid})
    assert done.status_code == 202, done.text
    return sid


async def _list(client: Any, served: Served, tok: str, sid: str) -> Any:
    headers = {**HEADERS, "authorization": f"Bearer {tok}", "mcp-session-id": sid}
    payload = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}
    return await client.post(served.url, json=payload, headers=headers)


@pytest.mark.rule("TOL-11")
def test_a_tokens_sessions_are_bounded_the_least_recently_used_idle_one_ends(
    db: Path, tmp_path: Path
) -> None:
    toks = tokens(db, ["w0", "w1"])
    seen: dict[str, Any] = {}

    async def scenario(served: Served) -> None:
        async with raw_client() as client:
            first = await _open(client, served, toks["w0"])
            second = await _open(client, served, toks["w0"])
            assert (await _list(client, served, toks["w0"], first)).status_code == 200
            third = await _open(client, served, toks["w0"])  # the bound is 2: `second` ends
            seen["second"] = await _list(client, served, toks["w0"], second)
            seen["first"] = await _list(client, served, toks["w0"], first)
            seen["third"] = await _list(client, served, toks["w0"], third)
            seen["stolen"] = await _list(client, served, toks["w1"], third)  # another token

    with http_server(db, tmp_path / "e.txt", "--max-sessions-per-token", "2") as served:
        asyncio.run(scenario(served))
    assert seen["second"].status_code == 404 and "Session not found" in seen["second"].text
    assert seen["first"].status_code == 200 and "task_create" in seen["first"].text
    assert seen["third"].status_code == 200
    assert seen["stolen"].status_code == 404 and "Session not found" in seen["stolen"].text


@pytest.mark.rule("TOL-11")
def test_a_new_session_past_the_bound_is_refused_when_every_session_is_busy(
    db: Path, tmp_path: Path
) -> None:
    toks = tokens(db, ["w0"])
    seen: dict[str, Any] = {}

    async def scenario(served: Served) -> None:
        started = asyncio.Event()

        async def progress(value: float, total: float | None, message: str | None) -> None:
            started.set()

        async with http_client(served.url, toks["w0"]) as busy:
            waiting = asyncio.ensure_future(
                busy.call_tool(
                    "task_poll", {"task_id": "c0", **FOREVER}, progress_callback=progress
                )
            )
            await asyncio.wait_for(started.wait(), 60)
            async with raw_client() as client:
                headers = {**HEADERS, "authorization": f"Bearer {toks['w0']}"}
                seen["refused"] = await client.post(served.url, json=INIT, headers=headers)
            seen["pending"] = not waiting.done()
            waiting.cancel()
            await asyncio.gather(waiting, return_exceptions=True)

    with http_server(db, tmp_path / "e.txt", "--max-sessions-per-token", "1") as served:
        asyncio.run(scenario(served))
    refused = seen["refused"]
    assert refused.status_code == 503 and "mcp-session-id" not in refused.headers
    assert json.loads(refused.text)["error"]["message"] == (
        "too many open sessions for this token: at most 1 (--max-sessions-per-token), each "
        "of them busy; end one (DELETE) or wait for one to finish"
    )
    assert seen["pending"]  # the busy session's call was not disturbed


# ---- Host and Origin --------------------------------------------------------------------------


@pytest.mark.rule("TOL-11", "TOL-8")
@pytest.mark.parametrize(
    ("host", "spelled"),
    [
        ("127.0.0.2", "127.0.0.2"),
        ("::1", "[0:0:0:0:0:0:0:1]"),
        ("::1", "[::1]"),
        ("127.0.0.1", "localhost"),
    ],
)
def test_host_and_origin_are_checked_for_every_spelling_of_loopback(
    db: Path, tmp_path: Path, host: str, spelled: str
) -> None:
    seen: dict[str, Any] = {}

    async def scenario(served: Served) -> None:
        port = served.authority.rsplit(":", 1)[1]
        own = f"{spelled}:{port}"
        cases = {
            "evil_host": {"host": "evil.example"},
            "evil_host_port": {"host": f"evil.example:{port}"},
            "lookalike": {"host": f"127.0.0.1.evil.example:{port}"},
            "evil_origin": {"host": own, "origin": "http://evil.example"},
            "evil_origin_port": {"host": own, "origin": f"http://evil.example:{port}"},
            "null_origin": {"host": own, "origin": "null"},
            "own": {"host": own, "origin": f"http://{own}"},
            "canonical": {"host": served.authority},
        }
        async with raw_client() as client:
            for name, extra in cases.items():
                seen[name] = await client.post(served.url, json=INIT, headers={**HEADERS, **extra})

    with http_server(db, tmp_path / "e.txt", host=host, shown=spelled) as served:
        asyncio.run(scenario(served))
    for name in ("evil_host", "evil_host_port", "lookalike"):
        assert (seen[name].status_code, seen[name].text) == (421, "Invalid Host header"), name
    for name in ("evil_origin", "evil_origin_port", "null_origin"):
        assert (seen[name].status_code, seen[name].text) == (403, "Invalid Origin header"), name
    for name in ("own", "canonical"):
        assert seen[name].status_code == 200 and '"serverInfo"' in seen[name].text, name


# ---- start-up failures ------------------------------------------------------------------------


@pytest.mark.rule("TOL-11", "TOL-8")
def test_a_start_up_failure_is_one_line_and_exit_2(db: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        one_line_failure(
            cli("tools", "serve", "--db", str(db), "--http", f"127.0.0.1:{port}"),
            f"--http 127.0.0.1:{port}: cannot listen: Address already in use",
        )
    one_line_failure(
        cli("tools", "serve", "--db", str(db), "--http", "[::1%lo]:8765"),
        "a zone index (%...) is not allowed",
    )
    one_line_failure(
        cli(
            "tools",
            "serve",
            "--db",
            str(db),
            "--http",
            "127.0.0.1:8765",
            "--max-calls-per-token",
            "0",
        ),
        "--max-calls-per-token N must be between 1 and 100000",
    )


@pytest.mark.rule("TOL-11", "TOL-8")
def test_a_client_of_the_per_request_era_is_served_without_a_session(
    db: Path, tmp_path: Path
) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    toks = tokens(db, ["w0"])
    seen: dict[str, Any] = {}

    async def scenario(served: Served) -> None:
        for name, tok in (("bound", toks["w0"]), ("anonymous", None)):
            headers = {"Authorization": f"Bearer {tok}"} if tok else {}
            async with (
                create_mcp_http_client(headers=headers) as hc,
                Client(streamable_http_client(served.url, http_client=hc), mode="2026-07-28") as c,
            ):
                seen[name] = await c.call_tool("task_poll", {"task_id": "c0", **FOREVER})

    with http_server(db, tmp_path / "e.txt", "--max-wait-ms", "300") as served:
        asyncio.run(scenario(served))
    bound = seen["bound"]
    assert body(bound)["outcome"] == "done" and body(bound)["cut_short"] is True
    assert (
        text(bound)
        .splitlines()[-1]
        .endswith("Call task_poll again to keep waiting: this turn allows 4 more.")
    )
    assert text(seen["anonymous"]) == "not authorised: no token"
