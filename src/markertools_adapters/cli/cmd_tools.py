# Owns: `markertools tools token / revoke / serve` (docs/cli.md, docs/tools.md, TOL-3,
# TOL-6, TOL-8): mint a task token (printed once: stdout is the token alone, or with
# --json {"task_id", "token", "expires_at"}), revoke a task's tokens, and serve the
# fifteen marker tools as an MCP server (`markertools_adapters.tools.ToolsMcp`) on
# stdio (bound by MARKERTOOLS_TASK_TOKEN) or, with --http HOST:PORT, Streamable HTTP
# at /mcp on a loopback address (each request bound by its bearer token). Only parses
# options, opens the store (`markertools_adapters.connect`) and runs the library.
#
# Must never: print a token anywhere but `tools token`'s stdout, print to stdout while
# serving stdio (it is the MCP stream), or answer a usage error, an unknown or stopped
# task, a non-loopback --http address or an unreachable database with anything but one
# line on stderr and exit 2.
from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import Annotated, Any

import typer

from markertools_adapters.cli._app import UsageFailure, fail, tools_app
from markertools_adapters.cli._io import db_location, emit_json

Db = Annotated[
    str,
    typer.Option(
        "--db",
        help="the markertools database: a SQLite file or a postgresql:// URL",
        metavar="URL",
    ),
]
TaskId = Annotated[str, typer.Option("--task", help="the task the token binds", metavar="ID")]


def _connect(db: str, executor: str = "noop") -> Any:
    from markertools_adapters import connect
    from markertools_adapters.stores import redact

    try:
        location = db_location(db)
    except UsageFailure as exc:
        fail(str(exc))
    try:
        return connect(location, executor=executor, must_exist=True)  # type: ignore[arg-type]
    except ImportError as exc:
        fail(f"--db: storage adapter not available in this build ({exc})")
    except Exception as exc:
        fail(f"--db {redact(db)}: cannot open: {exc}")


@tools_app.command("token")
def token_cmd(
    db: Db,
    task: TaskId,
    ttl: Annotated[
        float,
        typer.Option("--ttl", help="seconds the token is valid (default 24 h)", metavar="SECONDS"),
    ] = 86_400.0,
    as_json: Annotated[
        bool, typer.Option("--json", help='print {"task_id", "token", "expires_at"}')
    ] = False,
) -> None:
    """Mint a task token (TOL-3) for a running task; it is printed once, stored as a hash."""
    from markertools import TaskTokenRefused, mint_task_token

    if not ttl > 0 or ttl == float("inf"):
        fail("--ttl SECONDS must be a positive number")
    store = _connect(db)
    try:
        ports = store.ports
        try:
            minted = mint_task_token(
                store,
                task,
                now=ports.clock.now(),
                token_hex=ports.random.token_hex,
                ttl_seconds=ttl,
            )
        except TaskTokenRefused as exc:
            fail(f"--task: {exc}")
        except ValueError as exc:
            fail(str(exc))
    finally:
        store.close()
    if as_json:
        emit_json(
            {"task_id": minted.task_id, "token": minted.token, "expires_at": minted.expires_at}
        )
    else:
        sys.stdout.write(minted.token + "\n")


@tools_app.command("revoke")
def revoke_cmd(db: Db, task: TaskId) -> None:
    """Revoke every token of the task (TOL-3); the task's tool servers refuse from then on."""
    from markertools import revoke_task_tokens

    store = _connect(db)
    try:
        count = revoke_task_tokens(store, task)
    finally:
        store.close()
    sys.stderr.write(f"markertools: revoked {count} token(s) of task {task}\n")


