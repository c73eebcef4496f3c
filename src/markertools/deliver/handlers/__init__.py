"""markertools.deliver.handlers — one module per kind family (tasks, read, todos,
automations, files, goal), each exporting `HANDLERS`; `registry` merges them.

May import: `markertools.deliver.context` and the layers below it. A handler never
imports another handler, the registry or the delivery loop.
"""
