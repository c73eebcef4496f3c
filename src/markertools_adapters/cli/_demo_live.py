# Owns: `markertools demo --live` - the root/children story on the REAL pinned Codex CLI
# (or, with `--engine claude-code`, the REAL pinned Claude Code CLI: `_demo_claude.py`),
# offline: the bundled fake Responses model (`FakeResponses` + a router by the agent tag
# in a task's prompt; the fake Messages API for Claude Code) answers; a lead task creates
# two children (api, docs) and waits for them with wait-threads; the api child asks to run
# a command outside its sandbox, the host's approval broker stores the request, the
# lead's wait ends early showing it and the lead approves it with an approval-answer
# block (APR-1..4), the command runs, and the lead completes once both children did; the
# real `WorkerHost` runs all three on a
# temporary SQLite database and task directories, in the terminal's live view; the end
# prints `worker status` and what changed in the world.
#
# Must never: reach the network (the Codex home points at the local fake model only);
# leave files behind unless `--keep DIR` asked for them; run without a Codex binary
# (exit 2 with one line saying how to install it).
#
# Invariants:
#   Rule 1: the demo is the worker host's own code path (WorkerHost over connect()), not a
#           second implementation; only the model is fake.
#   Rule 2: the Codex binary is --codex-bin, else MARKERTOOLS_CODEX_BIN, else the repo's
#           pinned install under .cache/codex (scripts/install_codex.sh); Claude Code's
#           likewise (--claude-bin, MARKERTOOLS_CLAUDE_BIN, .cache/claude, PATH).
from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from markertools import Project, Quota, Task

PROJECT: Final[str] = "demo"
USER: Final[str] = "alice"
HOST: Final[str] = "demo-host"
LEAD: Final[str] = "t-lead"
TAG: Final[re.Pattern[str]] = re.compile(r"\[agent:([a-z0-9_-]+)\]")
TASK_ID: Final[re.Pattern[str]] = re.compile(r"\btask (t-[0-9a-f]+)\b")
APPROVAL_ID: Final[re.Pattern[str]] = re.compile(r"\bapr-[0-9a-f]{16}\b")
ANSWERED: Final[re.Pattern[str]] = re.compile(r'```approval-answer\n\{"approval_id": "(apr-[0-9a-f]+)"')
HEALTH_CHECK: Final[str] = "echo GET /health answers 200"  # what the api child asks to run
INSTALL_HINT: Final[str] = (
    "demo --live needs the pinned Codex CLI: run `make demo-live` (it installs it with "
    "scripts/install_codex.sh), or pass --codex-bin / set MARKERTOOLS_CODEX_BIN"
)
LEAD_PROMPT: Final[str] = "[agent:lead] Add a /health endpoint and document it."
FINAL_ANSWER: Final[str] = "Both parts are done: the endpoint and its docs. Finished."
ENGINE_LABELS: Final[dict[str, str]] = {"codex": "codex app-server", "claude-code": "claude"}
ENGINE_NAMES: Final[dict[str, str]] = {"codex": "Codex CLI", "claude-code": "Claude Code CLI"}


def _fence(kind: str, body: dict[str, Any]) -> str:
    return f"```{kind}\n{json.dumps(body)}\n```\n"


def _task_ids(text: str) -> list[str]:
    seen: list[str] = []
    for tid in TASK_ID.findall(text):
        if tid not in seen:
            seen.append(tid)
    return seen


@dataclass(frozen=True)
class ShellAsk:
    """A reply that runs `command` outside the sandbox: the engine asks for approval."""

    command: str
    why: str


def lead_reply(last: str, texts: list[str] | None = None) -> str:
    """The lead: split the work, wait for the children, answer a child's approval
    request its wait showed (once), wait again, then finish."""
    if "[agent:lead]" in last:
        return (
            "Two parts: the endpoint and its documentation.\n\n"
            + _fence(
                "task-create",
                {"name": "api", "prompt": "[agent:api] Add GET /health returning 200."},
            )
            + _fence(
                "task-create",
                {"name": "docs", "prompt": "[agent:docs] Document GET /health in the README."},
            )
        )
    ids = _task_ids(last)
    wait = _fence("wait-threads", {"task_ids": ids, "interval_seconds": 1, "timeout_seconds": 120})
    if "created task" in last:
        return wait
    answered = {m for t in texts or [] for m in ANSWERED.findall(t)}  # its own blocks
    asking = [a for a in APPROVAL_ID.findall(last) if a not in answered]
    if asking:
        return (
            "The api child asks to run its health check outside the sandbox; that is safe.\n\n"
            + _fence(
                "approval-answer",
                {"approval_id": asking[0], "decision": "approve", "reason": "a read-only check"},
            )
            + wait
        )
    if "NOT finished" in last and ids:
        return wait
    return FINAL_ANSWER


