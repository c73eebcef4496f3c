# Owns: the public names of the worker host (WRK-1..10, docs/worker.md): a runnable host
# that claims a project's tasks and runs each on a real `codex app-server` or Claude Code
# CLI (ENG-1: `WorkerSettings.engine`), built only from the library's public API and the
# Codex / Claude Code / dots adapters, so a worker codebase can embed the same pieces.
"""The worker host: `WorkerHost(WorkerSettings(project=...), store).run()`."""

from __future__ import annotations

from markertools_adapters.worker.dirs import prepare_task_dir, task_dir
from markertools_adapters.worker.events import (
    EVENT_KINDS,
    HostEvent,
    JsonLines,
    RunningView,
    Tally,
)
from markertools_adapters.worker.host import WorkerHost
from markertools_adapters.worker.run import TaskRun
from markertools_adapters.worker.settings import PriceTable, TokenUsage, WorkerSettings
from markertools_adapters.worker.status import fleet_snapshot, fleet_status, status_lines

__all__ = [
    "EVENT_KINDS",
    "HostEvent",
    "JsonLines",
    "PriceTable",
    "RunningView",
    "Tally",
    "TaskRun",
    "TokenUsage",
    "WorkerHost",
    "WorkerSettings",
    "fleet_snapshot",
    "fleet_status",
    "prepare_task_dir",
    "status_lines",
    "task_dir",
]
