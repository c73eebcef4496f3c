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
            "short says what is still running and can be repeated (TOL-6)",
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
            metavar="noop|local|docker",
        ),
    ] = "noop",
) -> None:
    """The fifteen marker tools as an MCP server bound to one task per token (TOL-1..8)."""
    from markertools_adapters.tools import (
        NotLoopback,
        ToolsMcp,
        bearer_token,
        env_token,
        parse_listen,
        serve_http,
    )

    if locale not in ("en", "zh"):
        fail(f"--locale {locale[:40]}: expected en or zh")
    if max_wait_ms < 0 or max_wait_ms > 3_600_000:
        fail("--max-wait-ms N must be between 0 and 3600000")
    if executor not in ("noop", "local", "docker"):
        fail(f"--executor {executor[:40]}: expected noop, local or docker")
    listen: tuple[str, int] | None = None
    if http is not None:
        try:
            listen = parse_listen(http)
        except NotLoopback as exc:
            fail(str(exc))
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="markertools tools serve: %(message)s"
    )
    store = _connect(db, executor)
    try:
        tools = ToolsMcp(
            store,
            store.ports,
            locale=locale,
            max_wait_ms=max_wait_ms,
            token_of=bearer_token if listen is not None else env_token,
        )
        if listen is not None:
            asyncio.run(serve_http(tools, *listen))
        else:
            asyncio.run(_serve_stdio(tools))
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    finally:
        store.close()


async def _serve_stdio(tools: Any) -> None:
    """Serve stdin/stdout through the bounded transport `dots serve` uses (one
    newline-delimited JSON-RPC message per line, malformed lines answered with JSON-RPC
    errors) until standard input closes."""
    from markertools_adapters.dots._mcp_stdio import stdio_transport

    lowlevel = tools.server._lowlevel_server  # what MCPServer.run_stdio_async runs (mcp pinned)
    async with stdio_transport(locale=tools.locale) as (read, write):
        await lowlevel.run(read, write, lowlevel.create_initialization_options())
