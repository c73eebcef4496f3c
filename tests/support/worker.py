"""Test support for the worker host (tests/worker): a fake-model router that answers by
the agent tag in a task's prompt (`[agent:NAME]`), a store with a project, a user and
its quota (SQLite or a throwaway PostgreSQL schema), and a host wired to the real
pinned Codex CLI running offline against the fake model.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from markertools import Project, Quota, Task
from markertools_adapters.codex.fakemodel import Reply, Text, last_user_text, request_texts
from markertools_adapters.opener import connect
from markertools_adapters.worker import WorkerHost, WorkerSettings
from markertools_adapters.worker.dirs import LAYOUT
from markertools_adapters.worktrees import WorktreeFiles
from support.codex import OfflineCodex

PROJECT = "p1"
USER = "alice"
TAG = re.compile(r"\[agent:([a-z0-9_-]+)\]")
TASK_ID = re.compile(r"\btask (t-[0-9a-f]+)\b")

Script = Callable[[str, list[str]], Reply]
"""(the last user text, every text of the request) -> the reply."""


class Router:
    """`fake.reply_for`: the reply of the agent whose `[agent:NAME]` tag opens the
    conversation (its first user message with a tag); unknown agents echo. `texts` and
    `last` read a request (the Codex fake's by default; support.claude passes the
    Messages API's)."""

    def __init__(
        self,
        texts: Callable[[Any], list[str]] = request_texts,
        last: Callable[[Any], str | None] = last_user_text,
    ) -> None:
        self.scripts: dict[str, Script] = {}
        self.calls: list[tuple[str, str]] = []
        self.texts = texts
        self.last = last

    def on(self, name: str, script: Script) -> None:
        self.scripts[name] = script

    def __call__(self, body: Any) -> Reply:
        texts = self.texts(body)
        last = self.last(body) or ""
        name = next((m.group(1) for t in texts for m in [TAG.search(t)] if m), "")
        self.calls.append((name, last))
        script = self.scripts.get(name)
        if script is None:
            return Text(f"(no script for {name!r}) done")
        return script(last, texts)


def routed(codex: OfflineCodex) -> Router:
    """A Router answering every request of `codex`'s fake model."""
    router = Router()
    codex.fake.default_reply = None
    codex.fake.reply_for = router
    return router


def task_ids_in(text: str) -> list[str]:
    """Task ids a report names (`created task t-...`), in order, once each."""
    seen: list[str] = []
    for tid in TASK_ID.findall(text):
        if tid not in seen:
            seen.append(tid)
    return seen


def block(kind: str, body: str) -> str:
    return f"```{kind}\n{body}\n```\n"


@contextmanager
def worker_store(kind: str, tmp_path: Path, host: str = "h1") -> Iterator[Any]:
    """A store ("sqlite" or "postgres") with project p1, user alice (read, create_task;
    $10 quota), whose ports read task directories under tmp_path/worktrees."""
    root = tmp_path / "worktrees"
    root.mkdir(exist_ok=True)
    files = WorktreeFiles(root, host, layout=LAYOUT)
    if kind == "sqlite":
        store = connect(tmp_path / "w.db", executor="noop", files=files)
        schema = None
    else:
        from support.postgres import drop_schema, new_schema_name, require_dsn

        dsn = require_dsn()
        schema = new_schema_name()
        store = connect(dsn, executor="noop", files=files, schema=schema)
        store.dsn, store.schema_name = dsn, schema
    try:
        store.put_project(Project(PROJECT, "demo"))
        store.set_permissions(USER, PROJECT, ["read", "create_task"])
        store.put_quota(Quota(USER, total_usd=10))
        yield store
    finally:
        store.close()
        if schema is not None:
            drop_schema(dsn, schema)


def add_task(store: Any, task_id: str, prompt: str, **fields: Any) -> Task:
    fields.setdefault("created_by", USER)
    task = Task(task_id, PROJECT, status="queued", prompt=prompt, **fields)
    store.insert_task(task)
    return task


def settings_for(codex: OfflineCodex, tmp_path: Path, **kw: Any) -> WorkerSettings:
    kw.setdefault("host", "h1")
    kw.setdefault("until_idle", True)
    kw.setdefault("max_concurrent", 3)
    kw.setdefault("poll_seconds", 0.1)
    kw.setdefault("request_timeout", 30.0)
    return WorkerSettings(
        project=PROJECT,
        codex_bin=codex.binary,
        codex_env=codex.env,
        worktrees=tmp_path / "worktrees",
        **kw,
    )


def run_host(host: WorkerHost, timeout: float = 120.0) -> int:
    """Run a host to its end (bounded)."""

    async def bounded() -> int:
        async with asyncio.timeout(timeout):
            return await host.run()

    return asyncio.run(bounded())


def worker_process(
    env: dict[str, str], tmp_path: Path, db: str, host: str, *engine: str, extra: tuple[str, ...] = ()
) -> subprocess.Popen[str]:
    """`markertools worker run --json-log --lease-seconds 1 --no-tools` as a separate
    process (a host that can die): `env` the offline engine's environment, `engine` its
    flags (`--codex-bin B`, or `--engine claude-code --claude-bin B`), `extra` more."""
    from support.cli import EXE

    child_env = dict(env)
    child_env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    argv = [str(EXE), "worker", "run", "--db", db, "--project", PROJECT, "--host", host]
    argv += [*engine, "--worktrees", str(tmp_path / "worktrees"), "--json-log"]
    argv += ["--lease-seconds", "1", "--no-tools", *extra]
    return subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env
    )


def read_events_until(proc: subprocess.Popen[str], kind: str) -> list[dict[str, Any]]:
    """The `--json-log` events of `proc` up to and including the first `kind` one."""
    assert proc.stdout is not None
    seen: list[dict[str, Any]] = []
    for line in proc.stdout:  # bounded by the host's own end
        seen.append(json.loads(line))
        if seen[-1]["event"] == kind:
            return seen
    raise AssertionError(
        f"the host ended without a {kind} event: {proc.stderr.read() if proc.stderr else ''}"
    )


def slow_plan_then_resumed(last: str, texts: list[str]) -> Reply:
    """A routed agent for kill -9 tests: its first attempt's turn never completes (blocks
    that must never apply, held 60 s); an attempt that starts with the resume notice
    finishes at once."""
    if "Resume notice" in last:
        return Text("finished on the second attempt")
    return Text(block("task-create", json.dumps({"prompt": "never"})), delay=60)
