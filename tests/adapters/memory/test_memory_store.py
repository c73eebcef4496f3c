"""The in-memory adapters beyond the shared contract: loading refuses duplicates and
non-empty stores, conveniences for embedding code, the clock and random adapters (DOM-5),
and `store_ports` wiring."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.strategies.core import NOW, make_world, task

from markertools.domain.ports import Clock, RandomSource
from markertools_adapters.clock import SeededRandom, SystemClock, SystemRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.memory import MemoryStore
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World


def test_loading_refuses_duplicate_ids_and_loads_nothing():
    store = MemoryStore()
    with pytest.raises(ValueError, match="duplicate task 't1'"):
        store.load_world(make_world(task("t1"), task("t1")))
    assert store.export_world(NOW).tasks == ()


def test_loading_into_a_non_empty_store_is_refused():
    store = MemoryStore.from_world(make_world(task("t1")))
    with pytest.raises(ValueError, match="empty"):
        store.load_world(make_world(task("t2")))
    assert [t.id for t in store.export_world(NOW).tasks] == ["t1"]


def test_transition_refuses_unknown_fields_and_the_id():
    store = MemoryStore.from_world(make_world(task("t1")))
    with pytest.raises(ValueError):
        store.transition_task("t1", "running", {"colour": "red"})
    with pytest.raises(ValueError):
        store.transition_task("t1", "running", {"id": "t9"})
    assert store.get_task("t1") == task("t1")


def test_followups_for_and_audit_records():
    store = MemoryStore.from_world(make_world(task("t1"), task("t2")))
    store.enqueue_followup("t1", "a")
    store.enqueue_followup("t2", "b")
    store.enqueue_followup("t1", "c")
    assert store.followups_for("t1") == ("a", "c")
    assert store.audit_records() == ()


def test_store_ports_fills_every_storage_port_with_the_store():
    store = MemoryStore()
    ports = store_ports(store, clock=VirtualClock(), random=SeededRandom(), executor=NoopExecutor())
    for name in (
        "tasks",
        "todos",
        "automations",
        "projects",
        "costs",
        "attempts",
        "audit",
        "followups",
        "permissions",
    ):
        assert getattr(ports, name) is store
    assert ports.files is None and ports.waiter is None
    assert ports.executor.kill(task("x")).signalled is False  # the noop default


# ---- clock and random (DOM-5) ---------------------------------------------------------------------


@pytest.mark.rule("DOM-5")
def test_virtual_clock_sleep_advances_instantly():
    clock = VirtualClock(100.0)
    clock.sleep(300)
    clock.sleep(-5)
    clock.sleep(float("nan"))
    clock.advance(1.5)
    assert clock.now() == 401.5
    assert clock.slept == [300, 0.0, 0.0]


@pytest.mark.rule("DOM-5")
def test_adapters_satisfy_the_clock_and_random_protocols():
    for clock in (SystemClock(), VirtualClock()):
        assert isinstance(clock, Clock)
    for rnd in (SystemRandom(), SeededRandom(3)):
        assert isinstance(rnd, RandomSource)
    assert SystemClock().now() > 1.6e9
    SystemClock().sleep(0)  # returns at once


@given(st.integers(0, 64), st.integers())
def test_token_hex_is_two_lowercase_hex_digits_per_byte(nbytes, seed):
    for rnd in (SeededRandom(seed), SystemRandom()):
        token = rnd.token_hex(nbytes)
        assert len(token) == 2 * nbytes
        assert set(token) <= set("0123456789abcdef")


def test_seeded_random_is_reproducible():
    assert SeededRandom(5).token_hex(8) == SeededRandom(5).token_hex(8)
    assert SeededRandom(5).token_hex(8) != SeededRandom(6).token_hex(8)


def test_empty_world_round_trips():
    store = MemoryStore.from_world(World(now=NOW))
    assert store.export_world(NOW) == World(now=NOW)
