# Owns: `StoreKit`, the adapter kit for a codebase that brings its own storage: implement
# THREE primitives - `kit_lock()` (an exclusive, cross-process lock), `kit_load()` (the
# stored state, None when empty) and `kit_save(state)` - and the kit is a
# complete `WorkerStore`: every storage port, the worker-loop ports (claim_task, claim_next_task,
# take_followups), automation management, the record writers and WorldStore, with
# exactly the reference semantics of the in-memory store (it runs the memory store's
# code on the loaded state; the shared contract suite runs against a toy kit store),
# and its `atomic()` makes it a DeliveryJournal too.
#
# Must never: run a port method outside `kit_lock()`; save a state a method failed on.
#
# Invariants:
#   Rule 1: every public method is one transaction: under kit_lock() the state is loaded,
#           the reference method runs on it, and the new state is saved only when it
#           changed and the method returned normally. A method that raises saves nothing
#           (all or nothing, so compare-and-set, ATT-2 and AUT-3 hold across processes as
#           long as kit_lock() excludes them).
#   Rule 2: a method called from inside another one (same thread) joins its transaction.
#   Rule 3: the state is a `MemoryState` (every table, the delivery journal included):
#           whatever the kit saves, `kit_load` must return equal.
#
# Cost: each call loads and may save the whole state - fine for small deployments and
# tests; a large one implements the ports itself (see docs/worker-loop.md).
from __future__ import annotations

import contextlib
import copy
import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import attrs

from markertools import Claim, InvalidType
from markertools_adapters.memory import MemoryState, MemoryStore

F = TypeVar("F", bound=Callable[..., Any])

KIT_PRIMITIVES: tuple[str, ...] = ("kit_lock", "kit_load", "kit_save")
_NOT_WRAPPED = frozenset({"from_world", "atomic", "fenced", "close"})


def copy_state(state: MemoryState) -> MemoryState:
    """A copy of `state` whose tables can change without touching `state` (the records
    are frozen values; only the containers are copied)."""
    return MemoryState(
        **{
            f.name: copy.copy(getattr(state, f.name))
            for f in attrs.fields(MemoryState)
            if f.name != "lock"
        }
    )


def _in_transaction(method: F) -> F:
    @functools.wraps(method)
    def wrapper(self: StoreKit, *args: Any, **kwargs: Any) -> Any:
        with self._kit_session():
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class StoreKit(MemoryStore):
    """Subclass and implement `kit_lock`, `kit_load` and `kit_save` (Rule 1)."""

    def __init__(self) -> None:
        super().__init__()
        self._kit_guard = threading.RLock()
        self._kit_local = threading.local()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        missing = [name for name in KIT_PRIMITIVES if getattr(cls, name) is getattr(StoreKit, name)]
        if missing:
            raise InvalidType(f"{cls.__name__} must implement {', '.join(missing)}")

    # ---- the three primitives ------------------------------------------------------------

    def kit_lock(self) -> AbstractContextManager[None]:
        """An exclusive lock over the stored state (a file lock, a row lock, a lease)."""
        raise NotImplementedError

    def kit_load(self) -> MemoryState | None:
        """The stored state (as `kit_save` got it), or None before the first save. A real
        store serialises it, e.g. with `pickle` (its records are frozen attrs values)."""
        raise NotImplementedError

    def kit_save(self, state: MemoryState) -> None:
        """Replace the stored state (called under kit_lock(), only when it changed)."""
        raise NotImplementedError

    # ---- transactions (Rules 1 and 2) ----------------------------------------------------

    @contextlib.contextmanager
    def _kit_session(self) -> Iterator[None]:
        local = self._kit_local
        if getattr(local, "depth", 0) > 0:  # Rule 2: join the running transaction
            local.depth += 1
            try:
                yield
            finally:
                local.depth -= 1
            return
        with self._kit_guard, self.kit_lock():
            loaded = self.kit_load()
            self._state = copy_state(loaded) if loaded is not None else MemoryState()
            local.depth = 1
            try:
                yield
            finally:
                local.depth = 0
            if loaded is None or self._state != loaded:
                self.kit_save(copy_state(self._state))

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        """One kit transaction around the block (DeliveryJournal.atomic, TRN-9): saved
        when the block returns, nothing saved when it raises."""
        with self._kit_session(), MemoryStore.atomic(self):
            yield

    @contextlib.contextmanager
    def fenced(self, claim: Claim) -> Iterator[None]:
        """FLT-1: one kit transaction that first checks `claim` still holds its task
        (LeaseLost, nothing saved, when it does not)."""
        with self._kit_session(), MemoryStore.fenced(self, claim):
            yield


def _wrap_public_methods() -> None:
    for name in dir(MemoryStore):
        if name.startswith("_") or name in _NOT_WRAPPED:
            continue
        value = getattr(MemoryStore, name)
        if callable(value):
            setattr(StoreKit, name, _in_transaction(value))


_wrap_public_methods()

__all__ = ["KIT_PRIMITIVES", "StoreKit", "copy_state"]
