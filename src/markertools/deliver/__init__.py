"""markertools.deliver — running a turn's plan against the ports (docs/rules.md TRN and the kind rules).

Dependencies point one way, top to bottom:

1. `loop`          `deliver_turn`: discards, one handler per command, audit, report;
2. `handlers`      one module per kind family, merged by `handlers.registry`;
3. `context`       the per-turn `TurnContext` handlers receive (`Handler`,
   `summarize_error`, id drawing, permission refusals);
4. `gates`, `lineage`, `paths`, `snapshot`: pure decisions and views;
5. `render`, `report`: the report entries and their one message.

May import: `markertools.inject`, `markertools.parse`, `markertools.domain`,
`markertools.text`. Nothing imports delivery but `markertools` itself.
Module paths are internal; the stable names are re-exported by `markertools`.
"""
