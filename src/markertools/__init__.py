"""markertools: extract, validate, gate and deliver the marker blocks of an agent's turn.

A pure core: `parse_turn(text)` turns one completed turn's text into a `TurnPlan`;
`deliver_turn(...)` runs a plan against the ports a worker implements and returns a
`DeliveryReport`. Everything that touches the world lives in `markertools_adapters`.
"""
from __future__ import annotations

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
from markertools._ports import Ports
from markertools._report import DeliveryReport, ReportEntry
from markertools._schema import body_schema, body_schemas

__all__ = [
    "Allowed",
    "Attempt",
    "AuditRecord",
    "Automation",
    "BlockIssue",
    "Command",
    "CostRow",
    "Decision",
    "DeliveryReport",
    "Denied",
    "Environment",
    "Followup",
    "LineageLink",
    "Msg",
    "PermissionAnswer",
    "PermissionGrant",
    "Ports",
    "Project",
    "Quota",
    "ReportEntry",
    "Task",
    "Todo",
    "TurnPlan",
    "body_schema",
    "body_schemas",
    "deliver_turn",
    "frame_data",
    "msg",
    "parse_turn",
    "render_guide",
]
