"""TOL-10 on the real Codex CLI (offline, fake model), as a person runs it: `markertools
worker run --db postgresql://USER:PASSWORD@...` with the store's secrets in its own
environment too (PGPASSWORD, DATABASE_URL, MARKERTOOLS_DB). The task's agent calls its
markertools tools (so its token exists and is live) while another task of the same host
is mid-turn with its own live token, then looks for secrets where an
agent can look, with its own shell inside Codex's sandbox: its environment, every
/proc/PID/environ and /proc/PID/cmdline it can read, its directory, its Codex home, /tmp.
What it saw is written to files in its directory and read back here whole (a tool
output would be cut short). Codex's sandbox shows its commands only their own process
namespace; a command the agent is allowed to run outside it (or any process of the same
user) sees more, so while the turn is live this test also reads, from outside, the
environ and cmdline of the host and of every process under it (the app-server, the
sandbox). The Codex home, the task directory and everything the model was sent are
searched too. No task token (of any task) and no password may appear anywhere."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from support.cli import EXE
from support.worker import TAG, add_task, worker_store

from markertools_adapters.codex.fakemodel import McpToolCall, ShellCall, Text, request_texts

PASSWORD = "pw-tol10-Q7xv"  # the database password on the host's command line
PGPASSWORD = "pgpass-tol10-Z3k"  # and PostgreSQL's password variable in its environment
TOKEN = re.compile(rb"mtt_[0-9a-f]{64}")
SECRETS = (TOKEN, re.compile(re.escape(PASSWORD.encode())), re.compile(PGPASSWORD.encode()))

# what the agent runs, each a plain command inside the sandbox (no approval asked)
LOOK = (
    "env > seen-env.txt",
    "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done > seen-cmdline.txt",
    "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f 2>/dev/null; echo; done > seen-environ.txt",
    'cat $(grep -rlI . "$CODEX_HOME" 2>/dev/null) > seen-codex-home.txt 2>/dev/null; ls -la /tmp > seen-tmp.txt',
)


def _outputs(body: Any) -> list[str]:
    found: list[str] = []
    for item in body.get("input") or [] if isinstance(body, dict) else []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            output = item.get("output")
            found.append(output if isinstance(output, str) else json.dumps(output))
    return found


def _url_with_password(dsn: str, schema: str) -> str:
    parts = urlsplit(dsn)
    user = parts.username or "postgres"
    netloc = f"{user}:{PASSWORD}@{parts.hostname}:{parts.port}"
    return f"postgresql://{netloc}{parts.path}?options=-csearch_path%3D{schema}"


def _tree(root: int) -> dict[str, bytes]:
    """environ + cmdline of `root` and every process below it, read now."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    tree, grew = {root}, True
    while grew:
        below = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= below
        grew = bool(below)
    found: dict[str, bytes] = {}
    for pid in sorted(tree):
        for name in ("environ", "cmdline"):
            try:
                found[f"/proc/{pid}/{name}"] = Path(f"/proc/{pid}/{name}").read_bytes()
            except OSError:
                continue
    return found


def _leaks(places: dict[str, bytes]) -> list[tuple[str, str]]:
    return [(where, p.pattern.decode()) for where, data in places.items() for p in SECRETS
            if p.search(data)]


