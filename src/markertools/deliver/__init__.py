"""markertools.deliver — running a turn's plan against the ports (docs/rules.md TRN and the kind rules).

Dependencies point one way, top to bottom:

0. `call`          `deliver_call`: one same-turn tool call as a one-block turn (TOL-2),
   on the loop's own path; `call_wait`: what such a call would wait for, read before
   it is delivered (TOL-11); `tokens`: task tokens binding a tool server (TOL-3);
1. `loop`          `deliver_turn`: discards, one handler per command, audit, report;
2. `handlers`      one module per kind family, each handler keyed by the params class
   of its kind's row; merged by `handlers.registry`;
3. `context`       the per-turn `TurnContext` handlers receive (immutable `TurnFacts`,
   caches changed through methods), `Handler` / `handler_table`, id drawing,
   permission refusals;
4. `once`          exactly once (TRN-9): `TurnJournal`, all of the journal bookkeeping;
5. `gates`, `lineage`, `paths`, `snapshot`, `codec`: pure decisions, views and the
   journal's JSON;
6. `render`, `report`, `failures`: the report entries and their one message; error
   summaries and the "markertools" logger.

What delivery needs of a kind beyond its handler (rerun or journal on a resumed
delivery, whether it creates a task) is a column of its row in `parse/kinds.py`.

May import: `markertools.inject`, `markertools.parse`, `markertools.domain`,
`markertools.text`. Nothing imports delivery but `markertools` itself.
Module paths are internal; the stable names are re-exported by `markertools`.
"""