@tools_app.command("serve")
def serve_cmd(
    db: Db,
    locale: Annotated[
        str, typer.Option("--locale", help="language of descriptions and results", metavar="en|zh")
    ] = "en",
    max_wait_ms: Annotated[
        int,
        typer.Option(
            "--max-wait-ms",
            help="how long one task_poll or wait_threads call waits at most; a call cut "
            "short says what is still running and what to do next (TOL-6)",
            metavar="N",
        ),
    ] = 100_000,
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            help="serve Streamable HTTP at http://HOST:PORT/mcp (loopback addresses only), "
            "each request bound by its Authorization: Bearer token; default: stdio, bound "
            "by MARKERTOOLS_TASK_TOKEN",
            metavar="HOST:PORT",
        ),
    ] = None,
    executor: Annotated[
        str,
        typer.Option(
            "--executor",
            help="what task_cancel signals: noop, local or docker (as for deliver)",
            metavar="KIND",
        ),
    ] = "noop",
    max_calls_per_token: Annotated[
        int,
        typer.Option(
            "--max-calls-per-token",
            help="calls one token may run at once; one more is refused naming the bound (TOL-11)",
            metavar="N",
        ),
    ] = 8,
    max_sessions_per_token: Annotated[
        int,
        typer.Option(
            "--max-sessions-per-token",
            help="with --http: sessions one token may hold open; a new one past it ends "
            "the token's oldest idle session, or is refused when all are busy (TOL-11)",
            metavar="N",
        ),
    ] = 8,
    store_outage_seconds: Annotated[
        float,
        typer.Option(
            "--store-outage-seconds",
            help="how long a store outage is ridden out (calls wait for the store within "
            "their own limit, then are refused naming the outage); past it the server "
            "exits 75 (FLT-3)",
            metavar="SECONDS",
        ),
    ] = 300.0,
) -> None:
    """The fifteen marker tools as an MCP server bound to one task per token (TOL-1..11)."""
    from markertools_adapters._outage import EX_TEMPFAIL
    from markertools_adapters.tools import (
        ListenFailed,
        NotLoopback,
        ToolsMcp,
        bearer_token,
        env_token,
        listen,
        parse_listen,
    )

    if locale not in ("en", "zh"):
        fail(f"--locale {locale[:40]}: expected en or zh")
    if max_wait_ms < 0 or max_wait_ms > 3_600_000:
        fail("--max-wait-ms N must be between 0 and 3600000")
    if executor not in ("noop", "local", "docker"):
        fail(f"--executor {executor[:40]}: expected noop, local or docker")
    if not 1 <= max_calls_per_token <= 100_000:
        fail("--max-calls-per-token N must be between 1 and 100000")
    if not 1 <= max_sessions_per_token <= 100_000:
        fail("--max-sessions-per-token N must be between 1 and 100000")
    if not 0 <= store_outage_seconds <= 86_400 * 7:
        fail("--store-outage-seconds SECONDS must be between 0 and 604800")
    address: tuple[str, int] | None = None
    if http is not None:
        try:
            address = parse_listen(http)
        except NotLoopback as exc:
            fail(str(exc))
    from markertools_adapters.tools import RateLimitFilter

    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="markertools tools serve: %(message)s"
    )
    for handler in logging.getLogger().handlers:  # TOL-11: what clients provoke, bounded
        handler.addFilter(RateLimitFilter(("mcp", "uvicorn", "sse_starlette", "psycopg")))
    store = _connect(db, executor)
    from markertools_adapters._secrets import hide_credentials

    hide_credentials(db)  # TOL-10: no password in this process's /proc cmdline / environ
    try:
        tools = ToolsMcp(
            store,
            store.ports,
            locale=locale,
            max_wait_ms=max_wait_ms,
            token_of=bearer_token if address is not None else env_token,
            max_calls_per_token=max_calls_per_token,
            store_outage_seconds=store_outage_seconds,
        )
        if address is not None:
            try:
                sock = listen(*address)
            except ListenFailed as exc:
                fail(str(exc))
            _run(_serve_http(tools, sock, max_sessions_per_token))
        else:
            _run(_serve_stdio(tools))
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    finally:
        store.close()
    if tools.fatal is not None:  # FLT-3: the outage outlasted its budget
        sys.stderr.write(f"markertools tools serve: {tools.fatal}\n")
        sys.stderr.flush()
        # at once: a worker thread may still block on the dead store (a pool timeout) or
        # on standard input, and would hold the interpreter's exit
        os._exit(EX_TEMPFAIL)


def _run(main: Any) -> None:
    """asyncio.run, an exception group of one error raised as that error."""
    try:
        asyncio.run(main)
    except BaseExceptionGroup as group:
        leaves = list(_leaves(group))
        if len(leaves) == 1:
            raise leaves[0] from None
        raise


def _leaves(group: BaseExceptionGroup[BaseException]) -> Any:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc


async def _serve_http(tools: Any, sock: Any, sessions_per_token: int) -> None:
    from markertools_adapters.tools import serve_http

    async with tools.running() as stopping:
        await serve_http(tools, sock, sessions_per_token=sessions_per_token, stop=stopping)


async def _serve_stdio(tools: Any) -> None:
    """Serve stdin/stdout through the bounded transport `dots serve` uses (one
    newline-delimited JSON-RPC message per line, malformed lines answered with JSON-RPC
    errors) until standard input closes, or an outage outlasts its budget."""
    import anyio

    from markertools_adapters._mcp_tools import serve_streams
    from markertools_adapters.dots._mcp_stdio import stdio_transport

    async with tools.running() as stopping, anyio.create_task_group() as group:

        async def stop_when_fatal() -> None:
            await stopping.wait()
            group.cancel_scope.cancel()

        group.start_soon(stop_when_fatal)
        async with stdio_transport(locale=tools.locale) as (read, write):
            await serve_streams(tools.server, read, write)
        group.cancel_scope.cancel()
