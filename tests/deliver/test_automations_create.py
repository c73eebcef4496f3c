"""automation-create delivery (docs/rules.md AUT): fields, first_run_at, names, permission and
quota, through deliver_turn with hand-built plans over the in-memory store."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.strategies.todo import (
    NOW,
    FakeClock,
    base_world,
    make_ports,
    memory_store,
    with_quota,
)

from markertools import DeliveryReport, deliver_turn
from markertools.deliver.handlers.automations import automatic_name
from markertools.domain.model import Automation, PermissionGrant, Task
from markertools.domain.schedule import is_due, next_run_at
from markertools.parse.params import AutomationCreateParams, TodoCreateParams
from markertools.parse.plan import Command, TurnPlan

STAMP = "20261227090000"  # NOW in Asia/Shanghai


def create(line: int = 1, **kw: Any) -> Command:
    kw.setdefault("prompt", "summarise the news")
    return Command("automation-create", line, AutomationCreateParams(**kw))


def deliver(store: Any, *commands: Command, sender: str = "t1", **over: Any) -> DeliveryReport:
    return deliver_turn(
        TurnPlan(commands=commands),
        sender=sender,
        outcome="completed",
        ports=make_ports(store, **over),
    )


def automations_of(store: Any) -> list[Automation]:
    world = store.export_world(NOW)
    return list(world.automations)


def existing(name: str, status: str = "active", project: str = "p1", aid: str = "a0") -> Automation:
    return Automation(aid, project, name, "old", status=status, created_by="u1", created_at=NOW - 9)


@pytest.mark.rule("AUT-1", "AUT-4")
def test_create_registers_the_definition_with_every_field() -> None:
    store = memory_store(base_world())
    (entry,) = deliver(
        store,
        create(
            name="daily news",
            interval_seconds=3600,
            first_run_at=NOW + 600,
            once=False,
            repo_url="https://git.example/news.git",
        ),
    ).entries
    assert entry.outcome == "done"
    (a,) = automations_of(store)
    assert entry.target == a.id and a.id.startswith("am-")
    assert (a.project_id, a.name, a.prompt) == ("p1", "daily news", "summarise the news")
    assert (a.interval_seconds, a.first_run_at, a.run_once) == (3600, NOW + 600, False)
    assert (a.bind, a.bound_task_id, a.repo_url) == (None, None, "https://git.example/news.git")
    assert (a.status, a.created_by, a.created_at) == ("active", "u1", NOW)
    # creating only registers: nothing ran
    assert (a.run_count, a.last_run_at, a.last_slot_at) == (0, None, None)
    text = entry.reason.render("en")
    assert "daily news" in text and "every 3600 seconds" in text and "nothing has run" in text


@pytest.mark.rule("AUT-1", "AUT-4")
def test_heartbeat_binds_to_the_sender_and_once_is_stored() -> None:
    store = memory_store(base_world())
    report = deliver(
        store,
        create(name="hb", bind="heartbeat", once=True),
        create(name="cron", bind="cron", line=2),
        create(name="plain", line=3),
    )
    assert [e.outcome for e in report.entries] == ["done"] * 3
    by_name = {a.name: a for a in automations_of(store)}
    assert (by_name["hb"].bind, by_name["hb"].bound_task_id, by_name["hb"].run_once) == (
        "heartbeat",
        "t1",
        True,
    )
    for name in ("cron", "plain"):
        assert (by_name[name].bind, by_name[name].bound_task_id) == (None, None)
    assert "wakes this thread" in report.entries[0].reason.render("en")


@pytest.mark.rule("AUT-2", "SCH-1")
def test_absent_first_run_at_is_due_at_creation() -> None:
    store = memory_store(base_world())
    deliver(store, create(name="now"))
    (a,) = automations_of(store)
    assert next_run_at(a) == NOW and is_due(a, NOW)
    assert [x.id for x in store.due_automations(NOW)] == [a.id]


@pytest.mark.rule("AUT-2")
def test_first_run_at_before_now_is_rejected_with_the_current_time() -> None:
    store = memory_store(base_world())
    report = deliver(
        store,
        create(name="past", first_run_at=NOW - 1),
        create(name="exactly-now", first_run_at=NOW, line=2),
        create(name="future", first_run_at=NOW + 1, line=3),
    )
    past, exact, future = report.entries
    assert past.outcome == "rejected"
    text = past.reason.render("en")
    assert "1798333200" in text and "2026-12-27T09:00:00+08:00" in text  # the current time
    assert "1798333199" in text and "2026-12-27T08:59:59+08:00" in text  # the given time
    assert "2026-12-27T09:00:00+08:00" in past.reason.render("zh")
    assert exact.outcome == "done" and future.outcome == "done"
    assert sorted(a.name for a in automations_of(store)) == ["exactly-now", "future"]


@pytest.mark.rule("AUT-3")
def test_automatic_names_use_sender_id_shanghai_time_and_block_position() -> None:
    long_sender = Task("task-0123456789", "p1", created_by="u1")
    store = memory_store(base_world(tasks=(*base_world().tasks, long_sender)))
    report = deliver(
        store,
        create(line=1),
        create(name="explicit", line=2),
        create(line=3),
        sender="task-0123456789",
    )
    assert [e.outcome for e in report.entries] == ["done"] * 3
    names = sorted(a.name for a in automations_of(store))
    assert names == [f"auto-task-012-{STAMP}-1", f"auto-task-012-{STAMP}-3", "explicit"]
    assert "name generated" in report.entries[0].reason.render("en")


@pytest.mark.rule("AUT-3")
def test_automatic_name_is_raised_past_active_names_only() -> None:
    world = base_world(
        automations=(
            existing(f"auto-t1-{STAMP}-1", aid="a1"),
            existing(f"auto-t1-{STAMP}-2", aid="a2"),
            existing(f"auto-t1-{STAMP}-4", status="paused", aid="a4"),
            existing(f"auto-t1-{STAMP}-3", project="p2", aid="a3"),
        )
    )
    store = memory_store(world)
    report = deliver(store, create(line=1), create(line=2))
    assert [e.outcome for e in report.entries] == ["done", "done"]
    new = sorted(a.name for a in automations_of(store) if a.created_at == NOW)
    # block 1 -> 1, 2 taken -> 3 (p2's -3 does not count); block 2 -> 2 taken, 3 taken
    # earlier this turn -> 4 (the paused -4 does not count)
    assert new == [f"auto-t1-{STAMP}-3", f"auto-t1-{STAMP}-4"]


@pytest.mark.rule("AUT-3")
@given(
    position=st.integers(1, 5),
    taken=st.sets(st.integers(1, 12), max_size=10),
)
def test_automatic_name_is_the_first_free_n_from_the_position(
    position: int, taken: set[int]
) -> None:
    names = frozenset(f"auto-abcdefgh-{STAMP}-{n}" for n in taken)
    got = automatic_name("abcdefghijk", NOW, position, names)
    assert got not in names
    match = re.fullmatch(rf"auto-abcdefgh-{STAMP}-(\d+)", got)
    assert match is not None
    n = int(match.group(1))
    assert n >= position
    assert all(m in taken for m in range(position, n))


@pytest.mark.rule("AUT-3")
def test_explicit_name_of_an_active_automation_is_rejected() -> None:
    world = base_world(
        automations=(
            existing("nightly", aid="a1"),
            existing("paused-one", status="paused", aid="a2"),
            existing("elsewhere", project="p2", aid="a3"),
        )
    )
    store = memory_store(world)
    report = deliver(
        store,
        create(name="nightly", line=1),
        create(name="paused-one", line=2),
        create(name="elsewhere", line=3),
        create(name="twice", line=4),
        create(name="twice", line=5),
    )
    outcomes = [e.outcome for e in report.entries]
    assert outcomes == ["rejected", "done", "done", "done", "rejected"]
    assert "already named 'nightly'" in report.entries[0].reason.render("en")


@pytest.mark.rule("AUT-4")
def test_create_task_permission_is_required_and_lookup_failure_refuses() -> None:
    store = memory_store(base_world(permissions=(PermissionGrant("u1", "p1", ("read",)),)))
    (entry,) = deliver(store, create(name="x")).entries
    assert entry.outcome == "rejected" and "'create_task'" in entry.reason.render("en")

    class Raising:
        def has_permission(self, *a: Any) -> bool:
            raise ConnectionError("no permission service")

    store = memory_store(base_world())
    (entry,) = deliver(store, create(name="x"), permissions=Raising()).entries
    assert entry.outcome == "rejected" and "lookup failed" in entry.reason.render("en")
    assert automations_of(store) == []


@pytest.mark.rule("AUT-4")
def test_exhausted_quota_rejects_every_automation_of_the_turn_checked_once() -> None:
    store = memory_store(with_quota(base_world(), 10.0, 10.0))
    calls: list[str] = []

    class CountingCosts:
        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        def get_quota(self, user: str) -> Any:
            calls.append(user)
            return store.get_quota(user)

    report = deliver(
        store,
        create(name="a", line=1),
        create(name="b", line=2),
        Command("todo-create", 3, TodoCreateParams("unaffected")),
        costs=CountingCosts(),
    )
    by_kind = {e.line: e for e in report.entries}
    assert by_kind[1].outcome == by_kind[2].outcome == "rejected"
    assert "quota" in by_kind[1].reason.render("en")
    assert by_kind[3].outcome == "done"  # todos are not quota-gated
    assert calls == ["u1"]
    assert automations_of(store) == []


@pytest.mark.rule("AUT-4", "DOM-7")
@pytest.mark.parametrize(("total", "used"), [(None, 1e9), (10.0, 9.99)])
def test_unlimited_or_remaining_quota_allows(total: float | None, used: float) -> None:
    store = memory_store(with_quota(base_world(), total, used))
    (entry,) = deliver(store, create(name="ok")).entries
    assert entry.outcome == "done"


@pytest.mark.rule("AUT-4", "TRN-8")
def test_failing_quota_lookup_rejects_the_block() -> None:
    store = memory_store(base_world())

    class BrokenCosts:
        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        def get_quota(self, user: str) -> Any:
            raise OSError("quota db down")

    (entry,) = deliver(store, create(name="x"), costs=BrokenCosts()).entries
    assert entry.outcome == "rejected" and "quota db down" in entry.reason.render("en")
    assert automations_of(store) == []


@pytest.mark.rule("AUT-3")
def test_automatic_name_uses_the_delivery_time() -> None:
    store = memory_store(base_world())
    later = NOW + 3 * 3600 + 61  # 12:01:01 in Shanghai
    deliver(store, create(), clock=FakeClock(later))
    (a,) = automations_of(store)
    assert a.name == "auto-t1-20261227120101-1"
    assert a.created_at == later
