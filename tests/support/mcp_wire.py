"""`markertools dots serve` spoken to in raw bytes: the server in a process of its own
(this checkout's code: PYTHONPATH is the source the tests import), its stdin written
byte for byte, its stdout read line by line, its stderr kept, and its peak memory read
from /proc (VmHWM). For the transport tests of issue 26, where a client library would
refuse to send what is being sent."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import markertools_adapters

SRC = Path(markertools_adapters.__file__).resolve().parents[1]
WAIT = 60.0  # seconds to wait for a line before the test fails (a hang, not a speed)


def _pump(stream: IO[bytes], into: queue.Queue[bytes | None]) -> None:
    for line in iter(stream.readline, b""):
        into.put(line)
    into.put(None)


class RawServe:
    """One `dots serve` process; use as a context manager."""

    def __init__(
        self,
        state: Path | None,
        *args: str,
        env: dict[str, str] | None = None,
        argv: list[str] | None = None,
    ) -> None:
        """`dots serve --state-dir STATE ARGS...`, or with `argv` that markertools
        command instead (`["tools", "serve", "--db", ...]`)."""
        environ = dict(os.environ if env is None else env)
        environ["PYTHONPATH"] = str(SRC)
        command = [sys.executable, "-m", "markertools"]
        if argv is None:
            argv = ["dots", "serve", "--state-dir", str(state), *args]
        self.proc = subprocess.Popen(
            [*command, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environ,
        )
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        self.stdin = self.proc.stdin
        self._out: queue.Queue[bytes | None] = queue.Queue()
        self._err: queue.Queue[bytes | None] = queue.Queue()
        for stream, into in ((self.proc.stdout, self._out), (self.proc.stderr, self._err)):
            threading.Thread(target=_pump, args=(stream, into), daemon=True).start()
        self.stderr_lines: list[str] = []

    def __enter__(self) -> RawServe:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(WAIT)

    # ---- talking -------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        self.stdin.write(data)
        self.stdin.flush()

    def send(self, message: Any) -> None:
        self.write(json.dumps(message).encode() + b"\n")

    def line(self) -> bytes:
        got = self._out.get(timeout=WAIT)
        assert got is not None, "dots serve closed its stdout"
        return got

    def reply(self) -> Any:
        return json.loads(self.line())

    def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "raw bytes", "version": "1"},
                },
            }
        )
        answer = self.reply()
        assert answer["id"] == "init", answer
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        result: dict[str, Any] = answer["result"]
        return result

    def ping(self, rid: int | str) -> None:
        """A valid request is answered, and it is the next line (nothing came before)."""
        self.send({"jsonrpc": "2.0", "id": rid, "method": "ping"})
        assert self.reply() == {"jsonrpc": "2.0", "id": rid, "result": {}}

    def call(self, rid: int | str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        params = {"name": tool, "arguments": arguments}
        self.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})
        answer = self.reply()
        assert answer["id"] == rid, answer
        result: dict[str, Any] = answer["result"]
        return result

    # ---- observing -----------------------------------------------------------------

    def peak_kib(self) -> int:
        """The process's peak resident memory so far (VmHWM, KiB)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise AssertionError("no VmHWM in /proc/<pid>/status")

    def finish(self) -> str:
        """Close stdin, wait for the exit (status 0) and return all of stderr."""
        self.stdin.close()
        assert self.proc.wait(WAIT) == 0
        lines = []
        while (line := self._err.get(timeout=WAIT)) is not None:
            lines.append(line.decode("utf-8", "replace"))
        return "".join(lines)
