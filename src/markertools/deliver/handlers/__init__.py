"""markertools.deliver.handlers — one module per kind family (tasks, read, todos,
automations, files, goal, approvals), each exporting `HANDLERS`: one `Handler(ParamsClass,
function)` per kind, keyed by the params class the kind table names for it;
`registry` merges them and finds the handler of a command by its params' class.

May import: `markertools.deliver.context` and the layers below it. A handler never
imports another handler, the registry or the delivery loop.
"""
