"""Example worker: drive `codex app-server`, deliver every completed turn through markertools.

What it shows (no glue code between Codex and markertools beyond this file):

1. launch the app-server (any argv; the real one is `codex app-server`) and speak its
   JSON-RPC over stdio: `initialize` + `initialized`, `thread/start`, then `turn/start`;
2. feed every line the server writes to `AppServerTurnReader`, which yields one
   `CodexTurn` per `turn/completed` (the agent text of the turn + how it ended);
3. `deliver_turn(turn.text, outcome=turn.delivery_outcome, turn_id=turn.turn_id, ...)`
   with the SQLite adapter (only a completed turn executes anything, TRN-3; Codex's own
   turn id makes a redelivery after a crash apply each block once, TRN-9);
4. send what the task's follow-up queue hands out (`take_followups`: the report, then
   any "/goal ..." follow-up) as the next `turn/start` input - the queue is the only
   channel, never `report.queued_followups` directly, so a later claim of the task
   (after a task-retry, say) is never handed a report the agent already saw;
5. stop after `max_turns` (the last report stays queued: the task's next claim hands it
   over), when a turn is not delivered, when a turn had no marker block (the agent asked
   for nothing more; nothing was queued), on a timeout, or when the server exits.

Server -> client requests (command / file-change approvals) are declined; other server
requests get a JSON-RPC "method not found" error. Run it against a database made with
`markertools world load WORLD.json --db world.db`:

    .venv/bin/python examples/codex_worker.py --db world.db --sender t1 \\
        --prompt "Split the refactor into parts" -- codex app-server
"""

from __future__ import annotations

import argparse
import contextlib
import json
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from markertools import DeliveryReport, FollowupTaker, Ports, deliver_turn
from markertools_adapters.clock import SystemClock, SystemRandom
from markertools_adapters.codex import AppServerTurnReader, CodexTurn
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.wiring import store_ports

CLIENT_INFO = {
    "name": "markertools_worker",
    "title": "markertools example worker",
    "version": "0.1.0",
}
APPROVAL_METHODS = frozenset(
    {"item/commandExecution/requestApproval", "item/fileChange/requestApproval"}
)


def open_store(db: str) -> Any:
    """The storage every port uses. Switching storage is this one function: SQLite (the
    embedded default); `markertools_adapters.memory.MemoryStore.from_world(world)` works the
    same way for tests."""
    from markertools_adapters.sqlite import open_store as open_sqlite

    return open_sqlite(db)


def make_ports(store: Any) -> Ports:
    # executor: what a task-cancel block stops; this example runs no task processes
    return store_ports(store, clock=SystemClock(), random=SystemRandom(), executor=NoopExecutor())


class AppServerExited(Exception):
    """The app-server closed its stdout (exited or crashed)."""


class AppServerError(Exception):
    """The app-server answered a request with a JSON-RPC error."""


