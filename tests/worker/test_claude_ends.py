"""How a Claude Code task's run ends on the real CLI (offline, the fake Messages API): a
cancel from another process ends the engine's process group - and the command sandbox's
- (WRK-5), a failed turn fails the task with Claude Code's error (WRK-4), a model Claude
Code has no price for is recorded unpriced unless the price table names it (WRK-8):
ENG-2."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from support.claude import claude_settings_for, routed_claude
from support.worker import add_task, run_host, worker_store

from markertools_adapters._procgroups import descendant_groups, group_alive, live_group_members
from markertools_adapters.claude.fakemessages import BashCall, HttpError, Text
from markertools_adapters.worker import HostEvent, PriceTable, WorkerHost

_CANCEL = """
import sys
from markertools import TaskChange
from markertools_adapters.opener import connect
url, schema, task_id = sys.argv[1], sys.argv[2] or None, sys.argv[3]
kw = {"schema": schema} if schema else {}
with connect(url, executor="noop", must_exist=True, **kw) as store:
    done = store.transition_task(task_id, "running", TaskChange(
        status="interrupted", interrupted_reason="cancelled by the test"))
    print("ok" if done is not None else "missed")
"""
_SLEEP = "import time; time.sleep(120)  # markertools-long-command"


def _sandbox_groups(pgid: int) -> list[int]:
    """The groups of the engine's descendants running the long command."""
    found = []
    for group in descendant_groups(pgid):
        for pid in live_group_members(group) or []:
            try:
                if b"markertools-long-command" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(group)
            except OSError:
                continue
    return found


@pytest.mark.rule("ENG-2")
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_cancel_from_another_process_ends_claude_and_its_sandboxed_command(
    offline_claude, tmp_path: Path, kind: str
) -> None:
    router = routed_claude(offline_claude)
    router.on("slow", lambda last, texts: BashCall(f"python3 -c {json.dumps(_SLEEP)}"))
    seen: dict[str, Any] = {}
    with worker_store(kind, tmp_path) as store:
        add_task(store, "t-slow", "[agent:slow] take your time")
        url = str(tmp_path / "w.db") if kind == "sqlite" else store.dsn
        schema = "" if kind == "sqlite" else store.schema_name

        def sink(event: HostEvent) -> None:
            if event.kind == "turn_started":
                seen["pgid"] = pgid = event.details["pgid"]
                deadline = time.monotonic() + 60  # the command starts in the sandbox
                while not _sandbox_groups(pgid) and time.monotonic() < deadline:
                    time.sleep(0.05)
                seen["sandbox"] = _sandbox_groups(pgid)
                done = subprocess.run(
                    [sys.executable, "-c", _CANCEL, url, schema, "t-slow"],
                    capture_output=True,
                    text=True,
                    timeout=60,
                    check=False,
                )
                seen["cancel"] = done.stdout.strip() or done.stderr
                seen["at"] = time.monotonic()
            if event.kind == "cancelled":
                seen["alive"] = [g for g in [seen["pgid"], *seen["sandbox"]] if group_alive(g)]
                seen["after"] = time.monotonic() - seen["at"]

        run_host(WorkerHost(claude_settings_for(offline_claude, tmp_path), store, sinks=[sink]))
        assert seen["cancel"] == "ok"
        assert seen["sandbox"] and seen["pgid"] not in seen["sandbox"]  # a group of its own
        assert seen["alive"] == []
        print(f"cancel -> claude's and the sandbox's process groups gone: {seen['after']:.2f} s")
        task = store.get_task("t-slow")
        assert task.status == "interrupted"
        assert task.interrupted_reason == "cancelled by the test"
        assert Path(task.worktree).is_dir()  # the directory is kept


@pytest.mark.rule("ENG-2")
def test_a_failed_turn_fails_the_task_with_claude_codes_error(
    offline_claude, tmp_path: Path
) -> None:
    router = routed_claude(offline_claude)
    body = '{"type":"error","error":{"type":"invalid_request_error","message":"bad request"}}'
    router.on("broken", lambda last, texts: HttpError(400, body))
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-bad", "[agent:broken] try")
        run_host(WorkerHost(claude_settings_for(offline_claude, tmp_path), store))
        task = store.get_task("t-bad")
        assert task.status == "failed"
        assert task.error_text == "the turn failed: API Error: 400 bad request"
        (row,) = store.task_costs("t-bad")
        assert row.tokens == 0


@pytest.mark.rule("ENG-2")
def test_a_model_claude_code_cannot_price_is_unpriced_unless_the_table_names_it(
    offline_claude, tmp_path: Path
) -> None:
    router = routed_claude(offline_claude)
    router.on("work", lambda last, texts: Text("done"))
    prices = PriceTable.from_json({"fake-priced": {"input": 1, "output": 2}})
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-unknown", "[agent:work] one", model="fake-unknown")
        add_task(store, "t-table", "[agent:work] two", model="fake-priced")
        settings = claude_settings_for(offline_claude, tmp_path, prices=prices)
        run_host(WorkerHost(settings, store))
        (unknown,) = store.task_costs("t-unknown")
        (table,) = store.task_costs("t-table")
        # Claude Code reports a guessed cost for a model it does not know (costBasis
        # "unknown"): the row keeps the tokens, unpriced - never a guess, never $0
        assert (unknown.tokens, unknown.usd, unknown.priced) == (120, None, False)
        assert unknown.priced_by is None
        # ... unless --prices names the model: 100 input at $1/M + 20 output at $2/M,
        # and the row says the host's table priced it
        assert (table.tokens, table.usd, table.priced) == (120, Decimal("0.00014"), True)
        assert table.priced_by == "table"
        assert store.get_quota("alice").used_usd == Decimal("0.00014")
