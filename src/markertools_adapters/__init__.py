"""Adapters: everything in markertools that touches the world (storage, processes, files, CLI).

Owns: the package's front door, loaded on first use (PEP 562) so that importing any
adapter module stays as cheap as before: `connect(url, executor=...)` (the one way in
for a worker: a store that carries its ports, docs/worker-loop.md), the `Store` type it
returns, and the error tree's root and store family (docs/errors.md).
Must never: import a store, a driver or the CLI at import time.

    import markertools_adapters

    with markertools_adapters.connect("sqlite:///worker.db", executor="local") as store:
        claim = store.claim_task("shop", "worker-1", now=time.time(), lease_seconds=60)
        ...  # deliver_turn(..., ports=store.ports, claim=claim), store.finish_turn(..., claim=claim)

The core (`markertools`) may not import the adapters, so the opener lives here rather
than as `markertools.open`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markertools_adapters.errors import (
        BadDatabaseUrl,
        MarkertoolsError,
        StoreError,
        StoreUnavailable,
        UnknownTask,
    )
    from markertools_adapters.opener import connect
    from markertools_adapters.wiring import Store

_EXPORTS: dict[str, str] = {
    "connect": "markertools_adapters.opener",
    "Store": "markertools_adapters.wiring",
    "BadDatabaseUrl": "markertools_adapters.errors",
    "MarkertoolsError": "markertools_adapters.errors",
    "StoreError": "markertools_adapters.errors",
    "StoreUnavailable": "markertools_adapters.errors",
    "UnknownTask": "markertools_adapters.errors",
}

__all__ = [
    "BadDatabaseUrl",
    "MarkertoolsError",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "UnknownTask",
    "connect",
]


def __getattr__(name: str) -> Any:
    """PEP 562: load a public name on first access and cache it in the package."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
