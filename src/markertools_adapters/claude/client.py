# Owns: `ClaudeProcess`, one Claude Code CLI child driven over its stream-json control
# protocol - the protocol the official Agent SDKs speak (`claude --input-format
# stream-json --output-format stream-json --verbose`): user messages in as JSON lines;
# assistant, user, system and result messages out; `control_request` /
# `control_response` both ways (ours: initialize, interrupt; the CLI's: can_use_tool for
# a permission prompt, mcp_message for an in-process MCP server), and the CLI's
# `control_cancel_request`.
#
# The child starts as a tiny POSIX shell in a new session (so its process group is its
# own from the first moment, and a lease can record it), which reads two lines from
# stdin - the session flag (`--session-id NEW` or `--resume OLD`) - and then execs the
# CLI with them: the session is chosen after the process exists, the pid and group stay
# the same (`launch`). Claude Code's command sandbox (bubblewrap) puts the agent's shell
# in a session of its own: `kill_tree` ends those groups too, not only the CLI's.
#
# Must never: leave a control request of the CLI unanswered (a handler that fails
# answers an error); run a background task it does not own (one `Background`).
from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

from markertools import InvalidArgument
from markertools_adapters._background import Background
from markertools_adapters._procgroups import descendant_groups
from markertools_adapters.codex._lines import load_object
from markertools_adapters.errors import ClaudeError

Json = dict[str, Any]
# reads the session flag and its value (one line each), then becomes the CLI
SHIM: Final[str] = 'IFS= read -r flag && IFS= read -r value && exec "$0" "$@" "$flag" "$value"'
SESSION_FLAGS: Final[tuple[str, ...]] = ("--session-id", "--resume")
BASE_ARGS: Final[tuple[str, ...]] = (
    "--output-format",
    "stream-json",
    "--verbose",
    "--input-format",
    "stream-json",
)


class ClaudeExited(ClaudeError):
    """The CLI exited (or its stdout closed) while a request of ours was pending."""

    def __init__(self, returncode: int | None, stderr_tail: str, what: str = "") -> None:
        super().__init__(
            f"claude exited (returncode={returncode}){' during ' + what if what else ''}"
            + (f"; stderr tail:\n{stderr_tail}" if stderr_tail else "")
        )
        self.returncode, self.stderr_tail = returncode, stderr_tail


class ControlTimeout(TimeoutError, ClaudeError):
    def __init__(self, subtype: str, timeout: float) -> None:
        super().__init__(
            f"claude did not answer the {subtype!r} control request within {timeout:.1f}s"
        )


class ControlRefused(ClaudeError):
    """The CLI answered a control request of ours with an error."""