CHILD_ANSWERS: Final[dict[str, str]] = {
    "api": 'GET /health added; it returns 200 with {"ok": true}.',
    "docs": "README: a 'Health check' section documents GET /health.",
}


def answer(texts: list[str], last: str, tool_results: int = 0) -> str | ShellAsk:
    """What the agent whose tag opens the conversation (`texts`) says to `last`;
    `tool_results` counts the tool results its turn has read so far."""
    name = next((m.group(1) for t in texts for m in [TAG.search(t)] if m), "")
    if name == "lead":
        return lead_reply(last, texts)
    if name == "api" and tool_results == 0:
        return ShellAsk(HEALTH_CHECK, "check that /health answers before saying it is done")
    return CHILD_ANSWERS.get(name, f"(no script for {name!r}) done")


def route(body: Any) -> Any:
    """`FakeResponses.reply_for`: the reply of the agent whose tag opens the conversation."""
    from markertools_adapters.codex.fakemodel import (
        ShellCall,
        Text,
        last_user_text,
        request_texts,
    )

    items = body.get("input") if isinstance(body, dict) else None
    outputs = sum(
        1 for i in items or [] if isinstance(i, dict) and i.get("type") == "function_call_output"
    )
    said = answer(request_texts(body), last_user_text(body) or "", outputs)
    if isinstance(said, ShellAsk):
        return ShellCall(said.command, escalate=True, justification=said.why)
    return Text(said)


def find_codex(option: str | None) -> str | None:
    """Rule 2: the runnable Codex binary, or None."""
    candidates: list[Path] = []
    for given in (option, os.environ.get("MARKERTOOLS_CODEX_BIN")):
        if given:
            candidates.append(Path(given))
            break
    else:
        for root in (Path.cwd(), Path(__file__).resolve().parents[3]):
            candidates += sorted(
                (root / ".cache" / "codex" / "node_modules").glob(
                    "@openai/codex-*/vendor/*/bin/codex"
                )
            )
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return None


@contextmanager
def _workdir(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, mode=0o700)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="markertools-demo-") as tmp:
        yield Path(tmp)


class Story:
    """Host events as the story's lines (a sink); children get their names."""

    def __init__(
        self,
        say: Callable[[str], None],
        lookup: Callable[[str], Any],
        engine: str = ENGINE_LABELS["codex"],
    ) -> None:
        self.say = say
        self.engine = engine  # what runs a turn, as the story says it
        self.lookup = lookup  # task id -> Task | None (a child's name, on its claim)
        self.names: dict[str, str] = {LEAD: "lead"}

    def name(self, task_id: str) -> str:
        return f"{task_id} ({self.names[task_id]})" if task_id in self.names else task_id

    def __call__(self, event: Any) -> None:
        d = event.details
        if event.kind == "claimed" and event.task_id not in self.names:
            task = self.lookup(event.task_id)
            tag = TAG.search(task.prompt) if task is not None else None
            if tag is not None:
                self.names[event.task_id] = tag.group(1)
        who = self.name(event.task_id)
        if event.kind == "claimed":
            self.say(f"{who}: claimed by host {HOST}")
        elif event.kind == "turn_started":
            self.say(f"{who}: turn {d.get('turn')} started on {self.engine}")
        elif event.kind == "delivered":
            self.say(f"{who}: turn {d.get('turn')} delivered, {d.get('blocks', 0)} block(s)")
        elif event.kind == "finished":
            self.say(f"{who}: finished, {d.get('status')}")
        elif event.kind in ("cancelled", "requeued", "lease_expired"):
            self.say(f"{who}: {event.kind.replace('_', ' ')}")
        elif event.kind == "approval_requested" and d.get("status") == "pending":
            command = " ".join(d.get("command") or []) or ", ".join(d.get("paths") or [])
            self.say(f"{who}: asks for approval {d.get('id')} ({d.get('kind')}: {command})")
        elif event.kind == "approval_answered":
            self.say(f"{who}: approval {d.get('id')} {d.get('status')} by {d.get('answered_by')}")


@contextmanager
def _codex_model(work: Path, binary: str) -> Iterator[dict[str, Any]]:
    """The fake Responses model running, a CODEX_HOME under `work`: the settings fields."""
    from markertools_adapters.codex.fakemodel import FakeResponses
    from markertools_adapters.codex.offline import codex_env, make_codex_home

    with FakeResponses(default_reply=None) as fake:
        fake.reply_for = route
        home = work / "codex-home"
        make_codex_home(home, fake.base_url, models=["fake-model"])
        yield {"codex_bin": binary, "codex_env": codex_env(home)}


