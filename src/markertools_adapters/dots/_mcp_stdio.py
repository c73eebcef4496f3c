# Owns: the stdio transport of `dots serve` (docs/orchestration.md, "The MCP transport
# and arguments"): standard input read in chunks and cut into newline-delimited
# messages of at most MAX_MESSAGE_BYTES, each checked as a JSON-RPC 2.0 message before
# the SDK sees it, and standard output written by one task (the SDK's messages and the
# transport's own error replies, in order). It replaces the SDK's `stdio_server`, which
# builds a whole line in memory however long, and drops an unparsable or malformed
# message without a reply, so its client waits for its own timeout.
#
# What a line gets (JSON-RPC 2.0, section 5.1; MCP basic/transports):
#   - longer than MAX_MESSAGE_BYTES: -32600 "request too large" with the id when the
#     first ID_SCAN_BYTES show it, else dropped with a log line; never held in memory;
#   - not JSON: -32700 with id null;
#   - JSON but not a JSON-RPC message (no/wrong `jsonrpc`, an id that is neither a
#     string nor an integer, `params` not an object, too deep, more than MAX_STRUCTURE
#     values, a number beyond 4300 digits): -32600 with the id when it is readable,
#     else null (array params of a request: -32602); a notification or a response
#     never gets a reply;
#   - a batch (a JSON array): MCP had batches only in 2025-03-26; on a connection that
#     negotiated it, the batch is served and its responses are written as one array;
#     otherwise every request in it gets -32600 with its id (one line each), or one
#     -32600 with id null when none has an id.
#   Reading then goes on with the next line.
#
# Must never: hold more than MAX_MESSAGE_BYTES of one line, echo a caller's bytes in an
# error (only its id, which JSON-RPC requires), write to stdout from anywhere but the
# writer task, or close the duplicate of stdin that a reader thread may still block on.
from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from markertools_adapters.dots._jsonrpc_wire import (
    MAX_MESSAGE_BYTES,
    READ_CHUNK,
    Framer,
    Outgoing,
    Wire,
)

__all__ = ["MAX_MESSAGE_BYTES", "stdio_transport"]

log = logging.getLogger("markertools.dots.mcp")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _claim() -> tuple[int, int, Callable[[], None]]:
    """Private duplicates of fd 0 and 1 carry the protocol; while serving, fd 0 reads
    the null device and fd 1 goes to stderr, so a child process or a stray print can
    neither steal input nor corrupt output (what the SDK's own transport does). The
    duplicates are never closed: an abandoned reader thread may still block on one."""
    if sys.platform == "win32":  # pragma: no cover - the descriptors as they are
        import msvcrt

        msvcrt.setmode(1, os.O_BINARY)
        return 0, 1, lambda: None
    import fcntl

    sys.stdout.flush()
    in_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    out_fd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    os.dup2(2, 1)

    def restore() -> None:
        with contextlib.suppress(OSError):
            os.dup2(in_fd, 0)
        with contextlib.suppress(OSError):
            os.dup2(out_fd, 1)

    return in_fd, out_fd, restore


async def _read(
    wire: Wire,
    fd: int,
    to_sdk: MemoryObjectSendStream[SessionMessage | Exception],
    to_writer: MemoryObjectSendStream[Outgoing],
) -> None:
    framer = Framer()
    async with to_sdk, to_writer:
        while True:
            try:
                chunk = await anyio.to_thread.run_sync(
                    os.read, fd, READ_CHUNK, abandon_on_cancel=True
                )
            except OSError as exc:
                log.warning("standard input failed (%s); reading stops", exc)
                chunk = b""
            for item in framer.feed(chunk) if chunk else framer.end():
                received = wire.receive(item)
                for line in received.outbound:
                    await to_writer.send(line)
                for message in received.inbound:
                    await to_sdk.send(SessionMessage(message))
            if not chunk:
                return


async def _write(wire: Wire, fd: int, items: MemoryObjectReceiveStream[Outgoing]) -> None:
    broken = False
    async with items:
        async for item in items:
            data = item if isinstance(item, bytes) else wire.send(item.message)
            if data is None or broken:
                continue  # after a write error: drained, so no sender ever blocks
            try:
                await anyio.to_thread.run_sync(_write_all, fd, data)
            except OSError as exc:
                log.warning("standard output failed (%s); nothing more is written", exc)
                broken = True


@asynccontextmanager
async def stdio_transport(
    *, locale: str = "en"
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[Outgoing]]
]:
    """The (read, write) streams of the SDK's server loop over this process's stdin
    and stdout (see the module header); use instead of `mcp.server.stdio.stdio_server`."""
    in_fd, out_fd, restore = _claim()
    wire = Wire(locale)
    to_sdk, from_wire = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_writer, from_all = anyio.create_memory_object_stream[Outgoing](0)
    reading = anyio.CancelScope()

    async def read(replies: MemoryObjectSendStream[Outgoing]) -> None:
        with reading:
            await _read(wire, in_fd, to_sdk, replies)

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_write, wire, out_fd, from_all)
            tasks.start_soon(read, to_writer.clone())
            try:
                yield from_wire, to_writer
            finally:
                reading.cancel()  # the server is done: no more input
                to_writer.close()  # the writer ends once every sender is closed
    finally:
        restore()