class ClaudeProcess:
    """One `claude` child (see the module header). Callbacks run on the event loop:
    `on_message(msg)` for every message but the control traffic, `on_control(request)`
    (awaited; the `response` of a CLI control request - raise to answer an error), and
    `on_exit(returncode, stderr_tail)` once, when the child is gone."""

    def __init__(
        self,
        binary: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None,
        cwd: str,
        on_message: Callable[[Json], None],
        on_control: Callable[[Json], Awaitable[Json]],
        on_exit: Callable[[int | None, str], None],
        line_limit: int = 64 * 1024 * 1024,
    ) -> None:
        self.binary = binary
        self.args = tuple(args)
        self.env = env
        self.cwd = cwd
        self.on_message = on_message
        self.on_control = on_control
        self.on_exit = on_exit
        self.line_limit = line_limit
        self.returncode: int | None = None
        self.launched = False
        self._proc: asyncio.subprocess.Process | None = None
        self._background: Background | None = None
        self._pending: dict[str, tuple[str, asyncio.Future[Json]]] = {}
        self._inflight: dict[str, asyncio.Task[Any]] = {}
        self._ids = itertools.count(1)
        self._stderr: deque[str] = deque(maxlen=200)
        self._exited = asyncio.Event()
        self._write_lock = asyncio.Lock()

    # ---- lifecycle --------------------------------------------------------------------------

    async def start(self) -> int:
        """Start the shim in a new session; its pid (= its process group)."""
        if self._proc is not None:
            return self._proc.pid
        self._proc = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            SHIM,
            self.binary,
            *BASE_ARGS,
            *self.args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(self.env) if self.env is not None else None,
            cwd=self.cwd,
            limit=self.line_limit,
            start_new_session=True,
        )
        self._background = Background(f"claude {self._proc.pid}", on_fault=self._fault)
        await self._background.start()
        self._background.spawn(self._read_stdout(), name="stdout reader")
        self._background.spawn(self._read_stderr(), name="stderr reader")
        return self._proc.pid

    async def launch(self, flag: str, value: str, *, timeout: float) -> Json:
        """Exec the CLI with `flag value` (a session flag), then the control protocol's
        `initialize`; its answer (the CLI's commands, models, account)."""
        if flag not in SESSION_FLAGS or not value or "\n" in value:
            raise InvalidArgument(f"not a session flag: {flag} {value!r}")
        self.launched = True
        await self._write(f"{flag}\n{value}\n", "launch")
        return await self.request("initialize", timeout=timeout, hooks=None)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and not self._exited.is_set()

    def stderr_tail(self) -> str:
        return "".join(self._stderr)[-4000:]

    def signal(self, sig: int) -> None:
        """Signal the child's process group."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)

    def kill_tree(self) -> None:
        """SIGKILL the groups of the child's descendants that left its group (the
        command sandbox's sessions), then the child's own group."""
        proc = self._proc
        if proc is None:
            return
        for group in descendant_groups(proc.pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        self.signal(signal.SIGKILL)

    async def close(self, grace: float) -> int | None:
        """Close stdin (the CLI ends at EOF), then SIGTERM, then SIGKILL the tree."""
        proc = self._proc
        if proc is None:
            return None
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                await asyncio.wait_for(self._exited.wait(), grace)
                break
            except TimeoutError:
                if sig == signal.SIGKILL:
                    self.kill_tree()
                else:
                    self.signal(sig)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._exited.wait(), grace)
        if self._background is not None:
            await self._background.close()
        return self.returncode

    # ---- sending ------------------------------------------------------------------------------

    async def send_user(self, text: str, uuid: str) -> None:
        """One user message (a turn's input); `uuid` becomes its id in the session."""
        message = {
            "type": "user",
            "session_id": "",
            "message": {"role": "user", "content": text},
            "parent_tool_use_id": None,
            "uuid": uuid,
        }
        await self._send(message, "user message")

    async def request(self, subtype: str, *, timeout: float, **fields: Any) -> Json:
        """A control request of ours; the CLI's `response` object."""
        request_id = f"mt_{next(self._ids)}"
        future: asyncio.Future[Json] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (subtype, future)
        try:
            body = {"subtype": subtype, **fields}
            await self._send(
                {"type": "control_request", "request_id": request_id, "request": body}, subtype
            )
            try:
                return await asyncio.wait_for(asyncio.shield(future), timeout)
            except TimeoutError:
                raise ControlTimeout(subtype, timeout) from None
        finally:
            self._pending.pop(request_id, None)

    async def _send(self, message: Json, what: str) -> None:
        await self._write(json.dumps(message, separators=(",", ":")) + "\n", what)

    async def _write(self, text: str, what: str) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise ClaudeError("claude is not started")
        if self._exited.is_set() or proc.stdin.is_closing():
            raise ClaudeExited(self.returncode, self.stderr_tail(), what)
        async with self._write_lock:
            try:
                proc.stdin.write(text.encode())
                await proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise ClaudeExited(self.returncode, self.stderr_tail(), what) from exc

    # ---- receiving ----------------------------------------------------------------------------

    async def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        out = self._proc.stdout
        try:
            while line := await out.readline():
                message, _problem = load_object(line.decode("utf-8", "replace").strip())
                if message is not None:
                    self._dispatch(message)
        except (ValueError, asyncio.LimitOverrunError) as exc:  # a line over line_limit
            self._stderr.append(f"[stdout reader error] {exc}\n")
            self.kill_tree()
        finally:
            await self._ended()

    def _dispatch(self, message: Json) -> None:
        kind = message.get("type")
        if kind == "control_response":
            response = message.get("response")
            response = response if isinstance(response, dict) else {}
            entry = self._pending.get(str(response.get("request_id")))
            if entry is not None and not entry[1].done():
                subtype, future = entry
                if response.get("subtype") == "error":
                    future.set_exception(ControlRefused(f"{subtype}: {response.get('error')}"))
                else:
                    body = response.get("response")
                    future.set_result(body if isinstance(body, dict) else {})
        elif kind == "control_request":
            request_id = str(message.get("request_id"))
            request = message.get("request")
            if self._background is not None:
                task = self._background.spawn(
                    self._answer(request_id, request if isinstance(request, dict) else {}),
                    name=f"control request {request_id}",
                )
                if task is not None:
                    self._inflight[request_id] = task
                    task.add_done_callback(lambda _t: self._inflight.pop(request_id, None))
        elif kind == "control_cancel_request":
            task = self._inflight.pop(str(message.get("request_id")), None)
            if task is not None:
                task.cancel()  # the CLI gave up on it: no answer is written
        else:
            self.on_message(message)

    async def _answer(self, request_id: str, request: Json) -> None:
        try:
            body = await self.on_control(request)
            response: Json = {"subtype": "success", "request_id": request_id, "response": body}
        except Exception as exc:  # never leave the CLI waiting
            response = {"subtype": "error", "request_id": request_id, "error": str(exc)}
        with contextlib.suppress(ClaudeError):
            await self._send({"type": "control_response", "response": response}, "control response")

    async def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        while line := await self._proc.stderr.readline():
            self._stderr.append(line.decode("utf-8", "replace"))

    async def _ended(self) -> None:
        assert self._proc is not None
        try:
            self.returncode = await asyncio.wait_for(self._proc.wait(), 10)
        except TimeoutError:
            self.returncode = None
        await asyncio.sleep(0)  # let the stderr reader take the last lines
        tail = self.stderr_tail()
        for subtype, future in list(self._pending.values()):
            if not future.done():
                future.set_exception(ClaudeExited(self.returncode, tail, subtype))
        self._exited.set()
        self.on_exit(self.returncode, tail)

    def _fault(self, name: str, exc: BaseException) -> None:
        """A reader or a handler failed (logged by `Background`): end the child, so every
        pending request fails and the owner sees the exit."""
        self._stderr.append(f"[claude client {name} failed: {exc!r}]\n")
        self.kill_tree()


__all__ = [
    "BASE_ARGS",
    "SESSION_FLAGS",
    "ClaudeExited",
    "ClaudeProcess",
    "ControlRefused",
    "ControlTimeout",
]
