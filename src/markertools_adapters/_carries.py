# Owns: `CarriesPorts`, the mixin through which every bundled store (memory, SQLite,
# PostgreSQL, the kit) carries the `Ports` `markertools_adapters.connect` built for it, and
# `attach_ports`, the one way they are set. A leaf module: the stores import it, and it
# imports nothing of markertools_adapters (wiring names the stores, so the stores cannot
# import wiring back).
#
# Must never: build ports itself (wiring.store_ports does), or hand out ports a store was
# never given (an AttributeError says how to get them).
from __future__ import annotations

from markertools import Ports


class CarriesPorts:
    """Mixin of every bundled store: the `Ports` it was connected with (`connect` sets
    them through `attach_ports`). A store made any other way has none: `store.ports` is
    an AttributeError saying how to get them."""

    _ports: Ports | None = None

    @property
    def ports(self) -> Ports:
        if self._ports is None:
            raise AttributeError(
                "this store carries no ports: open it with markertools_adapters.connect(...), "
                "or build them with markertools_adapters.wiring.store_ports(store, ...)"
            )
        return self._ports


def attach_ports(store: CarriesPorts, ports: Ports) -> None:
    """Give a bundled store the `Ports` it carries from now on (`connect` does this)."""
    store._ports = ports
