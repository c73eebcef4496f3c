# Owns: the validated values of an orchestration proposal (docs/rules.md PLN, PLN-1/2/4/10) as
# frozen attrs records, and the issue record validation reports. Never validates
# (see `_proposal.py`); never does I/O.
#
# Invariants:
#   Rule 1: a `Proposal` / `HostSettings` only exists after validation accepted it:
#           every range, enum and graph rule of PLN-1..4 and PLN-10 holds.
#   Rule 2: python field names are snake_case; their JSON spelling is the camelCase
#           the seed uses (`_codec.py` maps one onto the other).
from __future__ import annotations

from typing import Final, Literal

import attrs

from markertools.text.msg import Msg

Backend = Literal["codex", "dsh"]
BACKENDS: Final[tuple[Backend, ...]] = ("codex", "dsh")
Sandbox = Literal["read-only", "workspace-write"]
SANDBOXES: Final[tuple[Sandbox, ...]] = ("read-only", "workspace-write")
# The reasoning efforts a role may name: Codex's `ReasoningEffort` enum plus `max`
# (the marker tools' top effort). Checked again against `model/list` before each turn.
EFFORTS: Final[tuple[str, ...]] = ("none", "minimal", "low", "medium", "high", "xhigh", "max")

# Ranges (inclusive). One table; validation, docs and tests read it.
RANGES: Final[dict[str, tuple[int, int | None]]] = {
    "workers": (1, 12),
    "maxTurns": (1, 200),
    "timeoutMs": (1, 7_200_000),
    "decisionTimeoutMs": (1000, 600_000),
    "maxDecisionRetries": (0, 5),
    "maxTotalReminders": (0, 30),
    "stopAtLeftPercent": (0, 100),
    "windowMinutes": (1, None),
    "maxConcurrent": (1, 3),
    "pollMs": (1000, None),
    "maxRuns": (1, 64),
    "idleMs": (0, 3_600_000),
}
DEFAULT_MAX_CONCURRENT: Final[int] = 3
DEFAULT_POLL_MS: Final[int] = 30_000
DEFAULT_MAX_RUNS: Final[int] = 8  # unfinished runs on one host (issue 26: a bounded footprint)
DEFAULT_IDLE_MS: Final[int] = 60_000  # an idle role's app-server ends after this long


@attrs.frozen
class Role:
    """One worker role (PLN-2)."""

    name: str
    backend: Backend
    cwd: str
    role: str
    instruction: str
    sandbox: Sandbox
    model: str | None = None
    effort: str | None = None
    depends_on: tuple[str, ...] = ()
    existing_thread_id: str | None = None


@attrs.frozen
class QuotaPolicy:
    """PLN-4 / PLN-8: `stop_at_left_percent` None = no percent threshold."""

    stop_at_left_percent: float | None = None
    bucket: str | None = None
    window_minutes: int | None = None


@attrs.frozen
class Supervision:
    """PLN-4: how long to wait for a decision and how often to remind."""

    decision_timeout_ms: int
    max_decision_retries: int
    max_total_reminders: int


@attrs.frozen
class Proposal:
    """A validated orchestration proposal (PLN-1)."""

    goal: str
    plan: str
    workers: tuple[Role, ...]
    quota: QuotaPolicy
    max_turns: int
    timeout_ms: int
    supervision: Supervision
    allowed_models: tuple[str, ...] = ()

    def role(self, name: str) -> Role | None:
        for r in self.workers:
            if r.name == name:
                return r
        return None

    @property
    def role_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.workers)


@attrs.frozen
class HostSettings:
    """PLN-10 host settings plus the seed's other host rows (all optional)."""

    max_concurrent: int = DEFAULT_MAX_CONCURRENT
    poll_ms: int = DEFAULT_POLL_MS
    max_runs: int = DEFAULT_MAX_RUNS
    idle_ms: int = DEFAULT_IDLE_MS
    state_dir: str | None = None  # None: the adapter's default (`~/.dsh/codex-dots/v2`)
    codex_bin: str | None = None  # None: discovered
    subagent_provider: str = "spawn"


@attrs.frozen
class PlanIssue:
    """One validation error: a JSONPath-like location and a catalogue message."""

    path: str
    message: Msg

    def render(self, locale: str = "en") -> str:
        return f"{self.path}: {self.message.render(locale)}"

    def to_json(self, locale: str = "en") -> dict[str, str]:
        return {"path": self.path, "message": self.message.render(locale)}


@attrs.frozen
class ProposalCheck:
    """Result of validating a proposal: the value, or every issue found."""

    proposal: Proposal | None
    issues: tuple[PlanIssue, ...] = ()

    @property
    def valid(self) -> bool:
        return self.proposal is not None and not self.issues


@attrs.frozen
class HostCheck:
    """Result of validating host settings."""

    settings: HostSettings | None
    issues: tuple[PlanIssue, ...] = ()

    @property
    def valid(self) -> bool:
        return self.settings is not None and not self.issues