class AppServerClient:
    """A minimal stdio JSON-RPC client for `codex app-server`.

    One background thread copies the server's stdout lines into a queue so every wait
    has a timeout; every line also goes to the turn reader (so no notification is lost
    while waiting for a response)."""

    def __init__(self, argv: Sequence[str], *, approval_decision: str = "decline") -> None:
        self.proc = subprocess.Popen(  # the argv is the caller's choice
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
        )
        self.reader = AppServerTurnReader()
        self.turns: deque[CodexTurn] = deque()
        self.exited = False
        self.approval_decision = approval_decision
        self._responses: dict[Any, dict[str, Any]] = {}
        self._next_id = 0
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._copy_stdout, daemon=True).start()

    def _copy_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self._lines.put(line)
        self._lines.put(None)

    # ---- sending -----------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message).encode("utf-8") + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise AppServerExited("the app-server closed its stdin") from exc

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.send({"method": method} if params is None else {"method": method, "params": params})

    def request(self, method: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
        self._next_id += 1
        request_id = self._next_id
        self.send({"method": method, "id": request_id, "params": params})
        deadline = time.monotonic() + timeout
        while request_id not in self._responses:
            if not self.pump(deadline - time.monotonic()):
                if self.exited:
                    raise AppServerExited(f"the app-server exited before answering {method}")
                raise TimeoutError(f"no answer to {method} within {timeout} s")
        response = self._responses.pop(request_id)
        if "error" in response:
            raise AppServerError(f"{method}: {response['error']}")
        result = response.get("result")
        return result if isinstance(result, dict) else {}

    # ---- receiving ---------------------------------------------------------------------

    def pump(self, timeout: float) -> bool:
        """Handle one line from the server; False on timeout or once the server exited."""
        if self.exited:
            return False
        try:
            line = self._lines.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return False
        if line is None:
            self.exited = True
            self.turns.extend(self.reader.close())
            return False
        self.turns.extend(self.reader.feed(line))
        if b'"id"' in line:
            self._route(line)
        return True

    def _route(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return  # the reader has recorded the problem
        if not isinstance(message, dict) or "id" not in message:
            return
        if "method" in message:  # a server -> client request: it waits for our answer
            if message["method"] in APPROVAL_METHODS:
                self.send({"id": message["id"], "result": {"decision": self.approval_decision}})
            else:
                self.send(
                    {
                        "id": message["id"],
                        "error": {"code": -32601, "message": f"not supported: {message['method']}"},
                    }
                )
        else:
            self._responses[message["id"]] = message

    def wait_turn(self, thread_id: str, turn_id: str, timeout: float) -> CodexTurn | None:
        """The turn once it ended (None on timeout or when the server exited first)."""
        deadline = time.monotonic() + timeout
        while True:
            while self.turns:
                turn = self.turns.popleft()
                if (turn.thread_id, turn.turn_id) == (thread_id, turn_id):
                    return turn
            if not self.pump(deadline - time.monotonic()) and (
                self.exited or time.monotonic() >= deadline
            ):
                return None

    def close(self, timeout: float = 5.0) -> int | None:
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


@dataclass
class WorkerResult:
    turns: list[CodexTurn] = field(default_factory=list)
    reports: list[DeliveryReport] = field(default_factory=list)
    inputs: list[list[str]] = field(default_factory=list)  # texts sent with each turn/start
    # why the loop ended: max_turns | child_exited | not_delivered | no_blocks |
    # nothing_queued | timeout | "error: ..." (a request refused or a malformed answer)
    stopped: str = ""
    exit_code: int | None = None


def run_worker(
    argv: Sequence[str],
    *,
    ports: Ports,
    followups: FollowupTaker,
    sender: str,
    prompt: str,
    max_turns: int = 10,
    turn_timeout: float = 1800.0,
    request_timeout: float = 60.0,
    locale: str = "en",
    thread_params: dict[str, Any] | None = None,
) -> WorkerResult:
    """Drive one app-server thread as task `sender` for at most `max_turns` turns; each
    next input is what `followups.take_followups(sender)` hands out (the store)."""
    result = WorkerResult()
    client = AppServerClient(argv)
    try:
        client.request("initialize", {"clientInfo": CLIENT_INFO}, request_timeout)
        client.notify("initialized")
        started = client.request("thread/start", thread_params or {}, request_timeout)
        thread_id = str(started["thread"]["id"])
        for number in range(max_turns):
            if number == 0:
                inputs = [prompt]
            else:  # taken only when it is sent: what is not sent stays queued for later
                # the queue is the only channel: the report, then any "/goal ..." (GOA-2)
                inputs = list(followups.take_followups(sender))
                if not inputs:
                    result.stopped = "nothing_queued"  # e.g. the report could not be queued
                    break
            result.inputs.append(inputs)
            response = client.request(
                "turn/start",
                {"threadId": thread_id, "input": [{"type": "text", "text": t} for t in inputs]},
                request_timeout,
            )
            turn = client.wait_turn(thread_id, str(response["turn"]["id"]), turn_timeout)
            if turn is None:
                result.stopped = "child_exited" if client.exited else "timeout"
                break
            result.turns.append(turn)
            report = deliver_turn(
                turn.text,
                sender=sender,
                outcome=turn.delivery_outcome,
                ports=ports,
                locale=locale,
                turn_id=turn.turn_id,  # Codex's id: unique, so unique per sender task
            )
            result.reports.append(report)
            if not report.delivered:
                result.stopped = "not_delivered"  # interrupted / failed / incomplete turn
                break
            if not report.entries:
                result.stopped = "no_blocks"  # the agent asked for nothing: its work is done
                break
        else:
            result.stopped = "max_turns"
    except AppServerExited:
        result.stopped = "child_exited"
    except (AppServerError, TimeoutError, KeyError, TypeError) as exc:
        result.stopped = f"error: {exc}"  # a refused request or a malformed response
    finally:
        result.exit_code = client.close()
    return result


INSTALL_HINT = (
    "install the Codex CLI (`npm install -g @openai/codex`, or `scripts/install_codex.sh` "
    "in a clone of markertools, which prints the binary's path), or give the app-server "
    "command after `--`"
)


def missing_program(command: Sequence[str]) -> str | None:
    """What to tell the user when the app-server program cannot be found, else None."""
    program = command[0] if command else ""
    if program and shutil.which(program) is not None:
        return None
    return f"codex_worker: {program or 'the app-server command'!s} not found: {INSTALL_HINT}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="SQLite database (markertools world load)")
    parser.add_argument("--sender", required=True, help="the task id this Codex thread works as")
    parser.add_argument("--prompt", required=True, help="the first turn's input")
    parser.add_argument("--max-turns", type=int, default=10)
    parser.add_argument("--locale", default="en", choices=["en", "zh"])
    parser.add_argument(
        "command",
        nargs="*",
        default=["codex", "app-server"],
        help="the app-server command (after --)",
    )
    args = parser.parse_args(argv)
    command = args.command or ["codex", "app-server"]
    missing = missing_program(command)
    if missing is not None:
        sys.stderr.write(missing + "\n")
        return 2
    store = open_store(args.db)
    result = run_worker(
        command,
        ports=make_ports(store),
        followups=store,
        sender=args.sender,
        prompt=args.prompt,
        max_turns=args.max_turns,
        locale=args.locale,
    )
    for turn, report in zip(result.turns, result.reports, strict=False):
        print(
            f"turn {turn.turn_id}: {turn.status}, delivered={report.delivered}, "
            f"{len(report.entries)} block(s)"
        )
    print(f"stopped: {result.stopped} (app-server exit code {result.exit_code})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
