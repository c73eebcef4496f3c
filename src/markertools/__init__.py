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

    from markertools._decision import Allowed, Decision, Denied, PermissionAnswer
    from markertools._deliver import deliver_turn
    from markertools._framing import frame_data
    from markertools._guide import render_guide
    from markertools._model import (
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
    from markertools._msg import Msg, msg
    from markertools._parse import parse_turn
    from markertools._plan import BlockIssue, Command, TurnPlan
    from markertools._ports import (
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
    from markertools._report import DeliveryReport, ReportEntry
    from markertools._schema import body_schema, body_schemas

# public name -> the module that defines it; `__all__` below lists the same names as a
# literal for type checkers (tests/test_parse_imports.py checks the two agree)
_EXPORTS: dict[str, str] = {
    "Allowed": "markertools._decision",
    "Attempt": "markertools._model",
    "AuditRecord": "markertools._model",
    "Automation": "markertools._model",
    "BlockIssue": "markertools._plan",
    "Command": "markertools._plan",
    "CostRow": "markertools._model",
    "Decision": "markertools._decision",
    "DeliveryReport": "markertools._report",
    "Denied": "markertools._decision",
    "Environment": "markertools._model",
    "Followup": "markertools._model",
    "LineageLink": "markertools._model",
    "Msg": "markertools._msg",
    "PermissionAnswer": "markertools._decision",
    "PermissionGrant": "markertools._model",
    "AttemptLedger": "markertools._ports",
    "AuditLog": "markertools._ports",
    "AutomationNameTaken": "markertools._ports",
    "AutomationStore": "markertools._ports",
    "ChangeWaiter": "markertools._ports",
    "Clock": "markertools._ports",
    "CostLookup": "markertools._ports",
    "FileListing": "markertools._ports",
    "FileRefused": "markertools._ports",
    "FileText": "markertools._ports",
    "FollowupQueue": "markertools._ports",
    "KillResult": "markertools._ports",
    "PermissionLookup": "markertools._ports",
    "Ports": "markertools._ports",
    "ProjectLookup": "markertools._ports",
    "RandomSource": "markertools._ports",
    "RequeueResult": "markertools._ports",
    "TaskExecutor": "markertools._ports",
    "TaskFiles": "markertools._ports",
    "TaskListing": "markertools._ports",
    "TaskStore": "markertools._ports",
    "TodoListing": "markertools._ports",
    "TodoStore": "markertools._ports",
    "Project": "markertools._model",
    "Quota": "markertools._model",
    "ReportEntry": "markertools._report",
    "Task": "markertools._model",
    "Todo": "markertools._model",
    "TurnPlan": "markertools._plan",
    "body_schema": "markertools._schema",
    "body_schemas": "markertools._schema",
    "deliver_turn": "markertools._deliver",
    "frame_data": "markertools._framing",
    "msg": "markertools._msg",
    "parse_turn": "markertools._parse",
    "render_guide": "markertools._guide",
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
