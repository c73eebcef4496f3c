"""markertools: extract, validate, gate and deliver the marker blocks of an agent's turn.

A pure core: `parse_turn(text)` turns one completed turn's text into a `TurnPlan`;
`deliver_turn(...)` runs a plan against the ports a worker implements and returns a
`DeliveryReport`. Everything that touches the world lives in `markertools_adapters`.

The public names are loaded on first use (PEP 562 `__getattr__`): `import markertools`
imports no submodule, and `parse_turn` loads only the parse layer (never delivery,
never markdown-it-py until a list or indented fence needs it).
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs ~6 ms
if TYPE_CHECKING:  # the names, for type checkers and IDEs; loaded lazily at runtime
    from typing import Any

    from markertools.deliver.loop import deliver_turn
    from markertools.deliver.report import DeliveryReport, ReportEntry
    from markertools.domain.decision import Allowed, Decision, Denied, PermissionAnswer
    from markertools.domain.model import (
        Attempt,
        AuditRecord,
        Automation,
        CostRow,
        Environment,
        Followup,
        LineageLink,
        PermissionGrant,
        Project,
        Quota,
        Task,
        Todo,
    )
    from markertools.domain.ports import (
        AttemptLedger,
        AuditLog,
        AutomationNameTaken,
        AutomationStore,
        ChangeWaiter,
        Clock,
        CostLookup,
        FileListing,
        FileRefused,
        FileText,
        FollowupQueue,
        KillResult,
        PermissionLookup,
        Ports,
        ProjectLookup,
        RandomSource,
        RequeueResult,
        TaskExecutor,
        TaskFiles,
        TaskListing,
        TaskStore,
        TodoListing,
        TodoStore,
    )
    from markertools.inject.framing import frame_data
    from markertools.parse.guide import render_guide
    from markertools.parse.plan import BlockIssue, Command, TurnPlan
    from markertools.parse.schema import body_schema, body_schemas
    from markertools.parse.turn import parse_turn
    from markertools.text.msg import Msg, msg

# public name -> the module that defines it; `__all__` below lists the same names as a
# literal for type checkers (tests/parse/test_parse_imports.py checks the two agree)
_EXPORTS: dict[str, str] = {
    "Allowed": "markertools.domain.decision",
    "Attempt": "markertools.domain.model",
    "AuditRecord": "markertools.domain.model",
    "Automation": "markertools.domain.model",
    "BlockIssue": "markertools.parse.plan",
    "Command": "markertools.parse.plan",
    "CostRow": "markertools.domain.model",
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
    "Todo": "markertools.domain.model",
    "TurnPlan": "markertools.parse.plan",
    "body_schema": "markertools.parse.schema",
    "body_schemas": "markertools.parse.schema",
    "deliver_turn": "markertools.deliver.loop",
    "frame_data": "markertools.inject.framing",
    "msg": "markertools.text.msg",
    "parse_turn": "markertools.parse.turn",
    "render_guide": "markertools.parse.guide",
}

__all__ = [
    "Allowed",
    "Attempt",
    "AttemptLedger",
    "AuditLog",
    "AuditRecord",
    "Automation",
    "AutomationNameTaken",
    "AutomationStore",
    "BlockIssue",
    "ChangeWaiter",
    "Clock",
    "Command",
    "CostLookup",
    "CostRow",
    "Decision",
    "DeliveryReport",
    "Denied",
    "Environment",
    "FileListing",
    "FileRefused",
    "FileText",
    "Followup",
    "FollowupQueue",
    "KillResult",
    "LineageLink",
    "Msg",
    "PermissionAnswer",
    "PermissionGrant",
    "PermissionLookup",
    "Ports",
    "Project",
    "ProjectLookup",
    "Quota",
    "RandomSource",
    "ReportEntry",
    "RequeueResult",
    "Task",
    "TaskExecutor",
    "TaskFiles",
    "TaskListing",
    "TaskStore",
    "Todo",
    "TodoListing",
    "TodoStore",
    "TurnPlan",
    "body_schema",
    "body_schemas",
    "deliver_turn",
    "frame_data",
    "msg",
    "parse_turn",
    "render_guide",
]


if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt name stays an error

    def __getattr__(name: str) -> Any:
        """PEP 562: load a public name on first access and cache it in the module."""
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
