"""markertools: extract, validate, gate and deliver the marker blocks of an agent's turn.

A pure core: `parse_turn(text)` turns one completed turn's text into a `TurnPlan`;
`deliver_turn(...)` runs a plan against the ports a worker implements and returns a
`DeliveryReport`. Everything that touches the world lives in `markertools_adapters`.

The public names are loaded on first use (PEP 562 `__getattr__`): `import markertools`
imports no submodule, and `parse_turn` loads only the parse layer (never delivery,
never markdown-it-py until a list or indented fence needs it).

`markertools.__version__` is the installed distribution's version (package metadata,
read on first access).
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs ~6 ms
if TYPE_CHECKING:  # the names, for type checkers and IDEs; loaded lazily at runtime
    from typing import Any

    from markertools.deliver.automations_admin import (
        AutomationChange,
        delete_automation,
        list_automations,
        pause_automation,
        resume_automation,
        update_automation,
    )
    from markertools.deliver.automations_fire import (
        FiredRun,
        automation_task_id,
        fire_due_automations,
    )
    from markertools.deliver.handlers.read import is_priced
    from markertools.deliver.loop import DEFAULT_DELIVERY_DEADLINE, deliver_turn
    from markertools.deliver.once import TurnIdReused, turn_digest
    from markertools.deliver.paths import (
        check_relative_path,
        display_name,
        task_id_component_problem,
    )
    from markertools.deliver.report import (
        BlockOutcome,
        DeliveryReport,
        NotDelivered,
        NotDeliveredCode,
        ReportEntry,
    )
    from markertools.domain.change import TaskChange
    from markertools.domain.decision import Allowed, Decision, Denied, PermissionAnswer
    from markertools.domain.errors import ERROR_SUMMARY_CHARS, summarize_error
    from markertools.domain.model import (
        EFFORTS,
        EXECUTORS,
        PERMISSIONS,
        TASK_STATUSES,
        TODO_PRIORITIES,
        TODO_STATUSES,
        TURN_OUTCOMES,
        UNFINISHED_TODO_STATUSES,
        Attempt,
        AuditRecord,
        Automation,
        AutomationBind,
        CostRow,
        Environment,
        FinishedTurn,
        Followup,
        LineageLink,
        PermissionGrant,
        Project,
        Quota,
        StartKind,
        Task,
        TaskStatus,
        Todo,
        TurnCost,
        TurnOutcome,
        checked_finish,
        finished_status,
        is_goal_task,
        refuse_bad_status,
        start_kind_of,
    )
    from markertools.domain.money import (
        MAX_MICROS,
        MICROS_PER_USD,
        add_micros,
        from_micros,
        money,
        to_micros,
    )
    from markertools.domain.ports import (
        AttemptLedger,
        AuditLog,
        AutomationAdmin,
        AutomationNameTaken,
        AutomationStore,
        ChangeWaiter,
        Claim,
        Clock,
        CostLookup,
        DeliveryJournal,
        FileAnswer,
        FileListing,
        FileRefused,
        FileText,
        FollowupQueue,
        FollowupTaker,
        KillResult,
        PermissionLookup,
        Ports,
        ProjectLookup,
        RandomSource,
        RecordWriter,
        RequeueResult,
        TaskClaimer,
        TaskExecutor,
        TaskFiles,
        TaskListing,
        TaskStore,
        TodoListing,
        TodoStore,
        TurnFinisher,
    )
    from markertools.domain.schedule import apply_claim, is_due, next_run_at, shanghai_iso
    from markertools.domain.timeparse import epoch_from_number, parse_iso
    from markertools.inject.attempts import (
        NO_CHECKPOINT,
        checked_attempt,
        ending_attempt,
        requeued_task,
        timeline_decision,
    )
    from markertools.inject.first_turn import (
        FRESH_STARTS,
        INJECTED_TODOS,
        START_KINDS,
        FirstTurnPrompt,
        InjectionInputs,
        LookupFailed,
        assemble_first_turn,
    )
    from markertools.inject.framing import frame_data
    from markertools.inject.start import claim_of, start_kind
    from markertools.parse.guide import UnknownKindError, render_guide
    from markertools.parse.plan import BlockIssue, Command, TurnPlan
    from markertools.parse.schema import body_schema, body_schemas
    from markertools.parse.turn import parse_turn
    from markertools.text.msg import LOCALES, Locale, Msg, msg

    __version__: str

# public name -> the module that defines it; `__all__` below lists the same names as a
# literal for type checkers (tests/parse/test_parse_imports.py checks the two agree)
_EXPORTS: dict[str, str] = {
    "DEFAULT_DELIVERY_DEADLINE": "markertools.deliver.loop",
    "DeliveryJournal": "markertools.domain.ports",
    "NotDeliveredCode": "markertools.deliver.report",
    "NotDelivered": "markertools.deliver.report",
    "BlockOutcome": "markertools.deliver.report",
    "AutomationBind": "markertools.domain.model",
    "TaskStatus": "markertools.domain.model",
    "StartKind": "markertools.domain.model",
    "start_kind_of": "markertools.domain.model",
    "Claim": "markertools.domain.ports",
    "claim_of": "markertools.inject.start",
    "start_kind": "markertools.inject.start",
    "TurnOutcome": "markertools.domain.model",
    "Locale": "markertools.text.msg",
    "Allowed": "markertools.domain.decision",
    "Attempt": "markertools.domain.model",
    "AuditRecord": "markertools.domain.model",
    "Automation": "markertools.domain.model",
    "BlockIssue": "markertools.parse.plan",
    "Command": "markertools.parse.plan",
    "CostRow": "markertools.domain.model",
    "TurnCost": "markertools.domain.model",
    "FinishedTurn": "markertools.domain.model",
    "finished_status": "markertools.domain.model",
    "checked_finish": "markertools.domain.model",
    "TurnFinisher": "markertools.domain.ports",
    "MICROS_PER_USD": "markertools.domain.money",
    "MAX_MICROS": "markertools.domain.money",
    "money": "markertools.domain.money",
    "to_micros": "markertools.domain.money",
    "from_micros": "markertools.domain.money",
    "add_micros": "markertools.domain.money",
    "Decision": "markertools.domain.decision",
    "DeliveryReport": "markertools.deliver.report",
    "Denied": "markertools.domain.decision",
    "Environment": "markertools.domain.model",
    "Followup": "markertools.domain.model",
    "LineageLink": "markertools.domain.model",
    "Msg": "markertools.text.msg",
    "PermissionAnswer": "markertools.domain.decision",
    "PermissionGrant": "markertools.domain.model",
    "AttemptLedger": "markertools.domain.ports",
    "AuditLog": "markertools.domain.ports",
    "AutomationAdmin": "markertools.domain.ports",
    "AutomationChange": "markertools.deliver.automations_admin",
    "FiredRun": "markertools.deliver.automations_fire",
    "FollowupTaker": "markertools.domain.ports",
    "RecordWriter": "markertools.domain.ports",
    "TaskClaimer": "markertools.domain.ports",
    "automation_task_id": "markertools.deliver.automations_fire",
    "delete_automation": "markertools.deliver.automations_admin",
    "fire_due_automations": "markertools.deliver.automations_fire",
    "list_automations": "markertools.deliver.automations_admin",
    "pause_automation": "markertools.deliver.automations_admin",
    "resume_automation": "markertools.deliver.automations_admin",
    "update_automation": "markertools.deliver.automations_admin",
    "AutomationNameTaken": "markertools.domain.ports",
    "AutomationStore": "markertools.domain.ports",
    "ChangeWaiter": "markertools.domain.ports",
    "Clock": "markertools.domain.ports",
    "CostLookup": "markertools.domain.ports",
    "FileListing": "markertools.domain.ports",
    "FileRefused": "markertools.domain.ports",
    "FileText": "markertools.domain.ports",
    "FollowupQueue": "markertools.domain.ports",
    "KillResult": "markertools.domain.ports",
    "PermissionLookup": "markertools.domain.ports",
    "Ports": "markertools.domain.ports",
    "ProjectLookup": "markertools.domain.ports",
    "RandomSource": "markertools.domain.ports",
    "RequeueResult": "markertools.domain.ports",
    "TaskExecutor": "markertools.domain.ports",
    "TaskFiles": "markertools.domain.ports",
    "TaskListing": "markertools.domain.ports",
    "TaskStore": "markertools.domain.ports",
    "TodoListing": "markertools.domain.ports",
    "TodoStore": "markertools.domain.ports",
    "Project": "markertools.domain.model",
    "Quota": "markertools.domain.model",
    "ReportEntry": "markertools.deliver.report",
    "Task": "markertools.domain.model",
    "TaskChange": "markertools.domain.change",
    "Todo": "markertools.domain.model",
    "TurnPlan": "markertools.parse.plan",
    "body_schema": "markertools.parse.schema",
    "body_schemas": "markertools.parse.schema",
    "deliver_turn": "markertools.deliver.loop",
    "TurnIdReused": "markertools.deliver.once",
    "turn_digest": "markertools.deliver.once",
    "frame_data": "markertools.inject.framing",
    "msg": "markertools.text.msg",
    "parse_turn": "markertools.parse.turn",
    "render_guide": "markertools.parse.guide",
    # for adapters and store implementations (markertools_adapters imports the core only
    # from here and from markertools.plans: the "adapters-public-core" import contract)
    "is_priced": "markertools.deliver.handlers.read",
    "check_relative_path": "markertools.deliver.paths",
    "display_name": "markertools.deliver.paths",
    "task_id_component_problem": "markertools.deliver.paths",
    "ERROR_SUMMARY_CHARS": "markertools.domain.errors",
    "summarize_error": "markertools.domain.errors",
    "EFFORTS": "markertools.domain.model",
    "EXECUTORS": "markertools.domain.model",
    "PERMISSIONS": "markertools.domain.model",
    "TASK_STATUSES": "markertools.domain.model",
    "TODO_PRIORITIES": "markertools.domain.model",
    "TODO_STATUSES": "markertools.domain.model",
    "TURN_OUTCOMES": "markertools.domain.model",
    "UNFINISHED_TODO_STATUSES": "markertools.domain.model",
    "is_goal_task": "markertools.domain.model",
    "refuse_bad_status": "markertools.domain.model",
    "FileAnswer": "markertools.domain.ports",
    "apply_claim": "markertools.domain.schedule",
    "is_due": "markertools.domain.schedule",
    "next_run_at": "markertools.domain.schedule",
    "shanghai_iso": "markertools.domain.schedule",
    "epoch_from_number": "markertools.domain.timeparse",
    "parse_iso": "markertools.domain.timeparse",
    "NO_CHECKPOINT": "markertools.inject.attempts",
    "checked_attempt": "markertools.inject.attempts",
    "ending_attempt": "markertools.inject.attempts",
    "requeued_task": "markertools.inject.attempts",
    "timeline_decision": "markertools.inject.attempts",
    "FRESH_STARTS": "markertools.inject.first_turn",
    "INJECTED_TODOS": "markertools.inject.first_turn",
    "START_KINDS": "markertools.inject.first_turn",
    "FirstTurnPrompt": "markertools.inject.first_turn",
    "InjectionInputs": "markertools.inject.first_turn",
    "LookupFailed": "markertools.inject.first_turn",
    "assemble_first_turn": "markertools.inject.first_turn",
    "UnknownKindError": "markertools.parse.guide",
    "LOCALES": "markertools.text.msg",
}

__all__ = [
    "DEFAULT_DELIVERY_DEADLINE",
    "EFFORTS",
    "ERROR_SUMMARY_CHARS",
    "EXECUTORS",
    "FRESH_STARTS",
    "INJECTED_TODOS",
    "LOCALES",
    "MAX_MICROS",
    "MICROS_PER_USD",
    "NO_CHECKPOINT",
    "PERMISSIONS",
    "START_KINDS",
    "TASK_STATUSES",
    "TODO_PRIORITIES",
    "TODO_STATUSES",
    "TURN_OUTCOMES",
    "UNFINISHED_TODO_STATUSES",
    "Allowed",
    "Attempt",
    "AttemptLedger",
    "AuditLog",
    "AuditRecord",
    "Automation",
    "AutomationAdmin",
    "AutomationBind",
    "AutomationChange",
    "AutomationNameTaken",
    "AutomationStore",
    "BlockIssue",
    "BlockOutcome",
    "ChangeWaiter",
    "Claim",
    "Clock",
    "Command",
    "CostLookup",
    "CostRow",
    "Decision",
    "DeliveryJournal",
    "DeliveryReport",
    "Denied",
    "Environment",
    "FileAnswer",
    "FileListing",
    "FileRefused",
    "FileText",
    "FinishedTurn",
    "FiredRun",
    "FirstTurnPrompt",
    "Followup",
    "FollowupQueue",
    "FollowupTaker",
    "InjectionInputs",
    "KillResult",
    "LineageLink",
    "Locale",
    "LookupFailed",
    "Msg",
    "NotDelivered",
    "NotDeliveredCode",
    "PermissionAnswer",
    "PermissionGrant",
    "PermissionLookup",
    "Ports",
    "Project",
    "ProjectLookup",
    "Quota",
    "RandomSource",
    "RecordWriter",
    "ReportEntry",
    "RequeueResult",
    "StartKind",
    "Task",
    "TaskChange",
    "TaskClaimer",
    "TaskExecutor",
    "TaskFiles",
    "TaskListing",
    "TaskStatus",
    "TaskStore",
    "Todo",
    "TodoListing",
    "TodoStore",
    "TurnCost",
    "TurnFinisher",
    "TurnIdReused",
    "TurnOutcome",
    "TurnPlan",
    "UnknownKindError",
    "add_micros",
    "apply_claim",
    "assemble_first_turn",
    "automation_task_id",
    "body_schema",
    "body_schemas",
    "check_relative_path",
    "checked_attempt",
    "checked_finish",
    "claim_of",
    "delete_automation",
    "deliver_turn",
    "display_name",
    "ending_attempt",
    "epoch_from_number",
    "finished_status",
    "fire_due_automations",
    "frame_data",
    "from_micros",
    "is_due",
    "is_goal_task",
    "is_priced",
    "list_automations",
    "money",
    "msg",
    "next_run_at",
    "parse_iso",
    "parse_turn",
    "pause_automation",
    "refuse_bad_status",
    "render_guide",
    "requeued_task",
    "resume_automation",
    "shanghai_iso",
    "start_kind",
    "start_kind_of",
    "summarize_error",
    "task_id_component_problem",
    "timeline_decision",
    "to_micros",
    "turn_digest",
    "update_automation",
]


if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt name stays an error

    def __getattr__(name: str) -> Any:
        """PEP 562: load a public name on first access and cache it in the module."""
        if name == "__version__":
            value = _installed_version()
            globals()[name] = value
            return value
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        globals()[name] = value
        return value

    def _installed_version() -> str:
        """The version in the installed distribution's metadata ("0+unknown" when the
        sources run without being installed)."""
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("markertools")
        except PackageNotFoundError:
            return "0+unknown"

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
