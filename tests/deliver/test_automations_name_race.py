"""automation-create when the name is taken between the check and the insert (AUT-3 under
concurrency): another delivery registers the name right after this one read the active
names. The store refuses the insert (AutomationNameTaken); the handler turns that into the
specific "already named" rejection for an explicit name, and raises a generated name past
it - never a generic port failure, never a second active automation of one name."""

from __future__ import annotations

from typing import Any

import pytest
from support.strategies.todo import NOW, base_world, make_ports, memory_store

from markertools import DeliveryReport, deliver_turn
from markertools.deliver.handlers.automations import NAME_ATTEMPTS, automatic_name
from markertools.domain.model import Automation
from markertools.parse.params import AutomationCreateParams
from markertools.parse.plan import Command, TurnPlan

STAMP = "20261227090000"  # NOW in Asia/Shanghai


class Racing:
    """The memory store, plus a rival delivery that registers `names_for(taken)` (the
    names it chooses after seeing `taken`) just after each of the first `rounds` reads of
    the active names - the window between automation-create's check and its insert."""

    def __init__(self, store: Any, rival_names: Any, rounds: int = 1) -> None:
        self.store = store
        self.rival_names = rival_names
        self.rounds = rounds
        self.rivals = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def active_automation_names(self, project_id: str) -> frozenset[str]:
        names = self.store.active_automation_names(project_id)
        if self.rounds > 0:
            self.rounds -= 1
            for name in self.rival_names(names):
                self.rivals += 1
                self.store.insert_automation(
                    Automation(f"rival{self.rivals}", project_id, name, "rival", created_at=NOW)
                )
        return names


def deliver(automations: Any, store: Any, **params: Any) -> DeliveryReport:
    params.setdefault("prompt", "summarise the news")
    plan = TurnPlan(commands=(Command("automation-create", 1, AutomationCreateParams(**params)),))
    ports = make_ports(store, automations=automations)
    return deliver_turn(plan, sender="t1", outcome="completed", ports=ports)


def active(store: Any, name: str) -> list[Automation]:
    return [
        a
        for a in store.export_world(NOW).automations
        if a.name == name and a.status == "active" and a.project_id == "p1"
    ]


@pytest.mark.rule("AUT-3")
def test_an_explicit_name_taken_meanwhile_is_rejected_as_already_named() -> None:
    store = memory_store(base_world())
    racing = Racing(store, lambda taken: ["nightly"])
    (entry,) = deliver(racing, store, name="nightly").entries
    assert entry.outcome == "rejected"
    text = entry.reason.render("en")
    assert "an active automation of this project is already named 'nightly'" in text
    assert "nothing was registered" in text
    assert [a.id for a in active(store, "nightly")] == ["rival1"]
    assert "已有名为“nightly”" in entry.reason.render("zh")


@pytest.mark.rule("AUT-3")
def test_a_generated_name_taken_meanwhile_is_raised_past_it() -> None:
    store = memory_store(base_world())
    first = automatic_name("t1", NOW, 1, frozenset())
    assert first == f"auto-t1-{STAMP}-1"
    racing = Racing(store, lambda taken: [first])
    (entry,) = deliver(racing, store).entries
    assert entry.outcome == "done", entry.reason.render("en")
    second = f"auto-t1-{STAMP}-2"
    assert second in entry.reason.render("en")
    assert [a.id for a in active(store, first)] == ["rival1"]
    (mine,) = active(store, second)
    assert entry.target == mine.id


@pytest.mark.rule("AUT-3")
def test_a_generated_name_lost_every_time_is_rejected_after_the_bounded_attempts() -> None:
    store = memory_store(base_world())

    def rival(taken: frozenset[str]) -> list[str]:  # always takes the next free name
        return [automatic_name("t1", NOW, 1, taken)]

    racing = Racing(store, rival, rounds=NAME_ATTEMPTS)
    (entry,) = deliver(racing, store).entries
    assert entry.outcome == "rejected"
    assert "already named 'auto-t1-" in entry.reason.render("en")
    names = sorted(a.name for a in store.export_world(NOW).automations)
    assert names == [f"auto-t1-{STAMP}-{n}" for n in range(1, NAME_ATTEMPTS + 1)]
    assert all(a.id.startswith("rival") for a in store.export_world(NOW).automations)
