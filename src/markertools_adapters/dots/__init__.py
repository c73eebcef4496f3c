"""markertools_adapters.dots — the orchestration supervisor (seed 004 "local-codex-dots").

`Supervisor` runs confirmed plans (`markertools.plans`) on real `codex app-server`
workers: one per state directory, holding `host.lock`, every input an event of the
run's `RunJournal` (docs/rules.md DOT-1..12, 16, 17). `dots run` (the terminal) and
`dots serve` (an MCP server, `markertools_adapters.dots.mcp`) drive the same Python API
on one asyncio event loop. The ports (`Confirmer`, `Notifier`, `SubagentProvider`) are
how it asks people and reaches the main conversation.
"""

from __future__ import annotations

from markertools_adapters.dots._paths import default_state_dir
from markertools_adapters.dots._ports import (
    ConfirmAnswer,
    Confirmer,
    ConfirmRequest,
    DeclineAll,
    DotsError,
    NoAnswerNotifier,
    NotConfirmed,
    NoticeOut,
    Notifier,
    NotifyAnswer,
    ProposalInvalid,
    RunNotFound,
    SubagentProvider,
)
from markertools_adapters.dots._supervisor import WORKER_ENV, Supervisor, quota_windows

__all__ = [
    "WORKER_ENV",
    "ConfirmAnswer",
    "ConfirmRequest",
    "Confirmer",
    "DeclineAll",
    "DotsError",
    "NoAnswerNotifier",
    "NotConfirmed",
    "NoticeOut",
    "Notifier",
    "NotifyAnswer",
    "ProposalInvalid",
    "RunNotFound",
    "SubagentProvider",
    "Supervisor",
    "default_state_dir",
    "quota_windows",
]
