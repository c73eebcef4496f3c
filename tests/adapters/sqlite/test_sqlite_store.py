"""SQLite adapter specifics that the shared contract suite cannot see: exact value
round-trips (floats bit for bit, booleans, nested JSON), world load atomicity and
refusals, compare-and-set field checks, opening / creating databases."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from support.strategies.sqlite import worlds

from markertools.domain.model import (
    Automation,
    Environment,
    PermissionGrant,
    Project,
    Quota,
    Task,
    Todo,
)
from markertools_adapters.sqlite import create_store_from_world, open_store
from markertools_adapters.world import World


def exact(value: object) -> str:
    """repr distinguishes what == does not (-0.0 vs 0.0, 1 vs 1.0, True vs 1)."""
    return repr(value)


@given(world=worlds)
@settings(max_examples=40)
def test_world_round_trips_exactly_in_memory_db(world: World) -> None:
    store = create_store_from_world(world)
    try:
        dumped = store.export_world(world.now)
        assert dumped == world
        assert exact(dumped) == exact(world)
    finally:
        store.close()


@given(world=worlds)
@settings(max_examples=15)
def test_world_round_trips_exactly_through_a_file(
    world: World, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("rt") / "w.db"
    create_store_from_world(world, path).close()
    with open_store(path) as store:
        assert exact(store.export_world(world.now)) == exact(world)


def test_special_floats_and_booleans_keep_their_exact_values() -> None:
    floats = [-0.0, 0.0, 5e-324, 1.7976931348623157e308, 0.1 + 0.2, 2.0**53 + 2, -1e-300]
    world = World(
        tasks=tuple(
            Task(id=f"t{i}", project_id="p", created_at=f, goal_mode=i % 2 == 0)
            for i, f in enumerate(floats)
        ),
    )
    with create_store_from_world(world) as store:
        for i, f in enumerate(floats):
            task = store.get_task(f"t{i}")
            assert task is not None
            assert task.created_at.hex() == f.hex()
            assert math.copysign(1.0, task.created_at) == math.copysign(1.0, f)
            assert task.goal_mode is (i % 2 == 0)
            assert type(task.is_coordinator) is bool


def test_integer_created_at_comes_back_as_float() -> None:
    with create_store_from_world(World(tasks=(Task(id="t", project_id="p", created_at=7),))) as s:  # type: ignore[arg-type]
        task = s.get_task("t")
        assert task is not None and type(task.created_at) is float and task.created_at == 7.0


def test_environment_none_and_all_null_environment_stay_distinct() -> None:
    world = World(
        projects=(
            Project(id="a", environment=None),
            Project(id="b", environment=Environment()),
            Project(id="c", environment=Environment("dev", "main", "ready")),
        )
    )
    with create_store_from_world(world) as store:
        assert store.get_project("a") == Project(id="a", environment=None)
        assert store.get_project("b") == Project(id="b", environment=Environment())
        assert store.export_world(0.0).projects == world.projects


def test_load_world_is_all_or_nothing() -> None:
    store = open_store(":memory:")
    bad = World(
        projects=(Project(id="p"),),
        tasks=(Task(id="t1", project_id="p"), Task(id="t1", project_id="p")),
    )
    with pytest.raises(ValueError, match="t1"):
        store.load_world(bad)
    assert store.export_world(0.0) == World()
    store.close()


def test_load_world_refuses_a_database_that_holds_records() -> None:
    with create_store_from_world(World(quotas=(Quota(user="u"),))) as store:
        with pytest.raises(ValueError, match="already has quotas"):
            store.load_world(World(projects=(Project(id="p"),)))
        assert store.export_world(0.0) == World(quotas=(Quota(user="u"),))


def test_integer_beyond_64_bits_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"Task 't'.*64-bit"):
        create_store_from_world(
            World(tasks=(Task(id="t", project_id="p", auto_resume_count=2**64),))
        )


def test_grants_are_stored_sorted_and_unique() -> None:
    world = World(permissions=(PermissionGrant("u", "p", ("read", "create_task", "read")),))
    with create_store_from_world(world) as store:
        assert store.export_world(0.0).permissions == (
            PermissionGrant("u", "p", ("create_task", "read")),
        )
        assert store.has_permission("u", "p", "read")
        assert not store.has_permission("u", "p", "approve_merge")
        assert not store.has_permission(None, "p", "read")
        assert not store.has_permission("u", "other", "read")


def test_create_store_from_world_refuses_an_existing_path(tmp_path: Path) -> None:
    path = tmp_path / "w.db"
    path.write_bytes(b"precious")
    with pytest.raises(FileExistsError, match="already exists"):
        create_store_from_world(World(), path)
    assert path.read_bytes() == b"precious"


def test_create_store_from_world_removes_the_file_when_loading_fails(tmp_path: Path) -> None:
    path = tmp_path / "w.db"
    bad = World(todos=(Todo(id="d", project_id="p"), Todo(id="d", project_id="p")))
    with pytest.raises(ValueError):
        create_store_from_world(bad, path)
    assert not path.exists()


@pytest.mark.rule("CTL-4")
def test_transition_refuses_unknown_and_key_fields_without_changing_anything() -> None:
    with create_store_from_world(World(tasks=(Task(id="t", project_id="p"),))) as store:
        with pytest.raises(ValueError, match="id"):
            store.transition_task("t", "running", {"id": "u"})
        with pytest.raises(ValueError, match="nonsense"):
            store.transition_task("t", "running", {"status": "queued", "nonsense": 1})
        with pytest.raises(TypeError):
            store.transition_task("t", "running", {"created_at": "yesterday"})
        assert store.get_task("t") == Task(id="t", project_id="p")


def test_insert_duplicates_raise_value_error() -> None:
    world = World(
        tasks=(Task(id="t", project_id="p"),),
        todos=(Todo(id="d", project_id="p"),),
        automations=(Automation(id="a", project_id="p", name="n", prompt="x"),),
    )
    with create_store_from_world(world) as store:
        with pytest.raises(ValueError, match="already exists"):
            store.insert_task(Task(id="t", project_id="q"))
        with pytest.raises(ValueError, match="already exists"):
            store.insert_todo(Todo(id="d", project_id="q"))
        with pytest.raises(ValueError, match="already exists"):
            store.insert_automation(Automation(id="a", project_id="q", name="m", prompt="y"))
        assert store.export_world(0.0) == world


@pytest.mark.rule("ATT-3")
def test_latest_attempt_is_none_when_the_table_is_missing(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    open_store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE task_attempts")
    conn.commit()
    conn.close()
    with open_store(path) as store:
        assert store.latest_attempt("t") is None


def test_case_insensitive_search_is_unicode_aware() -> None:
    world = World(
        tasks=(
            Task(id="t1", project_id="p", prompt="Fix the ÉCOLE importer"),
            Task(id="t2", project_id="p", prompt="ΣΊΣΥΦΟΣ"),
        )
    )
    with create_store_from_world(world) as store:
        assert [t.id for t in store.list_tasks("p", status=None, q="école", limit=5).rows] == ["t1"]
        assert [t.id for t in store.list_tasks("p", status=None, q="σίσυφ", limit=5).rows] == ["t2"]
        # q is plain text: LIKE wildcards mean nothing
        assert store.list_tasks("p", status=None, q="%", limit=5).total == 0


@pytest.mark.rule("ATT-2")
def test_a_requeue_whose_ledger_write_fails_rolls_everything_back(tmp_path: Path) -> None:
    task = Task(
        id="t", project_id="p", status="running", result_text="half", interrupted_reason="oom"
    )
    path = tmp_path / "r.db"
    create_store_from_world(World(tasks=(task,)), path).close()
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TRIGGER no_ledger BEFORE INSERT ON task_attempts"
        " BEGIN SELECT RAISE(ABORT, 'ledger disk full'); END"
    )
    conn.commit()
    conn.close()
    with open_store(path) as store:
        result = store.requeue_platform("t", "running", "platform_fresh", -1, 10.0)
        assert not result.ok and result.error is not None and "ledger disk full" in result.error
        assert store.get_task("t") == task  # status, texts and count untouched
        assert store.list_attempts("t") == ()


@pytest.mark.rule("ATT-2")
def test_a_requeue_past_64_bit_counts_fails_cleanly() -> None:
    task = Task(id="t", project_id="p", status="running", auto_resume_count=2**63 - 1)
    with create_store_from_world(World(tasks=(task,))) as store:
        result = store.requeue_platform("t", "running", "platform_fresh", -1, 1.0)
        assert not result.ok and result.error is not None and "64-bit" in result.error
        assert store.get_task("t") == task


def test_a_database_first_used_by_the_permission_helpers_opens(tmp_path: Path) -> None:
    import sqlite_utils

    from markertools_adapters.permissions import assign_role, define_role, grant_permissions

    path = tmp_path / "perm.db"
    db = sqlite_utils.Database(path)
    grant_permissions(db, "u", "p", ["read"])
    define_role(db, "maintainer", ["approve_merge"])
    assign_role(db, "u", "p", "maintainer")
    db.close()
    with open_store(path) as store:
        assert store.has_permission("u", "p", "read")
        assert store.has_permission("u", "p", "approve_merge")  # through the role
        assert not store.has_permission("u", "p", "create_task")
        # direct grants appear in the world; role grants belong to the role tables
        assert store.export_world(0.0).permissions == (PermissionGrant("u", "p", ("read",)),)


def test_world_now_is_kept_and_advanced(tmp_path: Path) -> None:
    path = tmp_path / "n.db"
    create_store_from_world(World(now=1798333200.5), path).close()
    with open_store(path) as store:
        assert store.world_now() == 1798333200.5
        store.set_world_now(1798333260.5)
    with open_store(path) as store:
        assert store.world_now() == 1798333260.5
    with open_store(tmp_path / "fresh.db") as store:
        assert store.world_now() is None


@pytest.mark.rule("CTL-4")
def test_threads_sharing_a_store_or_holding_their_own_race_safely(tmp_path: Path) -> None:
    import threading

    path = tmp_path / "threads.db"
    tasks = tuple(Task(id=f"t{i}", project_id="p", status="running") for i in range(20))
    create_store_from_world(World(tasks=tasks), path).close()
    shared = open_store(path)
    own = [open_store(path) for _ in range(4)]
    stores = [shared] * 4 + own
    wins: list[str] = []
    start = threading.Barrier(len(stores))

    def run(store: object) -> None:
        start.wait()
        for task in tasks:
            if store.transition_task(task.id, "running", {"status": "interrupted"}) is not None:  # type: ignore[attr-defined]
                wins.append(task.id)

    threads = [threading.Thread(target=run, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(wins) == sorted(t.id for t in tasks)  # each task: exactly one winner
    assert {t.status for t in shared.export_world(0.0).tasks} == {"interrupted"}
    for store in [shared, *own]:
        store.close()
