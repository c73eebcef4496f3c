"""The shared storage contract suite: every test in tests/contract/ runs once per storage
adapter. A factory takes a `World` and returns a fresh store holding it; the store
implements every storage port of `markertools.domain.ports` plus `WorldStore`.

Adding an adapter = adding one entry to STORE_FACTORIES (and, for servers, a skip when
unavailable).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from markertools_adapters.world import World

StoreFactory = Callable[[World, Path], Any]


def _memory(world: World, tmp: Path) -> Any:
    from markertools_adapters.memory import MemoryStore

    store = MemoryStore()
    store.load_world(world)
    return store


def _sqlite(world: World, tmp: Path) -> Any:
    from markertools_adapters.sqlite import create_store_from_world

    return create_store_from_world(world, tmp.with_suffix(".db"))


def _postgres(world: World, tmp: Path) -> Any:
    # Skips (with the reason) when MARKERTOOLS_PG_DSN is unset; a fresh schema per store.
    from support.postgres import throwaway_store

    return throwaway_store(world)


def _kit(world: World, tmp: Path) -> Any:
    # a toy store on the adapter kit (markertools_adapters.kit): three primitives
    import contextlib
    import threading

    from markertools_adapters.kit import StoreKit

    class ToyStore(StoreKit):
        def __init__(self) -> None:
            super().__init__()
            self.saved: Any = None
            self.lock = threading.Lock()

        def kit_lock(self) -> contextlib.AbstractContextManager[None]:
            @contextlib.contextmanager
            def held() -> Any:
                with self.lock:
                    yield

            return held()

        def kit_load(self) -> Any:
            return self.saved

        def kit_save(self, state: Any) -> None:
            self.saved = state

    store = ToyStore()
    store.load_world(world)
    return store


STORE_FACTORIES: dict[str, StoreFactory] = {
    "kit": _kit,
    "memory": _memory,
    "sqlite": _sqlite,
    "postgres": _postgres,
}


@pytest.fixture(params=sorted(STORE_FACTORIES))
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[World], Any]]:
    factory = STORE_FACTORIES[request.param]
    created: list[Any] = []

    def make(world: World) -> Any:
        store = factory(world, tmp_path / f"store{len(created)}")
        created.append(store)
        return store

    yield make
    for store in created:
        close = getattr(store, "close", None)
        if callable(close):
            close()
