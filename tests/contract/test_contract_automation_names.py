"""AutomationStore name rule (AUT-3), held by every storage adapter: no two ACTIVE
automations of one project share a name. insert_automation enforces it atomically and
raises AutomationNameTaken (nothing written); a world holding such a pair is refused.
Only port methods and World loading are used."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from markertools.domain.model import Automation, Project
from markertools.domain.ports import AutomationNameTaken
from markertools_adapters.world import World

MakeStore = Callable[[World], Any]
NOW = 1_798_333_200.0
PROJECTS = (Project("p1", "shop"), Project("p2", "other"))


def am(aid: str, name: str = "nightly", **kw: Any) -> Automation:
    fields: dict[str, Any] = {"project_id": "p1", "prompt": "do it", "created_at": NOW}
    fields.update(kw)
    return Automation(aid, name=name, **fields)


def world(*automations: Automation) -> World:
    return World(now=NOW, projects=PROJECTS, automations=automations)


@pytest.mark.rule("AUT-3")
def test_a_second_active_automation_of_a_name_is_refused_and_not_stored(
    make_store: MakeStore,
) -> None:
    store = make_store(world(am("a1")))
    with pytest.raises(AutomationNameTaken) as raised:
        store.insert_automation(am("a2", prompt="other"))
    assert (raised.value.project_id, raised.value.name) == ("p1", "nightly")
    assert "nightly" in str(raised.value) and "p1" in str(raised.value)
    assert store.get_automation("a2") is None
    assert store.active_automation_names("p1") == frozenset({"nightly"})
    assert [a.id for a in store.export_world(NOW).automations] == ["a1"]


@pytest.mark.rule("AUT-3")
def test_the_rule_is_per_project_and_for_active_automations_only(make_store: MakeStore) -> None:
    store = make_store(world(am("a1"), am("a2", name="weekly", status="paused")))
    store.insert_automation(am("b1", project_id="p2"))  # same name, other project
    store.insert_automation(am("b2", status="paused"))  # not active: no clash
    store.insert_automation(am("b3", status="deleted"))
    store.insert_automation(am("b4", name="weekly"))  # the other "weekly" is paused
    store.insert_automation(am("b5", name="Nightly"))  # names compare exactly
    assert store.active_automation_names("p1") == frozenset({"nightly", "weekly", "Nightly"})
    assert store.active_automation_names("p2") == frozenset({"nightly"})
    with pytest.raises(AutomationNameTaken):
        store.insert_automation(am("b6", name="weekly"))


@pytest.mark.rule("AUT-3")
def test_an_existing_id_is_a_value_error_even_when_the_name_also_clashes(
    make_store: MakeStore,
) -> None:
    store = make_store(world(am("a1")))
    with pytest.raises(ValueError, match="already exists"):
        store.insert_automation(am("a1"))
    assert store.get_automation("a1") == am("a1")


@pytest.mark.rule("AUT-3")
def test_names_never_clash_with_themselves_across_unicode_and_nul(make_store: MakeStore) -> None:
    store = make_store(world())
    names = ["每日新闻", "nul\x00name", "nul\x01name", "", "e\u0301", "\u00e9"]
    for n, name in enumerate(names):
        store.insert_automation(am(f"a{n}", name=name))
    assert store.active_automation_names("p1") == frozenset(names)
    for n, name in enumerate(names):
        with pytest.raises(AutomationNameTaken):
            store.insert_automation(am(f"x{n}", name=name))


@pytest.mark.rule("AUT-3")
def test_a_world_with_two_active_automations_of_one_name_is_not_loaded(
    make_store: MakeStore,
) -> None:
    store = make_store(world())
    with pytest.raises(ValueError, match="nightly"):
        store.load_world(world(am("a1"), am("a2")))
    assert store.export_world(NOW).automations == ()
    # a paused twin, or a twin in another project, is fine
    fine = world(am("a1"), am("a2", status="paused"), am("a3", project_id="p2"))
    assert make_store(fine).export_world(NOW) == fine


@pytest.mark.rule("AUT-3")
def test_concurrent_inserts_of_one_name_have_exactly_one_winner(make_store: MakeStore) -> None:
    store = make_store(world())
    contenders = 6
    start = threading.Barrier(contenders)
    outcomes: list[str] = []
    lock = threading.Lock()

    def insert(n: int) -> None:
        start.wait()
        try:
            store.insert_automation(am(f"a{n}"))
            outcome = "won"
        except AutomationNameTaken:
            outcome = "taken"
        except Exception as exc:  # pragma: no cover - reported by the assertion below
            outcome = f"error {exc!r}"
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=insert, args=(n,)) for n in range(contenders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(outcomes) == ["taken"] * (contenders - 1) + ["won"]
    (winner,) = store.export_world(NOW).automations
    assert winner.name == "nightly" and winner.status == "active"
