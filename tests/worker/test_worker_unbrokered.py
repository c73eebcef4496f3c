"""WRK-3 / APR-1: a request no broker can carry out (Codex's extra-permission grants, a
question for the user) is declined at once and the turn interrupted, and the task's
reason says which of the two causes it was: `--approvals decline`, or a kind of request
nobody can grant through the host. (The decline path on real Codex: test_worker_ends.py
and test_worker_approvals.py.)"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from markertools_adapters.worker import WorkerSettings
from markertools_adapters.worker._approvals import RunApprovals
from markertools_adapters.worker.engine import EngineRequest


class _Host:
    """What RunApprovals reads of its host on the decline path."""

    def __init__(self, approvals: str) -> None:
        self.settings = WorkerSettings(project="p1", approvals=approvals, worktrees=Path("/nowhere"))
        self.broker = object()  # a broker exists: only the request decides


def _declined(approvals: str, request: EngineRequest) -> tuple[Any, str, str]:
    run = RunApprovals.__new__(RunApprovals)
    run.host = _Host(approvals)  # type: ignore[assignment]
    run._signals = asyncio.Queue()
    verdict = asyncio.run(run.approve(request))
    kind, reason = run._signals.get_nowait()
    assert kind == "request"
    return verdict, reason.render("en"), reason.render("zh")


GRANT = EngineRequest("permission", "extra permissions", "network: enabled", brokered=False)
COMMAND = EngineRequest("command", "command approval", "touch /x", command="touch /x")


@pytest.mark.rule("WRK-3", "APR-1")
def test_a_grant_no_broker_can_make_is_declined_saying_so() -> None:
    verdict, en, zh = _declined("broker", GRANT)
    assert not verdict.approved and verdict.interrupt
    assert en == (
        "the agent asked for extra permissions (network: enabled); no rule, person or agent "
        "can grant that kind of request through the worker host, so it was declined and the "
        "turn was interrupted"
    )
    assert zh.startswith("智能体请求了extra permissions（network: enabled）；规则、人员或智能体都无法")


@pytest.mark.rule("WRK-3")
def test_approvals_decline_says_the_host_declines_every_request() -> None:
    verdict, en, _ = _declined("decline", COMMAND)
    assert not verdict.approved and verdict.interrupt
    assert en == (
        "the agent asked for command approval (touch /x); the worker host declines every "
        "approval and input request, so the turn was interrupted"
    )
