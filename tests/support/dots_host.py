"""A supervisor in a process of its own, for the kill-and-restart tests:

    python dots_host.py STATE_DIR CODEX_BIN PLAN.json

starts the plan (confirming both steps), prints `RUN <id>` and keeps running until it
is killed. The codex children get this process's environment (CODEX_HOME etc.)."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from markertools.plans import HostSettings
from markertools_adapters.dots import Supervisor
from support.dots import JsonSupervisor


class Yes:
    async def confirm(self, request: Any) -> Any:
        return "accept"


async def main(state_dir: str, codex_bin: str, plan_path: str) -> None:
    sup = JsonSupervisor(Supervisor(
        state_dir,
        codex_bin=codex_bin,
        confirmer=Yes(),
        settings=HostSettings(max_concurrent=3, poll_ms=60_000),
        tick_seconds=0.05,
    ))
    await sup.open()
    with open(plan_path, encoding="utf-8") as fh:
        view = await sup.start(json.load(fh), owner="conversation-1")
    print("RUN", view["runId"], flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
