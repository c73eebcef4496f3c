"""How a task's run ends on the real Codex CLI (offline, fake model): an approval
request declined (WRK-3), a failed turn (WRK-4), a cancel from another process (WRK-5),
cost rows and the quota (WRK-8, WRK-10)."""

from __future__ import annotations

import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from support.worker import (
    add_task,
    routed,
    run_host,
    settings_for,
    worker_store,
)

from markertools import Quota
from markertools_adapters._procgroups import group_alive
from markertools_adapters.codex.fakemodel import Hang, HttpError, ShellCall, Text
from markertools_adapters.worker import HostEvent, PriceTable, WorkerHost, fleet_status

STORES = ["sqlite", "postgres"]


@pytest.mark.rule("WRK-3")
def test_an_approval_request_is_declined_and_the_task_interrupted_naming_it(
    offline_codex, tmp_path: Path
) -> None:
    router = routed(offline_codex)
    router.on("asker", lambda last, texts: ShellCall("rm -rf /tmp/x", escalate=True))
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-ask", "[agent:asker] clean up")
        run_host(WorkerHost(settings_for(offline_codex, tmp_path, approvals="decline"), store))
        task = store.get_task("t-ask")
        assert task.status == "interrupted"
        assert task.error_text == task.interrupted_reason
        assert task.interrupted_reason.startswith("the agent asked for command approval (")
        assert "declines every approval and input request" in task.interrupted_reason
        assert task.result_text is None


@pytest.mark.rule("WRK-4")
def test_a_failed_turn_fails_the_task_with_its_error(offline_codex, tmp_path: Path) -> None:
    router = routed(offline_codex)
    router.on("broken", lambda last, texts: HttpError(400, '{"error":{"message":"bad request"}}'))
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-bad", "[agent:broken] try")
        run_host(WorkerHost(settings_for(offline_codex, tmp_path), store))
        task = store.get_task("t-bad")
        assert task.status == "failed"
        assert task.error_text == 'the turn failed: {"error":{"message":"bad request"}}'
        assert store.task_costs("t-bad")[0].tokens == 0


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


@pytest.mark.rule("WRK-5")
@pytest.mark.parametrize("kind", STORES)
def test_a_cancel_from_another_process_ends_the_turn_and_its_process_group(
    offline_codex, tmp_path: Path, kind: str
) -> None:
    router = routed(offline_codex)
    router.on("slow", lambda last, texts: Hang())
    seen: dict[str, Any] = {}
    with worker_store(kind, tmp_path) as store:
        add_task(store, "t-slow", "[agent:slow] take your time")
        url = str(tmp_path / "w.db") if kind == "sqlite" else store.dsn
        schema = "" if kind == "sqlite" else store.schema_name

        def sink(event: HostEvent) -> None:
            if event.kind == "turn_started" and offline_codex.fake.hanging.wait(20):
                seen["pgid"] = event.details["pgid"]
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
                seen["group_alive"] = group_alive(seen["pgid"])
                seen["after"] = time.monotonic() - seen["at"]

        host = WorkerHost(settings_for(offline_codex, tmp_path), store, sinks=[sink])
        run_host(host)
        assert seen["cancel"] == "ok"
        assert seen["group_alive"] is False
        print(f"cancel -> process group gone: {seen['after']:.2f} s")
        task = store.get_task("t-slow")
        assert task.status == "interrupted"
        assert task.interrupted_reason == "cancelled by the test"
        assert Path(task.worktree).is_dir()  # the directory is kept


@pytest.mark.rule("WRK-8", "WRK-10")
def test_costs_priced_and_unpriced_and_the_quota_hold_in_status(
    offline_codex, tmp_path: Path
) -> None:
    router = routed(offline_codex)
    router.on("work", lambda last, texts: Text("done"))
    prices = PriceTable.from_json({"fake-model": {"input": 1, "output": 2}})
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-priced", "[agent:work] one", model="fake-model")
        add_task(store, "t-unpriced", "[agent:work] two", model="fake-mini")
        run_host(WorkerHost(settings_for(offline_codex, tmp_path, prices=prices), store))
        priced, unpriced = store.task_costs("t-priced"), store.task_costs("t-unpriced")
        assert len(priced) == 1 and priced[0].priced and priced[0].tokens > 0
        assert priced[0].usd > 0
        assert priced[0].priced_by == "table"  # the host's --prices table priced it
        assert len(unpriced) == 1 and not unpriced[0].priced
        assert unpriced[0].priced_by is None
        assert unpriced[0].usd is None and unpriced[0].tokens > 0  # never $0
        assert store.get_quota("alice").used_usd == priced[0].usd
        # a creator over quota: the status names the held task and why
        store.put_quota(Quota("bob", total_usd=Decimal("0.01"), used_usd=Decimal("0.02")))
        store.set_permissions("bob", "p1", ["read", "create_task"])
        add_task(store, "t-held", "[agent:work] three", created_by="bob")
        status = fleet_status(store, "p1")
        assert status["tasks"] == {"completed": 2, "queued": 1}
        assert status["held_by_quota"] == [
            {
                "task_id": "t-held",
                "created_by": "bob",
                "reason": "held by quota: bob has spent $0.02 of $0.01; no host claims the"
                " task until the quota is raised",
            }
        ]
