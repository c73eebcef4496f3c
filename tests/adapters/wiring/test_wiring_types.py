"""`store_ports` takes a `StoragePorts` (markertools_adapters.wiring): the intersection of
exactly the storage Protocols that `Ports` has fields for, so mypy --strict checks that a
store really implements each of them (MemoryStore, SqliteStore and PostgresStore are
checked in wiring.py under TYPE_CHECKING)."""

from __future__ import annotations

import typing
from typing import Protocol

import attrs
import pytest

import markertools.domain.ports as ports
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.wiring import StoragePorts

NON_STORAGE = {
    "executor",
    "clock",
    "random",
    "files",
    "waiter",
    "journal",
    "calls",
    "fencing",
    "approvals",
}  # optional: journal (TRN-9), calls (TOL-4), fencing (FLT-1), approvals (APR-1..5)


def test_storage_ports_is_exactly_the_storage_fields_of_ports() -> None:
    hints = typing.get_type_hints(ports.Ports, vars(ports))
    storage = {hints[f.name] for f in attrs.fields(ports.Ports) if f.name not in NON_STORAGE}
    assert set(StoragePorts.__bases__) - {Protocol} == storage
    assert len(storage) == 9


def test_every_bundled_store_has_every_storage_method() -> None:
    from markertools_adapters.memory import MemoryStore
    from markertools_adapters.postgres import PostgresStore
    from markertools_adapters.sqlite import SqliteStore

    methods = {
        name
        for proto in StoragePorts.__bases__
        if proto is not Protocol
        for name in vars(proto)
        if not name.startswith("_")
    }
    for store in (MemoryStore, SqliteStore, PostgresStore):
        missing = sorted(m for m in methods if not callable(getattr(store, m, None)))
        assert missing == [], store.__name__


def test_store_ports_wires_the_stores_delivery_journal() -> None:
    from markertools_adapters.clock import SeededRandom, VirtualClock
    from markertools_adapters.memory import MemoryStore
    from markertools_adapters.wiring import store_ports

    store = MemoryStore()
    ports_with = store_ports(
        store, clock=VirtualClock(0.0), random=SeededRandom(1), executor=NoopExecutor()
    )
    assert ports_with.journal is store  # every bundled store is its own journal (TRN-9)
    ports_without = store_ports(
        store,
        clock=VirtualClock(0.0),
        random=SeededRandom(1),
        executor=NoopExecutor(),
        journal=None,
    )
    assert ports_without.journal is None

    class NoJournal:
        def __getattr__(self, name: str) -> object:
            if name in ("block_entries", "record_block", "atomic"):
                raise AttributeError(name)
            return getattr(store, name)

    no_journal = store_ports(
        NoJournal(),  # type: ignore[arg-type]
        clock=VirtualClock(0.0),
        random=SeededRandom(1),
        executor=NoopExecutor(),
    )
    assert no_journal.journal is None


@pytest.mark.rule("TOL-4")
def test_store_ports_wires_the_stores_call_ledger() -> None:
    from markertools_adapters.clock import SeededRandom, VirtualClock
    from markertools_adapters.memory import MemoryStore
    from markertools_adapters.wiring import store_ports

    store = MemoryStore()
    wired = store_ports(
        store, clock=VirtualClock(0.0), random=SeededRandom(1), executor=NoopExecutor()
    )
    assert wired.calls is store  # every bundled store keeps the per-turn call ledger

    class NoLedger:
        def __getattr__(self, name: str) -> object:
            if name == "record_turn_use":
                raise AttributeError(name)
            return getattr(store, name)

    bare = store_ports(
        NoLedger(),  # type: ignore[arg-type]
        clock=VirtualClock(0.0),
        random=SeededRandom(1),
        executor=NoopExecutor(),
    )
    assert bare.calls is None  # deliver_call then refuses, deliver_turn keeps its caps


@pytest.mark.rule("APR-3")
def test_store_ports_wires_the_stores_approvals() -> None:
    from markertools_adapters.clock import SeededRandom, VirtualClock
    from markertools_adapters.memory import MemoryStore
    from markertools_adapters.wiring import store_ports

    store = MemoryStore()
    wired = store_ports(
        store, clock=VirtualClock(0.0), random=SeededRandom(1), executor=NoopExecutor()
    )
    assert wired.approvals is store  # every bundled store keeps approval requests

    class NoApprovals:
        def __getattr__(self, name: str) -> object:
            if name == "answer_approval":
                raise AttributeError(name)
            return getattr(store, name)

    bare = store_ports(
        NoApprovals(),  # type: ignore[arg-type]
        clock=VirtualClock(0.0),
        random=SeededRandom(1),
        executor=NoopExecutor(),
    )
    assert bare.approvals is None  # approval-answer is then refused, saying why
