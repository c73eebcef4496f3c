"""Shared helpers of the `tools serve --http` tests (no tests of its own): the console
script started as a server process on a free loopback port, the SDK's Streamable HTTP
client with a bearer token, raw HTTP requests (httpx2, the SDK's HTTP library), and
what /proc says of the server process (threads, resident memory)."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from support.cli import EXE
from tools_support import LEGACY

INIT: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@attrs.frozen
class Served:
    url: str
    proc: subprocess.Popen[bytes]
    authority: str  # what a client puts in Host: "127.0.0.1:PORT", "[::1]:PORT"


@contextmanager
def http_server(
    db: Path, errlog: Path, *extra: str, host: str = "127.0.0.1", shown: str | None = None
) -> Iterator[Served]:
    """`markertools tools serve --db DB --http HOST:PORT EXTRA...`, stopped afterwards."""
    port = free_port(host)
    spelled = shown if shown is not None else (f"[{host}]" if ":" in host else host)
    with errlog.open("ab") as err:
        proc = subprocess.Popen(
            [str(EXE), "tools", "serve", "--db", str(db), "--http", f"{spelled}:{port}", *extra],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:  # bounded: the server listens within seconds or the test fails
            try:
                socket.create_connection((host, port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, errlog.read_text()
                assert time.monotonic() < deadline, "the HTTP server did not listen"
                time.sleep(0.05)
        yield Served(f"http://{authority}/mcp", proc, authority)
    finally:
        proc.terminate()
        proc.wait(30)


@asynccontextmanager
async def http_client(url: str, tok: str | None, **kw: Any) -> AsyncIterator[Client]:
    """The SDK's client over Streamable HTTP (the initialize handshake), with a bearer."""
    headers = {"Authorization": f"Bearer {tok}"} if tok is not None else {}
    async with (
        create_mcp_http_client(headers=headers) as hc,
        Client(streamable_http_client(url, http_client=hc), mode=LEGACY, **kw) as c,
    ):
        yield c


def threads_of(proc: subprocess.Popen[bytes]) -> int:
    """The threads of a process now (/proc/PID/task)."""
    return len(list(Path(f"/proc/{proc.pid}/task").iterdir()))


def rss_mb(proc: subprocess.Popen[bytes]) -> float:
    """A process's resident memory now, in MB (/proc/PID/status VmRSS)."""
    for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    raise AssertionError("no VmRSS")


def raw_client() -> httpx2.AsyncClient:
    return httpx2.AsyncClient(timeout=httpx2.Timeout(60.0))
