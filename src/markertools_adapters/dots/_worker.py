# Owns: `CodexWorker`, one role's `codex app-server` child (DOT-3): spawning and
# initialising it, opening the role's thread (`thread/start`, or `thread/resume` of an
# existing thread re-applying this plan's sandbox and approval policy), starting and
# interrupting turns, collecting the final agent message of its turn, answering the
# server's approval and input requests with a refusal (DOT-7), and reporting the end of
# a turn or of the process to its supervisor through callbacks.
#
# Invariants:
#   Rule 1: one thread never has two turns at once: `start_turn` refuses while a turn
#           is live (DOT-6).
#   Rule 2: every approval / permission / user-input / elicitation request is refused
#           (decline, an empty grant, no answers); the supervisor is told so it can
#           interrupt the turn and pause the run. Nothing is ever approved.
#   Rule 3: every notification of the process reaches `on_raw` verbatim (its line).
from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from markertools_adapters.codex.client import AppServerClient, AppServerError, Exited, Json
from markertools_adapters.errors import OperationFailed

APPROVAL_POLICY: Final[str] = "on-request"  # workers ask; the supervisor refuses (DOT-7)
CLIENT_INFO: Final[Json] = {"name": "markertools-dots", "title": "markertools dots", "version": "1"}

# server -> client requests, and the refusal each gets (the schema's shapes)
REFUSALS: Final[Mapping[str, Json]] = {
    "item/commandExecution/requestApproval": {"decision": "decline"},
    "item/fileChange/requestApproval": {"decision": "decline"},
    "item/permissions/requestApproval": {"permissions": {}},  # an empty grant refuses
    "item/tool/requestUserInput": {"answers": {}},
    "mcpServer/elicitation/request": {"action": "decline"},
    "execCommandApproval": {"decision": "denied"},  # legacy v1
    "applyPatchApproval": {"decision": "denied"},
}
REQUEST_NAMES: Final[Mapping[str, str]] = {
    "item/commandExecution/requestApproval": "command approval",
    "item/fileChange/requestApproval": "file-change approval",
    "item/permissions/requestApproval": "extra permissions",
    "item/tool/requestUserInput": "user input",
    "mcpServer/elicitation/request": "MCP elicitation",
    "execCommandApproval": "command approval",
    "applyPatchApproval": "file-change approval",
}
OUTCOMES: Final[Mapping[str, str]] = {
    "completed": "completed",
    "interrupted": "interrupted",
    "failed": "failed",
}


def request_summary(method: str, params: Any) -> str:
    """What a worker asked for, on one line (for the alert)."""
    p = params if isinstance(params, dict) else {}
    for key in ("command", "reason", "message", "grantRoot", "serverName"):
        value = p.get(key)
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())[:200]
    questions = p.get("questions")
    if isinstance(questions, list) and questions:
        q = questions[0]
        if isinstance(q, dict) and isinstance(q.get("question"), str):
            return " ".join(q["question"].split())[:200]
    return method


