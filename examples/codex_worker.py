"""Example worker: claim a task, drive `codex app-server` on it, deliver every completed turn
through markertools.

What it shows (no glue code between Codex and markertools beyond this file):

1. claim the project's next queued task with a lease (`claim_task(..., now=,
   lease_seconds=)`), after requeueing the tasks of hosts that died (`expired_leases`,
   `requeue_expired`); its first input is `claim_inputs` (a delivery a crash cut off is
   finished first, then the first-turn prompt);
2. launch the app-server (any argv; the real one is `codex app-server`) and speak its
   JSON-RPC over stdio: `initialize` + `initialized`, `thread/start`, then `turn/start`;
3. feed every line the server writes to `AppServerTurnReader`, which yields one
   `CodexTurn` per `turn/completed` (the agent text of the turn + how it ended);
4. `deliver_turn(turn.text, outcome=turn.delivery_outcome, turn_id=turn.turn_id,
   claim=claim, ...)` (only a completed turn executes anything, TRN-3; Codex's own turn
   id makes a redelivery after a crash apply each block once, TRN-9; the claim makes a
   host that lost the task write nothing, FLT-1);
5. send what the task's follow-up queue hands out (`take_followups(..., claim=claim)`: the
   report, then any "/goal ..." follow-up) as the next `turn/start` input - the queue is
   the only channel, never `report.queued_followups` directly - renewing the lease
   before every turn;
6. stop after `max_turns` (the task is requeued: its next claim hands over the last,
   unsent report), when a turn is not delivered, when a turn had no marker block (the
   agent asked for nothing more: the task completes), on a timeout, when the server
   exits, or when the lease was lost - and finish the task's last turn (`finish_turn`,
   fenced by the claim).

Server -> client requests (command / file-change approvals) are declined; other server
requests get a JSON-RPC "method not found" error. Run it against a database made with
`markertools world load WORLD.json --db world.db` that has a queued task:

    .venv/bin/python examples/codex_worker.py --db world.db --project p1 -- codex app-server
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

import markertools_adapters
from markertools import Claim, DeliveryReport, FinishedTurn, LeaseLost, deliver_turn
from markertools_adapters.codex import AppServerTurnReader, CodexTurn
from markertools_adapters.first_turn import claim_inputs

CLIENT_INFO = {
    "name": "markertools_worker",
    "title": "markertools example worker",
    "version": "0.1.0",
}
APPROVAL_METHODS = frozenset(
    {"item/commandExecution/requestApproval", "item/fileChange/requestApproval"}
)
LEASE_SECONDS = 300.0  # renewed before every turn; a turn may take longer: renew meanwhile


def open_store(db: str) -> markertools_adapters.Store:
    """The store, carrying its ports: a SQLite path or URL, `postgresql://...` (a fleet of
    these workers on one database) or `memory:`. executor: what a task-cancel block stops;
    this example runs no task processes of its own."""
    return markertools_adapters.connect(db, executor="noop", must_exist=db != "memory:")


def claim_next(store: markertools_adapters.Store, project: str, host: str) -> Claim | None:
    """Requeue the tasks of hosts that died (their lease expired), then claim the
    project's next queued task with a lease."""
    now = time.time()
    for lease in store.expired_leases(now, project):
        store.requeue_expired(
            lease.task_id, lease.host, now, affinity_seconds=300, reason=f"{lease.host} died"
        )
    return store.claim_task(project, host, now=now, lease_seconds=LEASE_SECONDS)


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
    # nothing_queued | timeout | lease_lost | "error: ..." (a request refused or a
    # malformed answer)
    stopped: str = ""
    exit_code: int | None = None
    finished: FinishedTurn | None = None  # the task's last turn, finished (None: lease lost)


