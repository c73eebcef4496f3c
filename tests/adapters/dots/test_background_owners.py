"""Every background task of `dots serve` and of a worker has an owner (issue 35, the
reshape): `dots serve` runs the MCP server and its wait for Ctrl-C as the two tasks of
one TaskGroup, and a worker ends its app-server in the caller's task (a close cancelled
half-way is finished by the next one) - no `ensure_future` left to itself. An
unexpected exception of the server is one line on stderr and a clean stop (exit 1),
never a traceback or a lost task; Ctrl-C still exits 130 (test_dots_serve_terminal)."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.codex import OfflineCodex

from markertools_adapters.dots._worker import CodexWorker

# `markertools dots serve` with a fault planted in the MCP server: the real command, its
# real supervisor and state directory, and a server that fails once it is running
PLANTED = """
import sys
from markertools_adapters.dots import mcp

async def plain_failing(self):
    raise RuntimeError("planted fault in the MCP server")

mcp.DotsMcp.run_stdio = plain_failing
sys.argv = ["markertools", "dots", "serve", "--state-dir", sys.argv[1]]
from markertools_adapters.cli._main import run
run()
"""


@pytest.mark.rule("DOT-1", "DOT-16")
def test_an_unexpected_server_fault_is_one_line_and_a_clean_stop(tmp_path: Path) -> None:
    state = tmp_path / "state"
    done = subprocess.run(
        [sys.executable, "-c", PLANTED, str(state)],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        "markertools: dots serve stopped on an internal error (RuntimeError: planted fault "
        "in the MCP server); the runs stay in the state directory, paused-safe\n"
    )
    assert done.stdout == ""


@pytest.mark.rule("DOT-3", "DOT-16")
def test_a_worker_close_cancelled_half_way_is_finished_by_the_next(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    unretrieved: list[dict[str, Any]] = []

    async def scenario() -> tuple[int | None, int]:
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: unretrieved.append(ctx))
        worker = CodexWorker(
            offline_codex.binary,
            env=offline_codex.env,
            cwd=str(tmp_path),
            on_raw=lambda line: None,
            on_turn_end=lambda turn, status, reply: None,
            on_request=lambda kind, what: None,
            on_exit=lambda detail: None,
            on_rate_limits=lambda snapshot: None,
        )
        client = await worker.ensure()
        closing = asyncio.create_task(worker.close(grace=5.0))  # owned: awaited below
        await asyncio.sleep(0)  # the close has begun: stdin closed, waiting for the exit
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        await worker.close(grace=5.0)
        others = len([t for t in asyncio.all_tasks() if t is not asyncio.current_task()])
        return client.returncode, others

    returncode, others = asyncio.run(scenario())
    gc.collect()
    assert returncode is not None  # the process was ended after all
    assert others == 0  # nothing left running in the background
    assert unretrieved == []
