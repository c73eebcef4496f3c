# Owns: the views (docs/views.md, VEW-1..3): pictures of a fleet and of a run as one
# self-contained HTML file each. A pure page model per view (`fleet_model` over a
# World, `run_model` over a run's state and logged events: nodes, lanes, bars, marks,
# coordinates), then `render_fleet` / `render_run` (Jinja2 with autoescape, the `views`
# extra). `markertools view` and `markertools dots view` are the commands.
#
# Must never: do I/O in the models (the commands read the store and the state
# directory, then write the file); put any text from a task, an agent or a worker into
# the page unescaped (VEW-3); make the page load anything (no URL at all, VEW-1).
"""Pictures of a fleet and of a run, as self-contained HTML pages (VEW-1..3).

- `fleet_model(world, project=None, extras=None)` -> `FleetModel`: the lineage tree in
  display order with each task's turns of marker actions, attempts, cost and quota,
  and the summary. `render_fleet(model)` -> the HTML text.
- `run_model(state, events, now=None)` -> `RunModel`: lanes, turn bars, marks and the
  time axis of a run. `render_run(model)` -> the HTML text.
- `json_island(data)`: the escaped JSON the pages carry.

Rendering needs the `views` extra (`pip install 'markertools[views]'`: Jinja2); the
models need nothing beyond the core.
"""

from __future__ import annotations

from markertools_adapters.views._fleet import (
    Action,
    AttemptRow,
    CreatorSpend,
    FleetModel,
    FleetSummary,
    Spend,
    TaskNode,
    TurnActions,
    fleet_model,
)
from markertools_adapters.views._render import json_island, render_fleet, render_run
from markertools_adapters.views._run import Lane, Mark, RunModel, Tick, TurnBar, run_model

__all__ = [
    "Action",
    "AttemptRow",
    "CreatorSpend",
    "FleetModel",
    "FleetSummary",
    "Lane",
    "Mark",
    "RunModel",
    "Spend",
    "TaskNode",
    "Tick",
    "TurnActions",
    "TurnBar",
    "fleet_model",
    "json_island",
    "render_fleet",
    "render_run",
    "run_model",
]