def run_worker(
    argv: Sequence[str],
    *,
    store: markertools_adapters.Store,
    claim: Claim,
    inputs: Sequence[str],
    max_turns: int = 10,
    turn_timeout: float = 1800.0,
    request_timeout: float = 60.0,
    locale: str = "en",
    thread_params: dict[str, Any] | None = None,
) -> WorkerResult:
    """Drive one app-server thread as the claimed task for at most `max_turns` turns: the
    first input is `inputs`, each next one what `store.take_followups` hands out. Every
    write carries the claim; the task's last turn is finished at the end."""
    result = WorkerResult()
    sender, host = claim.task.id, claim.task.host or ""
    client = AppServerClient(argv)
    try:
        client.request("initialize", {"clientInfo": CLIENT_INFO}, request_timeout)
        client.notify("initialized")
        started = client.request("thread/start", thread_params or {}, request_timeout)
        thread_id = str(started["thread"]["id"])
        for number in range(max_turns):
            now = time.time()
            if sender not in store.renew_leases(
                host, [claim], lease_seconds=LEASE_SECONDS, now=now
            ):
                result.stopped = "lease_lost"  # requeued or cancelled meanwhile: stop
                break
            if number == 0:
                sent = list(inputs)
            else:  # taken only when it is sent: what is not sent stays queued for later
                # the queue is the only channel: the report, then any "/goal ..." (GOA-2)
                sent = list(store.take_followups(sender, claim=claim))
                if not sent:
                    result.stopped = "nothing_queued"  # e.g. the report could not be queued
                    break
            result.inputs.append(sent)
            response = client.request(
                "turn/start",
                {"threadId": thread_id, "input": [{"type": "text", "text": t} for t in sent]},
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
                ports=store.ports,
                locale=locale,
                turn_id=turn.turn_id,  # Codex's id: unique, so unique per sender task
                claim=claim,  # a host that lost the task writes nothing (LeaseLost)
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
    except LeaseLost:
        result.stopped = "lease_lost"  # another worker runs the task now: write nothing
    except (AppServerError, TimeoutError, KeyError, TypeError) as exc:
        result.stopped = f"error: {exc}"  # a refused request or a malformed response
    finally:
        result.exit_code = client.close()
    if result.stopped != "lease_lost":
        result.finished = finish(store, claim, result)
    return result


def finish(
    store: markertools_adapters.Store, claim: Claim, result: WorkerResult
) -> FinishedTurn | None:
    """The end of the attempt, in one `finish_turn` under the claim: a turn that asked for
    nothing more completes the task; at max_turns it is queued again (its next claim
    hands over the unsent report); a turn that was not delivered ends it as the turn
    ended; a server that went away, a timeout or an error fails it. None when the claim
    was lost meanwhile (another worker runs the task)."""
    last = result.turns[-1] if result.turns else None
    turn_id = last.turn_id if last is not None else f"attempt-{claim.epoch}"
    text = last.text if last is not None else None
    if result.stopped in ("no_blocks", "nothing_queued", "max_turns") and last is not None:
        outcome, error = "completed", None
    elif result.stopped == "not_delivered" and last is not None:
        outcome, error = last.delivery_outcome, last.error
    else:
        outcome, error = "failed", f"codex_worker stopped: {result.stopped}"
    try:
        return store.finish_turn(
            claim.task.id,
            turn_id,
            outcome=outcome,
            result_text=text,
            error_text=error,
            requeue=result.stopped == "max_turns",
            claim=claim,
        )
    except LeaseLost:
        result.stopped = "lease_lost"
        return None


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
    parser.add_argument("--db", required=True, help="the database (markertools world load)")
    parser.add_argument("--project", required=True, help="the project whose task to claim")
    parser.add_argument("--host", default="codex-worker", help="this worker's host name")
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
    with open_store(args.db) as store:
        claim = claim_next(store, args.project, args.host)
        if claim is None:
            print(f"nothing queued in project {args.project}")
            return 0
        print(f"claimed {claim.task.id} ({claim.start})")
        result = run_worker(
            command,
            store=store,
            claim=claim,
            inputs=claim_inputs(claim, store, locale=args.locale),
            max_turns=args.max_turns,
            locale=args.locale,
        )
    for turn, report in zip(result.turns, result.reports, strict=False):
        print(
            f"turn {turn.turn_id}: {turn.status}, delivered={report.delivered}, "
            f"{len(report.entries)} block(s)"
        )
    print(f"stopped: {result.stopped} (app-server exit code {result.exit_code})")
    if result.finished is not None:
        print(f"{claim.task.id}: {result.finished.status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
