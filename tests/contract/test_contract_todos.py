"""TodoStore contract (docs/rules.md TDL/TDC/TDU): every storage adapter must pass these. They use
only the port methods and World loading, never an adapter's internals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markertools.domain.model import TODO_STATUSES, UNFINISHED_TODO_STATUSES, Project, Todo
from markertools_adapters.world import World

MakeStore = Callable[[World], Any]
NOW = 1_798_333_200.0
PROJECTS = (Project("p1", "shop"), Project("p2", "other"))


def world(*todos: Todo) -> World:
    return World(now=NOW, projects=PROJECTS, todos=todos)


def td(todo_id: str, **kw: Any) -> Todo:
    fields: dict[str, Any] = {"project_id": "p1", "title": todo_id, "created_at": NOW}
    fields.update(kw)
    return Todo(todo_id, **fields)


def reference_listing(
    rows: tuple[Todo, ...], project: str, statuses: frozenset[str], q: str | None
) -> list[str]:
    """The documented order and filter, written independently of any adapter."""
    needle = q.lower() if q is not None else None
    match = [
        t
        for t in rows
        if t.project_id == project
        and t.status in statuses
        and (needle is None or needle in t.title.lower() or needle in (t.description or "").lower())
    ]
    match.sort(
        key=lambda t: (
            t.sort_order is None,
            t.sort_order if t.sort_order is not None else 0,
            t.created_at,
            t.id,
        )
    )
    return [t.id for t in match]


@pytest.mark.rule("TDC-1")
def test_insert_and_get_round_trip(make_store: MakeStore) -> None:
    store = make_store(world())
    full = td(
        "d1",
        title="Write docs ✍",
        description="多行\ndescription",
        status="blocked",
        priority="high",
        due_at=NOW + 0.5,
        task_id="t1",
        sort_order=-3,
        completed_at=None,
    )
    store.insert_todo(full)
    assert store.get_todo("d1") == full
    assert store.get_todo("nope") is None
    with pytest.raises(Exception):  # noqa: B017 - any error: an existing id is refused
        store.insert_todo(td("d1", title="again"))
    assert store.get_todo("d1") == full


@pytest.mark.rule("TDL-1", "TDL-2")
def test_list_scopes_by_project_and_status(make_store: MakeStore) -> None:
    store = make_store(
        world(
            td("a", status="pending"),
            td("b", status="completed"),
            td("c", status="in_progress"),
            td("x", project_id="p2"),
        )
    )
    got = store.list_todos("p1", statuses=UNFINISHED_TODO_STATUSES, q=None, limit=20)
    assert [t.id for t in got.rows] == ["a", "c"] and got.total == 2
    done = store.list_todos("p1", statuses=["completed"], q=None, limit=20)
    assert [t.id for t in done.rows] == ["b"]
    assert store.list_todos("p3", statuses=TODO_STATUSES, q=None, limit=20).total == 0
    assert store.list_todos("p1", statuses=[], q=None, limit=20).total == 0


@pytest.mark.rule("TDL-1")
def test_query_is_a_case_insensitive_plain_substring(make_store: MakeStore) -> None:
    store = make_store(
        world(
            td("a", title="Fix LOGIN page"),
            td("b", title="x", description="the Login flow"),
            td("c", title="100% done"),
            td("d", title="1000 done"),
            td("e", title="snake_case"),
            td("f", title="snakeXcase"),
            td("g", title="ÄPFEL kaufen"),
        )
    )

    def ids(q: str) -> list[str]:
        return [t.id for t in store.list_todos("p1", statuses=TODO_STATUSES, q=q, limit=50).rows]

    assert ids("login") == ["a", "b"]
    assert ids("0%") == ["c"]  # '%' is not a wildcard
    assert ids("e_c") == ["e"]  # '_' is not a wildcard
    assert ids("äpfel") == ["g"]  # case-insensitive beyond ASCII
    assert ids("") == ["a", "b", "c", "d", "e", "f", "g"]


@pytest.mark.rule("TDL-3")
def test_order_limit_and_total(make_store: MakeStore) -> None:
    rows = (
        td("n2", sort_order=None, created_at=NOW - 1),
        td("n1", sort_order=None, created_at=NOW - 1),
        td("s5", sort_order=5),
        td("s-1", sort_order=-1),
        td("s5b", sort_order=5, created_at=NOW - 10),
        td("n0", sort_order=None, created_at=NOW - 5),
    )
    store = make_store(world(*rows))
    full = store.list_todos("p1", statuses=TODO_STATUSES, q=None, limit=50)
    assert [t.id for t in full.rows] == ["s-1", "s5b", "s5", "n0", "n1", "n2"]
    cut = store.list_todos("p1", statuses=TODO_STATUSES, q=None, limit=2)
    assert [t.id for t in cut.rows] == ["s-1", "s5b"] and cut.total == 6


@pytest.mark.rule("TDL-1", "TDL-3")
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=30)
@given(
    data=st.lists(
        st.tuples(
            st.sampled_from(["p1", "p2"]),
            st.sampled_from(TODO_STATUSES),
            st.sampled_from(["alpha", "Beta", "ALPHA beta", "gamma", ""]),
            st.none() | st.sampled_from(["alphabet", "BETA", "x"]),
            st.none() | st.integers(-2, 2),
            st.integers(0, 3),
        ),
        max_size=12,
    ),
    statuses=st.sets(st.sampled_from(TODO_STATUSES), min_size=1),
    q=st.none() | st.sampled_from(["alpha", "BETA", "a", "zz"]),
    limit=st.integers(0, 15),
)
def test_listing_matches_the_documented_filter_and_order(
    make_store: MakeStore,
    data: list[tuple[str, str, str, str | None, int | None, int]],
    statuses: set[str],
    q: str | None,
    limit: int,
) -> None:
    rows = tuple(
        td(
            f"d{i:02}",
            project_id=p,
            status=s,
            title=t,
            description=d,
            sort_order=o,
            created_at=NOW + c,
        )
        for i, (p, s, t, d, o, c) in enumerate(data)
    )
    store = make_store(world(*rows))
    want = reference_listing(rows, "p1", frozenset(statuses), q)
    got = store.list_todos("p1", statuses=frozenset(statuses), q=q, limit=limit)
    assert [t.id for t in got.rows] == want[:limit]
    assert got.total == len(want)


@pytest.mark.rule("TDU-3")
def test_update_is_compare_and_set_on_status(make_store: MakeStore) -> None:
    store = make_store(world(td("d1", status="pending")))
    assert store.update_todo("d1", "in_progress", {"title": "lost"}) is None
    assert store.get_todo("d1").title == "d1"
    assert store.update_todo("missing", "pending", {"title": "x"}) is None
    new = store.update_todo(
        "d1", "pending", {"status": "completed", "completed_at": NOW + 1, "title": "done"}
    )
    assert new is not None
    assert (new.status, new.completed_at, new.title) == ("completed", NOW + 1, "done")
    assert store.get_todo("d1") == new
    # leaving completed clears completed_at (None is stored, not ignored)
    back = store.update_todo("d1", "completed", {"status": "pending", "completed_at": None})
    assert back is not None and back.completed_at is None
    assert store.get_todo("d1").completed_at is None
    # the old expected status no longer matches
    assert store.update_todo("d1", "completed", {"title": "again"}) is None


@pytest.mark.rule("TDU-1")
def test_update_changes_only_named_fields(make_store: MakeStore) -> None:
    original = td("d1", description="keep me", priority="low", sort_order=4, due_at=NOW)
    store = make_store(world(original))
    new = store.update_todo("d1", "pending", {"priority": "high", "task_id": "t9"})
    assert new is not None
    assert new == attrs.evolve(original, priority="high", task_id="t9")
    assert store.get_todo("d1") == new
