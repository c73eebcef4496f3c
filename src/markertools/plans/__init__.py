"""Orchestration proposals (docs/rules.md PLN, seed 004): a pure core, no I/O.

- Validation: `validate_proposal(value)` / `validate_proposal_text(text)` return a
  `ProposalCheck` holding a frozen `Proposal` or every `PlanIssue` (path + message);
  `validate_host_settings(value)` does the same for `HostSettings` (PLN-10).
- Scheduling: `schedule(proposal, finished, running, max_concurrent)` (PLN-5),
  `topological_order`, `find_cycles` (PLN-3).
- Control characters: `is_control_character`, `has_control_characters`,
  `first_control_character` - the one definition (C0, DEL, C1, U+2028/2029, bidi
  controls) PLN validation, dots_tune and the MCP arguments refuse in names, ids,
  models, paths and buckets, and confirmations escape in free text.
- Admission: `admit(runs, max_concurrent)` - which roles a host launches now (DOT-6).
- Runs: `new_run(...)` then `apply(state, event, now) -> Step` for every event
  (PLN-6..9); the transition tables `RUN_MACHINE` / `ROLE_MACHINE`; read-only
  questions (`launchable`, `launch_payload`, `due_notices`, ...); `tune_refusal` /
  `budget_refusal` say why a tune or a budget would be refused, so a host refuses it
  before asking anyone. Ids and times always arrive as arguments.
- JSON: `run_to_json` / `run_from_json`, `event_to_json` / `event_from_json`,
  `proposal_to_json` (camelCase, round-trips exactly).
The store (atomic run record, JSONL event log, host lock) is
`markertools_adapters.planstore`.

May import: `markertools.text` and `markertools.domain` only (never parse, inject or
deliver; `pyproject.toml` holds the contract).
"""

from __future__ import annotations

from markertools.plans._admission import Admitted, RunAdmission, admit
from markertools.plans._codec import (
    event_from_json,
    event_to_json,
    proposal_to_json,
    run_from_json,
    run_to_json,
)
from markertools.plans._control import budget_refusal, tune_refusal
from markertools.plans._events import (
    Applied,
    Budget,
    Cancel,
    DecisionTimeout,
    Dispatch,
    Dropped,
    Duplicate,
    Event,
    Finish,
    Halt,
    HostOnline,
    HostRestarted,
    Launch,
    NotifyResult,
    Outcome,
    Pause,
    QuotaObserved,
    Refused,
    Resume,
    StartRun,
    ThreadSeen,
    Tune,
    TurnEnded,
    TurnStarted,
)
from markertools.plans._fields import (
    first_control_character,
    has_control_characters,
    is_control_character,
)
from markertools.plans._graph import (
    ReadyRole,
    Schedule,
    ScheduleError,
    find_cycles,
    schedule,
    topological_order,
)
from markertools.plans._json import NotJson, loads_strict
from markertools.plans._machines import (
    LIVE_ROLE_STATES,
    ROLE_MACHINE,
    ROLE_STATES,
    RUN_MACHINE,
    RUN_STATES,
    Illegal,
    Machine,
    Moved,
    transition,
)
from markertools.plans._model import (
    RANGES,
    HostCheck,
    HostSettings,
    PlanIssue,
    Proposal,
    ProposalCheck,
    QuotaPolicy,
    Role,
    Supervision,
)
from markertools.plans._notify import RETRY_DELAYS, due_notices
from markertools.plans._proposal import (
    is_full_access,
    normalize_cwd,
    validate_host_settings,
    validate_proposal,
    validate_proposal_text,
)
from markertools.plans._queries import (
    LaunchPayload,
    decision_ids_needed,
    due_decision_timeouts,
    launch_payload,
    launchable,
    overdue_turns,
)
from markertools.plans._quota import (
    QuotaOk,
    QuotaStop,
    QuotaUnobserved,
    QuotaWindow,
    quota_verdict,
)
from markertools.plans._state import Alert, Confirmation, Notice, RoleRun, RunState, new_run
from markertools.plans._supervision import Step, apply

__all__ = [
    "LIVE_ROLE_STATES",
    "RANGES",
    "RETRY_DELAYS",
    "ROLE_MACHINE",
    "ROLE_STATES",
    "RUN_MACHINE",
    "RUN_STATES",
    "Admitted",
    "Alert",
    "Applied",
    "Budget",
    "Cancel",
    "Confirmation",
    "DecisionTimeout",
    "Dispatch",
    "Dropped",
    "Duplicate",
    "Event",
    "Finish",
    "Halt",
    "HostCheck",
    "HostOnline",
    "HostRestarted",
    "HostSettings",
    "Illegal",
    "Launch",
    "LaunchPayload",
    "Machine",
    "Moved",
    "NotJson",
    "Notice",
    "NotifyResult",
    "Outcome",
    "Pause",
    "PlanIssue",
    "Proposal",
    "ProposalCheck",
    "QuotaObserved",
    "QuotaOk",
    "QuotaPolicy",
    "QuotaStop",
    "QuotaUnobserved",
    "QuotaWindow",
    "ReadyRole",
    "Refused",
    "Resume",
    "Role",
    "RoleRun",
    "RunAdmission",
    "RunState",
    "Schedule",
    "ScheduleError",
    "StartRun",
    "Step",
    "Supervision",
    "ThreadSeen",
    "Tune",
    "TurnEnded",
    "TurnStarted",
    "admit",
    "apply",
    "budget_refusal",
    "decision_ids_needed",
    "due_decision_timeouts",
    "due_notices",
    "event_from_json",
    "event_to_json",
    "find_cycles",
    "first_control_character",
    "has_control_characters",
    "is_control_character",
    "is_full_access",
    "launch_payload",
    "launchable",
    "loads_strict",
    "new_run",
    "normalize_cwd",
    "overdue_turns",
    "proposal_to_json",
    "quota_verdict",
    "run_from_json",
    "run_to_json",
    "schedule",
    "topological_order",
    "transition",
    "tune_refusal",
    "validate_host_settings",
    "validate_proposal",
    "validate_proposal_text",
]