@pytest.mark.rule("TOL-10", "WRK-9")
def test_no_token_or_database_password_where_the_codex_agent_can_look(
    offline_codex, tmp_path: Path
) -> None:
    seen: dict[str, Any] = {"outputs": []}
    other_live, looked = threading.Event(), threading.Event()

    def other(body: Any) -> Any:
        """Another running task: it calls a tool (its token is live), then its turn stays
        open until the looker has looked."""
        if not _outputs(body):
            return McpToolCall("markertools", "task_list", {})
        other_live.set()
        looked.wait(120)
        return Text("other done")

    def reply_for(body: Any) -> Any:
        agent = next((m.group(1) for t in request_texts(body) for m in [TAG.search(t)] if m), "")
        if agent == "other":
            return other(body)
        if agent != "looker":
            return Text("unexpected task")
        outs = _outputs(body)
        seen["outputs"] = outs
        seen.setdefault("bodies", []).append(json.dumps(body))
        if not outs:  # the tools are live in this thread: its token exists now
            return McpToolCall("markertools", "task_list", {})
        if len(outs) == 1:  # mid-turn: the host's whole process tree, read from outside
            seen["other_live"] = other_live.wait(60)  # the other task's token is live too
            seen["tree"] = _tree(seen["host"].pid)
        if len(outs) <= len(LOOK):
            return ShellCall(LOOK[len(outs) - 1], escalate=False)
        looked.set()
        return Text("looked around")

    offline_codex.fake.default_reply = None
    offline_codex.fake.reply_for = reply_for
    with worker_store("postgres", tmp_path) as store:
        url = _url_with_password(store.dsn, store.schema_name)
        add_task(store, "t-look", "[agent:looker] look around")
        add_task(store, "t-other", "[agent:other] keep a turn open")
        env = dict(offline_codex.env)
        env.update(PYTHONPATH=os.environ.get("PYTHONPATH", ""), PGPASSWORD=PGPASSWORD,
                   DATABASE_URL=url, MARKERTOOLS_DB=url)
        seen["host"] = host = subprocess.Popen(
            [str(EXE), "worker", "run", "--db", url, "--project", "p1", "--host", "h1",
             "--codex-bin", offline_codex.binary, "--worktrees", str(tmp_path / "worktrees"),
             "--until-idle", "--tools", "--json-log"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        try:
            _, stderr = host.communicate(timeout=300)
        finally:
            host.kill()
        assert host.returncode == 0, stderr
        task = store.get_task("t-look")
        assert task.status == "completed" and task.result_text == "looked around", stderr
        assert store.get_task("t-other").status == "completed"
    assert seen["other_live"]

    directory = Path(task.worktree)
    listed = json.loads(seen["outputs"][0][seen["outputs"][0].index("{"):])
    assert listed["kind"] == "task-list" and listed["outcome"] == "done"  # the tools were live
    places: dict[str, bytes] = {
        name: (directory / name).read_bytes()
        for name in ("seen-env.txt", "seen-cmdline.txt", "seen-environ.txt",
                     "seen-codex-home.txt", "seen-tmp.txt")
    }
    # the agent really looked: its environment, the processes its sandbox shows it (its
    # own namespace: the sandbox and its shell, neither the host nor the app-server),
    # their environ blocks, its Codex home's files, /tmp
    assert b"PATH=" in places["seen-env.txt"]
    assert b"codex-linux-sandbox" in places["seen-cmdline.txt"]
    assert b"worker run" not in places["seen-cmdline.txt"]
    assert b"CODEX_HOME=" in places["seen-environ.txt"]
    assert len(places["seen-codex-home.txt"]) > 0 and b"drwx" in places["seen-tmp.txt"]
    # what any process of the same user reads from outside the sandbox: the host's
    # command line with its password overwritten in place, the app-server's, the sandbox
    tree = seen["tree"]
    cmdlines = b"\n".join(data for where, data in tree.items() if where.endswith("cmdline"))
    assert b"worker\0run\0--db\0postgresql://" in cmdlines
    assert f"postgres:{'*' * len(PASSWORD)}@".encode() in cmdlines
    assert b"app-server" in cmdlines
    places.update(tree)
    # ... and everything the model was sent, the Codex home and the task's directory
    places["model requests"] = "\n".join(seen["bodies"]).encode()
    for root in (offline_codex.home, directory):
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                places[str(path)] = path.read_bytes()
    assert _leaks(places) == []
    # the database URL's other parts are no secret, but its password never reached the
    # agent's process: not in its shell's environment under any name
    assert b"DATABASE_URL" not in places["seen-env.txt"]
    assert b"PGPASSWORD" not in places["seen-env.txt"]


@pytest.mark.rule("TOL-10")
def test_the_codex_agent_cannot_write_a_sqlite_store_under_tmp(offline_codex, tmp_path: Path) -> None:
    """The store's file sits under /tmp (pytest's tmp_path), where a workspace-write
    sandbox would let the agent write; the host leaves /tmp out of the agent's writable
    roots, so writing the database behind the gates fails inside the sandbox."""
    from support.worker import settings_for

    from markertools_adapters.worker import WorkerHost

    db = tmp_path / "w.db"
    seen: dict[str, Any] = {}
    attack = f"printf 'junk' >> {db}; echo rc=$?"

    def reply_for(body: Any) -> Any:
        outs = _outputs(body)
        if not outs:
            return ShellCall(attack, escalate=False)
        seen["out"] = outs[-1]
        return Text("tried")

    offline_codex.fake.default_reply = None
    offline_codex.fake.reply_for = reply_for
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-write", "[agent:writer] write the database")
        from support.worker import run_host

        run_host(WorkerHost(settings_for(offline_codex, tmp_path), store))
        task = store.get_task("t-write")
    assert str(db).startswith("/tmp/")
    assert task.status == "completed" and task.result_text == "tried"
    assert "rc=1" in seen["out"] and ("Read-only file system" in seen["out"]
                                      or "Permission denied" in seen["out"]), seen["out"]
    assert not db.read_bytes().endswith(b"junk")