class CodexWorker:
    """One role's app-server. Callbacks (all called on the event loop):
    `on_raw(line)`, `on_turn_end(turn_id, outcome, reply)`, `on_request(kind, summary)`,
    `on_exit(detail)` and `on_rate_limits(snapshot)`."""

    def __init__(
        self,
        binary: str,
        *,
        env: Mapping[str, str] | None,
        cwd: str,
        on_raw: Callable[[str], None],
        on_turn_end: Callable[[str, str, str | None], None],
        on_request: Callable[[str, str], None],
        on_exit: Callable[[str], None],
        on_rate_limits: Callable[[Json], None],
        request_timeout: float = 60.0,
        decide: Callable[[str, Any], Awaitable[Json]] | None = None,
    ) -> None:
        self.binary = binary
        self.env = env
        self.cwd = cwd
        self._on_raw = on_raw
        self._on_turn_end = on_turn_end
        self._on_request = on_request
        self._on_exit = on_exit
        self._on_rate_limits = on_rate_limits
        self._decide = decide  # the worker host's answer to a request (APR-1), if any
        self.request_timeout = request_timeout
        self.client: AppServerClient | None = None
        self.thread_id: str | None = None
        self.turn_id: str | None = None
        self._texts: dict[str, str] = {}  # turn id -> last agent message text
        self._early: dict[str, tuple[str, str | None]] = {}  # ended before start returned
        self._closing = False
        # processes being ended, oldest first: one stays here until it has exited, so a
        # close that was cancelled half-way is finished by the next (no task of its own)
        self._ending: list[AppServerClient] = []
        self._close_lock = asyncio.Lock()
        self._start_lock = asyncio.Lock()
        self._turn_done = asyncio.Event()  # set while no turn is live
        self._turn_done.set()
        self.idle_since: float | None = None  # monotonic time its process went idle

    @property
    def alive(self) -> bool:
        return self.client is not None and self.client.running

    @property
    def turn_live(self) -> bool:
        return self.turn_id is not None

    async def turn_over(self, timeout: float) -> bool:
        """Wait until the live turn ends (or the process exits); False after `timeout`
        seconds with the turn still live."""
        if self.turn_id is None:
            return True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._turn_done.wait()
        return self.turn_id is None

    def _turn_finished(self) -> None:
        self.turn_id = None
        self._turn_done.set()
        self.idle_since = time.monotonic()

    def idle_for(self, now: float) -> float:
        """Seconds its live process has had no turn (0 when busy or not running)."""
        if self.turn_id is not None or not self.alive or self.idle_since is None:
            return 0.0
        return now - self.idle_since

    async def ensure(self) -> AppServerClient:
        """The running, initialised client (spawned on first use or after an exit)."""
        async with self._start_lock:
            if self.client is not None and self.client.running:
                return self.client
            if self._ending:
                # an idle process is still ending: Codex lets one process write a thread
                await self._finish_ending(grace=3.0)
            self.thread_id = None  # a new process has no thread loaded
            self._closing = False
            client = AppServerClient(
                self.binary,
                env=self.env,
                cwd=self.cwd,
                on_server_request=self._server_request,
                on_event=self._event,
                on_notification=self._notification,
                default_timeout=self.request_timeout,
                queue_events=False,
            )
            await client.start()
            self.client = client
            try:
                await client.initialize(CLIENT_INFO)
            except BaseException:
                with contextlib.suppress(Exception):
                    await client.close(grace=1.0)
                raise
            return client

    async def open_thread(
        self,
        *,
        cwd: str,
        sandbox: str,
        model: str | None,
        resume: str | None,
        config: Json | None = None,
    ) -> str:
        """The role's thread in this process: started, or resumed (`resume` = its id)
        with this plan's cwd, sandbox and approval policy applied again (DOT-3).
        `config`: Codex configuration overrides for the thread (the worker host's MCP
        server, WRK-9)."""
        client = await self.ensure()
        if self.thread_id is not None:
            return self.thread_id
        if resume is not None:
            result = await client.thread_resume(
                resume,
                cwd=cwd,
                sandbox=sandbox,
                approvalPolicy=APPROVAL_POLICY,
                model=model,
                config=config,
            )
        else:
            result = await client.thread_start(
                cwd, sandbox=sandbox, approval_policy=APPROVAL_POLICY, model=model, config=config
            )
        thread = result.get("thread")
        tid = thread.get("id") if isinstance(thread, dict) else None
        if not isinstance(tid, str) or not tid:
            raise AppServerError(-32603, "the app-server answered without a thread id", None, "")
        self.thread_id = tid
        return tid

    async def start_turn(self, text: str, *, model: str | None, effort: str | None) -> str:
        if self.turn_id is not None:
            raise OperationFailed(f"thread {self.thread_id} already has turn {self.turn_id}")
        client = await self.ensure()
        assert self.thread_id is not None, "open_thread first"
        result = await client.turn_start(self.thread_id, text, model=model, effort=effort)
        turn = result.get("turn")
        turn_id = turn.get("id") if isinstance(turn, dict) else None
        if not isinstance(turn_id, str) or not turn_id:
            raise AppServerError(-32603, "the app-server answered without a turn id", None, "")
        self.turn_id = turn_id
        self._turn_done.clear()
        self.idle_since = None
        return turn_id

    def flush_early_end(self) -> None:
        """Report the end of the current turn if it arrived before `start_turn`
        returned (a fast turn); the supervisor calls this after recording the start."""
        tid = self.turn_id
        if tid is not None and tid in self._early:
            status, reply = self._early.pop(tid)
            self._turn_finished()
            self._on_turn_end(tid, status, reply)

    async def interrupt(self) -> None:
        client, thread, turn = self.client, self.thread_id, self.turn_id
        if client is None or thread is None or turn is None or not client.running:
            return
        with contextlib.suppress(Exception):
            await client.turn_interrupt(thread, turn)

    async def close(self, grace: float = 3.0) -> None:
        """End the process (stdin EOF, then signals). Concurrent calls all return only
        once it has exited. The ending runs in the caller's task (issue 35: no
        unowned future); a close cancelled half-way leaves the process in `_ending`,
        and the next close (the supervisor's own, at the latest) ends it."""
        self._closing = True
        client, self.client = self.client, None
        if client is not None:
            self._ending.append(client)
        await self._finish_ending(grace)

    async def _finish_ending(self, grace: float) -> None:
        async with self._close_lock:
            while self._ending:
                with contextlib.suppress(Exception):  # it is ended by signals regardless
                    await self._ending[0].close(grace=grace)
                self._ending.pop(0)

    # ---- callbacks from the client ------------------------------------------------

    def _notification(self, message: Json, raw: str) -> None:
        self._on_raw(raw)
        method = message.get("method")
        params = message.get("params")
        if not isinstance(params, dict):
            return
        if method == "item/completed":
            item = params.get("item")
            turn = params.get("turnId")
            if (
                isinstance(item, dict)
                and item.get("type") == "agentMessage"
                and isinstance(turn, str)
            ):
                text = item.get("text")
                if isinstance(text, str):
                    self._texts[turn] = text
        elif method == "account/rateLimits/updated":
            snapshot = params.get("rateLimits")
            if isinstance(snapshot, dict):
                self._on_rate_limits(snapshot)
        elif method == "turn/completed":
            turn = params.get("turn")
            if not isinstance(turn, dict) or not isinstance(turn.get("id"), str):
                return
            tid = turn["id"]
            status = OUTCOMES.get(str(turn.get("status")), "failed")
            reply = self._texts.pop(tid, None)
            if self.turn_id == tid:
                self._turn_finished()
                self._on_turn_end(tid, status, reply)
            else:  # `start_turn` has not returned yet: reported by `flush_early_end`
                self._early[tid] = (status, reply)

    def _event(self, event: Any) -> None:
        if isinstance(event, Exited):
            detail = f"exit code {event.returncode}"
            tail = " ".join(event.stderr_tail.split())[-300:]
            if tail:
                detail += f": {tail}"
            self._turn_finished()  # no turn outlives its process
            if not self._closing:
                self._on_exit(detail)

    async def _server_request(self, method: str, params: Any, request_id: int | str) -> Json:
        if self._decide is not None:  # the worker host answers (APR-1); dots refuses
            return await self._decide(method, params)
        refusal = REFUSALS.get(method)
        self._on_request(REQUEST_NAMES.get(method, method), request_summary(method, params))
        if refusal is None:
            raise AppServerError(-32601, f"markertools dots does not answer {method}")
        return dict(refusal)
