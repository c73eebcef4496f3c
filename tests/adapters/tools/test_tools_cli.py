"""`markertools tools token / revoke / serve` as a person and a host run them: the
console script in a process of its own. Tokens minted and revoked on the command line;
`tools serve` over stdio (bound by MARKERTOOLS_TASK_TOKEN, the SDK's stdio client on the
other end) and over Streamable HTTP on a loopback address with two tasks' bearer tokens
at once; a non-loopback address refused at start. The token text never appears in a
result, in stderr or in a usage error."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from http_support import http_client, http_server
from mcp import Client, StdioServerParameters
from support.cli import EXE, cli, one_line_failure
from tools_support import ERAS, LEGACY, VALID, body, sqlite_store, text

from markertools import TOOL_NAMES
from markertools_adapters import connect

TOKEN_PREFIX = "mtt_"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "w.db"
    sqlite_store(path).close()
    return path


def token(db: Path, task: str, *extra: str) -> str:
    done = cli("tools", "token", "--db", str(db), "--task", task, *extra)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout


@pytest.mark.rule("TOL-3")
def test_token_prints_the_token_alone_or_json_and_refuses_unknown_or_stopped_tasks(
    db: Path,
) -> None:
    plain = token(db, "t1")
    assert plain.endswith("\n") and plain.count("\n") == 1
    assert plain.startswith(TOKEN_PREFIX) and len(plain.strip()) == len(TOKEN_PREFIX) + 64
    shaped = json.loads(token(db, "t1", "--json", "--ttl", "60"))
    assert set(shaped) == {"task_id", "token", "expires_at"} and shaped["task_id"] == "t1"
    assert shaped["expires_at"] <= time.time() + 60 and shaped["token"] != plain.strip()
    one_line_failure(cli("tools", "token", "--db", str(db), "--task", "nope"), "no task 'nope'")
    one_line_failure(
        cli("tools", "token", "--db", str(db), "--task", "t3"),
        "task 't3' is completed, not running",
    )
    one_line_failure(
        cli("tools", "token", "--db", str(db), "--task", "t1", "--ttl", "0"), "--ttl SECONDS"
    )
    one_line_failure(
        cli("tools", "token", "--db", str(db.parent / "absent.db"), "--task", "t1"), "cannot open"
    )
    raw = db.read_bytes()  # the store keeps only hashes of tokens
    assert plain.strip().encode() not in raw and shaped["token"].encode() not in raw


@pytest.mark.rule("TOL-8")
def test_serve_refuses_a_non_loopback_http_address_at_start(db: Path) -> None:
    for address in ("0.0.0.0:8765", "192.168.1.5:80", "example.com:80", "[::]:80"):
        one_line_failure(
            cli("tools", "serve", "--db", str(db), "--http", address),
            "only a loopback address is allowed",
        )
    one_line_failure(cli("tools", "serve", "--db", str(db), "--http", "8765"), "expected HOST:PORT")
    one_line_failure(cli("tools", "serve", "--db", str(db), "--locale", "fr"), "--locale")


# ---- stdio -------------------------------------------------------------------------------


@asynccontextmanager
async def stdio(db: Path, tok: str | None, errlog: Path, mode: str) -> AsyncIterator[Client]:
    env = {k: v for k, v in os.environ.items() if k != "MARKERTOOLS_TASK_TOKEN"}
    if tok is not None:
        env["MARKERTOOLS_TASK_TOKEN"] = tok
    command = f"exec {shlex.quote(str(EXE))} tools serve --db {shlex.quote(str(db))} 2>>{shlex.quote(str(errlog))}"
    params = StdioServerParameters(command="sh", args=["-c", command], env=env)
    async with Client(params, mode=mode, read_timeout_seconds=60) as c:
        yield c


@pytest.mark.rule("TOL-3", "TOL-8")
@pytest.mark.parametrize("mode", ERAS)
def test_stdio_server_acts_for_its_token_until_revoked(db: Path, tmp_path: Path, mode: str) -> None:
    tok = token(db, "t1").strip()
    errlog = tmp_path / "stderr.txt"
    seen: list[Any] = []

    async def scenario() -> None:
        async with stdio(db, tok, errlog, mode) as c:
            assert len((await c.list_tools()).tools) == 15
            seen.append(await c.call_tool("task_create", {"prompt": "from stdio"}))
            seen.append(await c.call_tool("task_list", {}))
            revoked = await asyncio.to_thread(
                cli, "tools", "revoke", "--db", str(db), "--task", "t1"
            )
            assert revoked.returncode == 0 and "revoked 1 token(s) of task t1" in revoked.stderr
            seen.append(await c.call_tool("todo_create", {"title": "after revoke"}))
        async with stdio(db, None, errlog, mode) as c:
            seen.append(await c.call_tool("task_list", {}))

    asyncio.run(scenario())
    made, listed, after_revoke, no_token = seen
    assert body(made)["outcome"] == "done"
    child = body(made)["task_id"]
    assert child in text(listed)
    assert after_revoke.is_error and text(after_revoke) == "not authorised: token revoked"
    assert no_token.is_error and text(no_token) == "not authorised: no token"
    every = json.dumps([r.model_dump(mode="json") for r in seen]) + errlog.read_text()
    assert tok not in every and tok[4:24] not in every


@pytest.mark.rule("TOL-2", "VAL-8")
def test_a_named_task_create_call_names_the_id_and_a_later_at_name_call_says_why_not(
    db: Path, tmp_path: Path
) -> None:
    """Issue 36, item 6: task_create with a name no longer offers "@probe" to later calls;
    a task_poll of "@probe" says that calls name tasks by id; the id it answered works."""
    tok = token(db, "t1").strip()
    seen: list[Any] = []

    async def scenario() -> None:
        async with stdio(db, tok, tmp_path / "stderr.txt", LEGACY) as c:
            listed = {t.name: t.description or "" for t in (await c.list_tools()).tools}
            seen.append(listed)
            seen.append(await c.call_tool("task_create", {"name": "probe", "prompt": "probe it"}))
            seen.append(await c.call_tool("task_poll", {"task_id": "@probe"}))
            assert "task_id" in body(seen[1]), body(seen[1])
            made = body(seen[1])["task_id"]
            seen.append(await c.call_tool("task_poll", {"task_id": made, "timeout_seconds": 0}))

    asyncio.run(scenario())
    listed, made, by_name, by_id = seen
    child = body(made)["task_id"]
    assert text(made).splitlines()[1].startswith(
        f'created task {child} (name "probe"; later calls name it by its id {child}): queued'
    )
    assert "@probe" not in text(made) and "later blocks" not in text(made)
    assert by_name.is_error and body(by_name)["outcome"] == "rejected"
    assert body(by_name)["reason"] == (
        "reference @probe: a tool call names a task by its id (the id task_create answered); "
        "@NAME references work only between the marker blocks of one turn"
    )
    assert not by_id.is_error and body(by_id)["task"]["id"] == child
    assert f"task {child}: status 'queued'" in text(by_id)
    assert listed["task_poll"].endswith(
        'Name tasks by their ids (task_create answers the new id): "@NAME" references work '
        "only between the marker blocks of one turn, never across tool calls."
    )
    assert "@NAME" not in listed["todo_list"]


# ---- Streamable HTTP ---------------------------------------------------------------------


@pytest.mark.rule("TOL-3", "TOL-8")
def test_http_server_binds_each_request_by_its_bearer_token(db: Path, tmp_path: Path) -> None:
    tok1, tok9 = token(db, "t1").strip(), token(db, "t9").strip()
    errlog = tmp_path / "stderr.txt"
    out: dict[str, Any] = {}

    async def scenario(url: str) -> None:
        async with http_client(url, tok1) as a, http_client(url, tok9) as b:
            out["a"] = await a.call_tool("task_create", {"prompt": "for t1"})
            out["b"] = await b.call_tool("task_create", {"prompt": "for t9"})
            out["b_cancel"] = await b.call_tool("task_cancel", {"task_id": "t2"})
            for tool in TOOL_NAMES:  # every tool over HTTP, as t1
                if tool not in ("task_create", "task_cancel"):
                    args = dict(VALID.get(tool, {}))
                    if tool == "todo_update":
                        args["status"] = "completed"
                    out[tool] = await a.call_tool(tool, args)
        async with http_client(url, None) as anon:
            out["anon"] = await anon.call_tool("task_list", {})
        async with http_client(url, "mtt_" + "1" * 64) as guessed:
            out["guessed"] = await guessed.call_tool("task_list", {})

    with http_server(db, errlog) as served:
        asyncio.run(scenario(served.url))
    with connect(db, executor="noop") as s:
        a_task = s.get_task(body(out["a"])["task_id"])
        b_task = s.get_task(body(out["b"])["task_id"])
        t2 = s.get_task("t2")
    assert (a_task.parent_task_id, a_task.project_id) == ("t1", "p1")
    assert (b_task.parent_task_id, b_task.project_id) == ("t9", "p2")
    assert out["b_cancel"].is_error and "belongs to another project" in text(out["b_cancel"])
    assert t2.status == "running"
    for tool in TOOL_NAMES:
        if tool in out:
            answered = body(out[tool])
            assert answered["kind"] == tool.replace("_", "-"), answered
            assert answered["outcome"] in ("done", "rejected"), answered
            assert not answered["text"].startswith("not authorised")
    assert body(out["task_list"])["outcome"] == "done"
    assert text(out["anon"]) == "not authorised: no token"
    assert text(out["guessed"]) == "not authorised: unknown token"
    every = json.dumps({k: v.model_dump(mode="json") for k, v in out.items()})
    every += errlog.read_text()
    for tok in (tok1, tok9):
        assert tok not in every and tok[4:24] not in every


@pytest.mark.rule("TOL-2", "TOL-8")
def test_stdio_answers_hostile_bytes_with_json_rpc_errors_and_stays_alive(db: Path) -> None:
    from support.mcp_wire import RawServe

    tok = token(db, "t1").strip()
    env = {**os.environ, "MARKERTOOLS_TASK_TOKEN": tok}
    with RawServe(None, env=env, argv=["tools", "serve", "--db", str(db)]) as raw:
        raw.initialize()
        huge = {"prompt": "x" * (9 * 1024 * 1024)}  # beyond one message's 8 MiB
        raw.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "task_create", "arguments": huge},
            }
        )
        too_large = raw.reply()
        raw.write(b'{"jsonrpc": "2.0", "id": 2, "method": \n')
        not_json = raw.reply()
        body_limit = raw.call(3, "task_create", {"prompt": "x" * 1_000_000})
        unknown = raw.call(4, "no_such_tool", {})
        alive = raw.call(5, "task_list", {})
        stderr = raw.finish()
    assert too_large["id"] == 1 and too_large["error"]["code"] == -32600
    assert not_json["id"] is None and not_json["error"]["code"] == -32700
    assert body_limit["isError"] is True
    assert "longer than a block body may be (262144" in body_limit["content"][0]["text"]
    assert unknown["isError"] is True and "no_such_tool" in unknown["content"][0]["text"]
    assert alive["structuredContent"]["outcome"] == "done"
    assert tok not in stderr and tok not in json.dumps([body_limit, unknown, alive])
    with connect(db, executor="noop") as s:
        tasks = s.export_world(time.time()).tasks
    assert sorted(t.id for t in tasks) == ["g1", "t1", "t2", "t3", "t9"]  # nothing created


@pytest.mark.rule("TOL-10")
def test_serve_overwrites_the_database_password_in_its_own_proc_entries(tmp_path: Path) -> None:
    """A same-user process reading /proc/PID/cmdline or environ of `tools serve` finds
    no database password there: the server overwrites it in place once connected."""
    from urllib.parse import urlsplit

    from support.worker import worker_store

    password = "pw-tools-serve-K4q"
    with worker_store("postgres", tmp_path) as store:
        parts = urlsplit(store.dsn)
        url = (
            f"postgresql://{parts.username or 'postgres'}:{password}@{parts.hostname}:"
            f"{parts.port}{parts.path}?options=-csearch_path%3D{store.schema_name}"
        )
        cmdline, environ = _serve_and_read_proc(url)
    assert b"tools\0serve\0--db\0postgresql://" in cmdline
    assert f":{'*' * len(password)}@".encode() in cmdline
    for secret in (password.encode(), b"pgpass-tools-J8w"):
        assert secret not in cmdline and secret not in environ
    assert b"DATABASE_URL=postgresql://" in environ  # the variable is there, its password not


def _serve_and_read_proc(url: str) -> tuple[bytes, bytes]:
    import subprocess

    env = {**os.environ, "PGPASSWORD": "pgpass-tools-J8w", "DATABASE_URL": url}
    proc = subprocess.Popen(
        [str(EXE), "tools", "serve", "--db", url],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}
        proc.stdin.write(json.dumps(hello).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1  # serving: connected and hidden
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        environ = Path(f"/proc/{proc.pid}/environ").read_bytes()
    finally:
        proc.kill()
        proc.wait(10)
    return cmdline, environ
