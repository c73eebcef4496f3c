"""Test support for the fleet-safety tests (tests/worker/test_worker_fleet*.py): `worker
run` hosts as real processes with their `--json-log` read by a thread (so a test waits
for an event with a bound, never blocks on a pipe), a PostgreSQL server of the test's own
that can be halted and resumed (a database outage without disturbing the other tests),
and a normalised picture of a world (what "equals one clean run" compares)."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from markertools import TODO_STATUSES
from support.cli import EXE
from support.paths import REPO, TESTS

KILLSWITCH = TESTS / "support" / "killswitch"


class HostProcess:
    """One `markertools worker run` process; its JSON events arrive on a queue."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        self._readers = [
            threading.Thread(target=self._read_events, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_events(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                self.events.put(json.loads(line))

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip("\n"))

    def wait_for(self, kind: str, timeout: float = 60.0, **match: Any) -> dict[str, Any]:
        """The next event of `kind` (with these fields); AssertionError after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(
                    f"no {kind} event {match} within {timeout} s; seen "
                    f"{[e.get('event') for e in self.seen]}; stderr: {self.stderr[-5:]}"
                )
            try:
                event = self.events.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                if self.proc.poll() is not None and self.events.empty():
                    time.sleep(0.2)  # the reader may still be draining
                    if self.events.empty():
                        raise AssertionError(
                            f"the host exited ({self.proc.returncode}) without a {kind} event;"
                            f" stderr: {self.stderr[-5:]}"
                        ) from None
                continue
            self.seen.append(event)
            if event.get("event") == kind and all(event.get(k) == v for k, v in match.items()):
                return event

    def finish(self, timeout: float = 120.0) -> int:
        """Wait for the process to end (bounded) and drain its events; its exit code."""
        try:
            code = self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        for reader in self._readers:
            reader.join(timeout=5)
        while not self.events.empty():
            self.seen.append(self.events.get())
        return code

    def kinds(self, task_id: str | None = None) -> list[str]:
        return [
            str(e.get("event")) for e in self.seen if task_id is None or e.get("task_id") == task_id
        ]


def start_host(
    codex: Any,
    tmp_path: Path,
    db: str,
    name: str,
    *extra: str,
    env: dict[str, str] | None = None,
    project: str = "p1",
) -> HostProcess:
    """`markertools worker run --json-log --lease-seconds 1 --no-tools` as host `name`
    (extra options after), on the real Codex of `codex` (offline)."""
    full = dict(codex.env)
    full["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    full.update(env or {})
    argv = [
        str(EXE),
        "worker",
        "run",
        "--db",
        db,
        "--project",
        project,
        "--host",
        name,
        "--codex-bin",
        codex.binary,
        "--worktrees",
        str(tmp_path / "worktrees"),
        "--json-log",
        "--lease-seconds",
        "1",
        "--no-tools",
        *extra,
    ]
    return HostProcess(argv, full)


def killswitch_env(sender: str, at: int, count_file: Path | None = None) -> dict[str, str]:
    """The environment that makes a host kill itself at store write `at` of `sender`'s
    first delivery (tests/support/killswitch/sitecustomize.py)."""
    path = os.environ.get("PYTHONPATH", "")
    env = {
        "PYTHONPATH": f"{KILLSWITCH}{os.pathsep}{path}" if path else str(KILLSWITCH),
        "MARKERTOOLS_TEST_KILL_SENDER": sender,
        "MARKERTOOLS_TEST_KILL_AT": str(at),
    }
    if count_file is not None:
        env["MARKERTOOLS_TEST_KILL_COUNT_FILE"] = str(count_file)
    return env


def postgres_url(store: Any) -> str:
    """The URL a host process opens for the test store's PostgreSQL schema."""
    sep = "&" if "?" in store.dsn else "?"
    return f"{store.dsn}{sep}options=-csearch_path%3D{store.schema_name}"


def _pg_script() -> Any:
    spec = importlib.util.spec_from_file_location("pg_test_server", REPO / "scripts" / "pg_test_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def private_postgres() -> Iterator[tuple[str, Any]]:
    """A PostgreSQL server of this test's own: (dsn, control) where `control.halt()` stops
    it (connections cut, data kept) and `control.resume()` starts it on the same port."""
    script = _pg_script()
    dsn, base = script.start()

    class Control:
        def halt(self) -> None:
            script.halt(base)

        def resume(self) -> None:
            script.resume(base)

    try:
        yield dsn, Control()
    finally:
        script.stop(base)


def world_picture(store: Any, project: str = "p1") -> dict[str, Any]:
    """What one clean run of a story leaves, without ids and times: each task by its
    prompt (parent's prompt, status, result), the todos' titles, the follow-ups pending."""
    tasks = store.list_tasks(project, status=None, q=None, limit=1000).rows
    prompt_of = {t.id: t.prompt for t in tasks}
    todos = store.list_todos(project, statuses=set(TODO_STATUSES), q=None, limit=1000)
    return {
        "tasks": sorted(
            (t.prompt, prompt_of.get(t.parent_task_id or ""), t.status, t.result_text)
            for t in tasks
        ),
        "todos": sorted(t.title for t in todos.rows),
    }


__all__ = [
    "HostProcess",
    "killswitch_env",
    "postgres_url",
    "private_postgres",
    "start_host",
    "world_picture",
]
