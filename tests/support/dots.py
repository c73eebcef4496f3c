"""Test support for the supervisor: plans in a temporary cwd, a scripted confirmer, a
recording notifier, and `running(...)`, which opens a Supervisor on the real pinned
Codex (offline, the fake Responses server) and closes it afterwards."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from markertools.plans import HostSettings
from markertools_adapters.dots import ConfirmRequest, NoticeOut, Supervisor
from support.codex import OfflineCodex
from support.paths import TESTS

OWNER = "conversation-1"


def role(name: str, cwd: Path, **kw: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "backend": "codex",
        "cwd": str(cwd),
        "role": f"the {name}",
        "instruction": f"{name}: do your part",
        "sandbox": "read-only",
    }
    body.update(kw)
    return body


def plan(*workers: dict[str, Any], **kw: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "goal": "fix the module",
        "plan": "reader finds the fault, fixer fixes it",
        "workers": list(workers),
        "quota": {"stopAtLeftPercent": None},
        "maxTurns": 12,
        "timeoutMs": 600_000,
        "allowedModels": [],
        "supervision": {"decisionTimeoutMs": 60_000, "maxDecisionRetries": 2, "maxTotalReminders": 8},
    }
    body.update(kw)
    return body


def workdir(tmp: Path, name: str) -> Path:
    path = tmp / name
    path.mkdir(parents=True, exist_ok=True)
    return path


class Confirm:
    """Answers confirmations from a script ("accept" by default) and records them."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[ConfirmRequest] = []

    async def confirm(self, request: ConfirmRequest) -> Any:
        self.asked.append(request)
        return self.answers.pop(0) if self.answers else "accept"


class Notices:
    """A notifier that delivers every notice and keeps it."""

    def __init__(self) -> None:
        self.seen: list[NoticeOut] = []

    async def notify(self, notice: NoticeOut) -> Any:
        self.seen.append(notice)
        return "delivered"


def as_json(value: Any) -> Any:
    """A supervisor call's typed answer as the JSON the MCP and CLI edges print (a view,
    or a list of views)."""
    if isinstance(value, list):
        return [as_json(v) for v in value]
    return value.to_json() if hasattr(value, "to_json") else value


class JsonSupervisor:
    """The supervisor as the tools see it: every call answers the JSON of its typed view
    (`RunView.to_json()` ...), everything else is the supervisor itself. The tests check
    the documented JSON shapes through it."""

    CALLS = frozenset(
        {"status", "pending_decisions", "dispatch", "finish", "probe"}
    )
    ASYNC_CALLS = frozenset({"start", "control", "tune", "wait", "threads", "thread_read"})

    def __init__(self, sup: Supervisor) -> None:
        self.sup = sup

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.sup, name)
        if name in self.CALLS:
            return lambda *a, **kw: _json_or_awaitable(target(*a, **kw))
        if name in self.ASYNC_CALLS:

            async def call(*a: Any, **kw: Any) -> Any:
                return as_json(await target(*a, **kw))

            return call
        return target


def _json_or_awaitable(value: Any) -> Any:
    if asyncio.iscoroutine(value):

        async def later() -> Any:
            return as_json(await value)

        return later()
    return as_json(value)


@asynccontextmanager
async def running(
    codex: OfflineCodex,
    state_dir: Path,
    *,
    confirmer: Any = None,
    notifier: Any = None,
    **kw: Any,
) -> AsyncIterator[Supervisor]:
    kw.setdefault("settings", HostSettings(max_concurrent=3, poll_ms=1000))
    sup = Supervisor(
        state_dir,
        codex_bin=codex.binary,
        codex_env=codex.env,
        confirmer=confirmer or Confirm(),
        notifier=notifier or Notices(),
        tick_seconds=0.05,
        request_timeout=30.0,
        **kw,
    )
    await sup.open()
    try:
        yield JsonSupervisor(sup)  # type: ignore[misc]
    finally:
        await sup.close()


async def until(pred: Callable[[], bool | Awaitable[bool]], timeout: float = 30.0) -> None:
    """Wait until `pred()` holds (polling); fail with the timeout otherwise."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = pred()
        if not isinstance(value, bool):
            value = await value
        if value:
            return
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.05)


def worker(view: dict[str, Any], name: str) -> dict[str, Any]:
    return next(w for w in view["workers"] if w["name"] == name)


def raw_notifications(state_dir: Path, run_id: str) -> list[dict[str, Any]]:
    lines = (state_dir / f"run-{run_id}.jsonl").read_text().splitlines()
    out = []
    for line in lines:
        obj = json.loads(line)
        if "notification" in obj:
            out.append(json.loads(obj["notification"]))
    return out


FAKE = TESTS / "support" / "fake_appserver.py"


def fake_bin(tmp: Path, mode: str) -> str:
    """An executable that runs the fake app-server in `mode` (passes `--version`)."""
    path = tmp / f"codex-{mode}"
    path.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then echo "codex-cli 0.169.0"; exit 0; fi\n'
        f'exec "{sys.executable}" "{FAKE}" {mode} "$@"\n'
    )
    path.chmod(0o755)
    return str(path)