def run_live(
    codex_bin: str,
    *,
    keep: Path | None,
    out: IO[str],
    timeout: float = 300.0,
    engine: str = "codex",
) -> int:
    """The whole live demo on `engine` (`codex_bin`: that engine's binary); returns the
    exit code (0: the lead completed)."""
    from markertools_adapters.cli._demo_claude import claude_model
    from markertools_adapters.opener import connect
    from markertools_adapters.worker import (
        RunningView,
        WorkerHost,
        WorkerSettings,
        fleet_snapshot,
        status_lines,
    )
    from markertools_adapters.worker.dirs import LAYOUT
    from markertools_adapters.worktrees import WorktreeFiles
    from markertools_adapters.worlddiff import world_changes

    def say(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    claude = engine == "claude-code"
    model = claude_model(answer) if claude else _codex_model
    with _workdir(keep) as work, model(work, codex_bin) as engine_fields:
        worktrees = work / "worktrees"
        worktrees.mkdir(mode=0o700, exist_ok=True)
        db = work / "demo.db"
        store: Any = connect(
            db, executor="noop", files=WorktreeFiles(worktrees, HOST, layout=LAYOUT)
        )
        try:
            store.put_project(Project(PROJECT, "live demo"))
            store.set_permissions(USER, PROJECT, ["read", "create_task"])
            store.put_quota(Quota(USER, total_usd=10))
            before = store.export_world(time.time())
            store.insert_task(
                Task(
                    LEAD,
                    PROJECT,
                    status="queued",
                    prompt=LEAD_PROMPT,
                    created_by=USER,
                    created_at=time.time(),  # not 0: the lead comes before its children
                )
            )
            say(
                f"markertools demo --live: project {PROJECT!r} on a fresh SQLite database "
                f"({'kept in ' + str(work) if keep else 'temporary'}); the real "
                f"{ENGINE_NAMES[engine]} ({codex_bin}) runs offline against the bundled "
                "fake model.\n"
                f"Queued {LEAD}: {LEAD_PROMPT}\n"
                "Watch: the lead creates two children (api, docs) and waits for them with "
                "wait-threads; api asks to run a command outside its sandbox, the lead's "
                "wait shows the request and the lead approves it (approval-answer); then "
                "the lead completes - each task in its own directory and thread.\n"
            )
            settings = WorkerSettings(
                project=PROJECT,
                host=HOST,
                max_concurrent=3,
                worktrees=worktrees,
                until_idle=True,
                poll_seconds=0.1,
                request_timeout=60.0,
                grace_seconds=5.0,
                **engine_fields,
            )
            story = Story(say, store.get_task, ENGINE_LABELS[engine])
            view = RunningView(HOST, label=story.name)  # children by name: "t-… (api)"
            host = WorkerHost(settings, store, sinks=[view, story])
            code = asyncio.run(_drive(host, view, story, out, timeout))
            after = store.export_world(time.time())
            lead = store.get_task(LEAD)
            say("")
            say(f"{LEAD} result: {lead.result_text if lead is not None else '?'}")
            say("")
            say("markertools worker status:")
            for line in status_lines(fleet_snapshot(store, PROJECT)):
                say(f"  {line}")
            say("")
            changes = world_changes(before, after, virtual=False)
            say("What changed:" if changes else "What changed: nothing")
            for line in changes:
                say(f"  {line}")
            if keep is not None:
                say(f"\nKept in {keep}: markertools world dump --db {db}")
            ok = lead is not None and lead.status == "completed"
            return code if code != 0 else (0 if ok else 1)
        finally:
            store.close()


async def _drive(host: Any, view: Any, story: Story, out: IO[str], timeout: float) -> int:
    loop = asyncio.get_running_loop()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, host.stop)
    async with asyncio.timeout(timeout):
        if not out.isatty():
            return int(await host.run())
        from rich.console import Console
        from rich.live import Live

        console = Console(file=out)
        story.say = lambda line: console.print(line, markup=False, highlight=False)
        with Live(view.table(), console=console, refresh_per_second=4) as live:
            return int(await view.follow(host.run(), live, 0.25))


def main_live(
    codex_option: str | None,
    keep: Path | None,
    engine: str = "codex",
    claude_option: str | None = None,
) -> int:
    from markertools_adapters.cli._demo_claude import CLAUDE_INSTALL_HINT, find_claude_bin

    if engine not in ENGINE_LABELS:
        sys.stderr.write(f"--engine {engine[:40]}: expected one of {', '.join(ENGINE_LABELS)}\n")
        return 2
    claude = engine == "claude-code"
    binary = find_claude_bin(claude_option) if claude else find_codex(codex_option)
    if binary is None:
        sys.stderr.write((CLAUDE_INSTALL_HINT if claude else INSTALL_HINT) + "\n")
        return 2
    if keep is not None and (keep.exists() or keep.is_symlink()):
        sys.stderr.write(f"--keep {keep}: already exists (the demo only writes new files)\n")
        return 2
    return run_live(binary, keep=keep, out=sys.stdout, engine=engine)


__all__ = ["find_codex", "main_live", "route", "run_live"]
