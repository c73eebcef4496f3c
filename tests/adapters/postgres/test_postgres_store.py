"""PostgreSQL adapter specifics the shared contract suite cannot see: exact value round
trips (floats bit for bit, U+0000 and the escape characters, 64-bit integers), the
server-side search folding for every code point, compare-and-set field checks, schema
isolation, refusals, and that every port lookup has an index. Runs against the real
server MARKERTOOLS_PG_DSN names (skips without one); every test has its own schema."""

from __future__ import annotations

import math
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from support.postgres import SKIP_REASON, connect, dsn, pg_dsn, schema, store, throwaway_store
from support.strategies.sqlite import worlds

from markertools.domain.model import (
    Automation,
    Environment,
    PermissionGrant,
    Project,
    Task,
    Todo,
)
from markertools_adapters.memory import MemoryStore
from markertools_adapters.postgres import PostgresStore, open_store
from markertools_adapters.postgres._fold import fold_sql
from markertools_adapters.world import World

pytestmark = [pytest.mark.postgres, pytest.mark.skipif(pg_dsn() is None, reason=SKIP_REASON)]
__all__ = ["dsn", "schema", "store"]  # fixtures


def exact(value: object) -> str:
    """repr distinguishes what == does not (-0.0 vs 0.0, 1 vs 1.0, True vs 1)."""
    return repr(value)


# ---- round trips --------------------------------------------------------------------


@given(world=worlds)
@settings(max_examples=15)
def test_world_round_trips_exactly(world: World) -> None:
    pg = throwaway_store(world)
    try:
        dumped = pg.export_world(world.now)
        assert exact(dumped) == exact(MemoryStore.from_world(world).export_world(world.now))
    finally:
        pg.close()


def test_special_floats_keep_their_exact_values(store: Any) -> None:
    floats = [
        -0.0,
        0.0,
        5e-324,
        1.7976931348623157e308,
        0.1 + 0.2,
        2.0**53 + 2,
        math.inf,
        -math.inf,
    ]
    store.load_world(
        World(
            tasks=tuple(
                Task(id=f"t{i}", project_id="p", created_at=f, goal_mode=i % 2 == 0)
                for i, f in enumerate(floats)
            ),
        )
    )
    for i, f in enumerate(floats):
        task = store.get_task(f"t{i}")
        assert task is not None and task.created_at.hex() == f.hex()
        assert math.copysign(1.0, task.created_at) == math.copysign(1.0, f)
        assert task.goal_mode is (i % 2 == 0) and type(task.is_coordinator) is bool


def test_nan_is_kept(store: Any) -> None:
    store.insert_task(Task(id="n", project_id="p", created_at=math.nan))
    task = store.get_task("n")
    assert task is not None and math.isnan(task.created_at)


def test_nul_and_escape_characters_round_trip_in_every_text_place(store: Any) -> None:
    weird = ["\x00", "a\x00b", "\x01", "\x01\x02", "\x00\x01\x02\x03", "ok"]
    for i, text in enumerate(weird):
        store.insert_task(
            Task(
                id=f"id{text}",
                project_id=f"p{text}",
                status="running",  # a status is an enumeration value, never free text (TRN-10)
                prompt=f"{text}!",
                created_by=text,
                result_text=text,
                created_at=float(i),
            )
        )
        store.enqueue_followup(f"id{text}", text)
    world = store.export_world(0.0)
    assert [t.id for t in world.tasks] == sorted(f"id{t}" for t in weird)
    for text in weird:
        task = store.get_task(f"id{text}")
        assert task is not None
        assert (task.prompt, task.created_by, task.result_text) == (f"{text}!", text, text)
        assert store.followups_for(f"id{text}") == (text,)
        assert store.transition_task(f"id{text}", "running", {"error_text": text}) is not None
        listing = store.list_tasks(f"p{text}", status="running", q=text, limit=5)
        assert [t.id for t in listing.rows] == [f"id{text}"]
        assert listing.counts == (("running", 1),)
    project = Project(
        id="p\x00", name="\x00", environment=Environment(name="\x00\x01", branch=None)
    )
    other = throwaway_store(World(projects=(project,)))
    try:
        assert other.get_project("p\x00") == project
    finally:
        other.close()


def test_integer_beyond_64_bits_is_a_clear_error(store: Any) -> None:
    with pytest.raises(TypeError, match="64-bit"):
        store.insert_task(Task(id="big", project_id="p", auto_resume_count=2**63))
    with pytest.raises(ValueError, match=r"Todo 'd'.*64-bit"):
        store.load_world(World(todos=(Todo(id="d", project_id="p", sort_order=-(2**63) - 1),)))
    assert store.export_world(0.0) == World(now=0.0)  # nothing was loaded


def test_environment_none_and_all_null_environment_stay_distinct(store: Any) -> None:
    projects = (Project(id="a", environment=None), Project(id="b", environment=Environment()))
    store.load_world(World(projects=projects))
    assert (store.get_project("a"), store.get_project("b")) == projects


# ---- loading -----------------------------------------------------------------------------


def test_load_world_is_all_or_nothing_and_names_the_record(store: Any) -> None:
    bad = World(
        projects=(Project(id="p"),),
        tasks=(Task(id="t", project_id="p"), Task(id="t", project_id="p")),
    )
    with pytest.raises(ValueError, match="duplicate Task 't'"):
        store.load_world(bad)
    assert store.export_world(0.0) == World(now=0.0)
    assert store.world_now() is None


def test_load_world_refuses_a_schema_that_holds_records(store: Any) -> None:
    store.load_world(World(now=5.0, tasks=(Task(id="t", project_id="p"),)))
    assert store.world_now() == 5.0
    with pytest.raises(ValueError, match="already has tasks"):
        store.load_world(World(quotas=()))


def test_permission_entries_merge_and_an_entry_without_grants_survives(store: Any) -> None:
    store.load_world(
        World(
            permissions=(
                PermissionGrant("u", "p", ("read",)),
                PermissionGrant("u", "p", ("create_task", "read")),
                PermissionGrant("v", "p", ()),
            )
        )
    )
    assert store.export_world(0.0).permissions == (
        PermissionGrant("u", "p", ("create_task", "read")),
        PermissionGrant("v", "p", ()),
    )
    assert store.has_permission("u", "p", "create_task") is True
    assert store.has_permission("v", "p", "read") is False
    assert store.has_permission(None, "p", "read") is False


def test_roles_grant_permissions_on_their_project_only(store: Any) -> None:
    store.define_role("dev", ["read", "create_task"])
    store.assign_role("u", "p1", "dev")
    store.grant_permissions("w", "p1", ["approve_merge"])
    assert store.has_permission("u", "p1", "create_task") is True
    assert store.has_permission("u", "p2", "read") is False
    assert store.has_permission("u", "p1", "approve_merge") is False
    assert store.has_permission("w", "p1", "approve_merge") is True


# ---- compare-and-set details -------------------------------------------------------------


@pytest.mark.rule("CTL-4")
def test_transition_refuses_unknown_and_key_fields_without_changing_anything(store: Any) -> None:
    store.insert_task(Task(id="t", project_id="p", status="running"))
    before = store.export_world(0.0)
    for changes in ({"id": "u"}, {"nonsense": 1}, {"status": "failed", "bogus": 2}):
        with pytest.raises(ValueError):
            store.transition_task("t", "running", changes)
    assert store.export_world(0.0) == before
    store.insert_todo(Todo(id="d", project_id="p"))
    with pytest.raises(ValueError, match="project_id"):
        store.update_todo("d", "pending", {"project_id": "elsewhere"})


@pytest.mark.rule("CTL-4")
def test_a_transition_from_the_wrong_status_changes_nothing(store: Any) -> None:
    store.insert_task(Task(id="t", project_id="p", status="running"))
    assert store.transition_task("t", "queued", {"status": "failed"}) is None
    assert store.transition_task("missing", "running", {"status": "failed"}) is None
    done = store.transition_task(
        "t", "running", {"status": "interrupted", "interrupted_reason": "x"}
    )
    assert done is not None and done.status == "interrupted"
    assert store.transition_task("t", "running", {"status": "failed"}) is None
    assert store.get_task("t") == done


@pytest.mark.rule("ATT-3")
def test_latest_attempt_is_none_when_the_table_is_missing(store: Any, dsn: str) -> None:
    with connect(dsn, store.schema) as conn:
        conn.execute("DROP TABLE task_attempts")
    assert store.latest_attempt("t") is None


@pytest.mark.rule("ATT-2")
def test_a_failing_requeue_rolls_back_and_is_returned(store: Any, dsn: str) -> None:
    store.insert_task(Task(id="t", project_id="p", status="failed", result_text="r", created_at=1.0))
    with connect(dsn, store.schema) as conn:
        conn.execute("ALTER TABLE task_attempts ADD CONSTRAINT no_rows CHECK (attempt_no < 0)")
    result = store.requeue_platform("t", "failed", "platform_fresh", -1, 1.0)
    assert result.ok is False and result.error is not None and "no_rows" in result.error
    assert store.get_task("t") == Task(id="t", project_id="p", status="failed", result_text="r", created_at=1.0)


# ---- search folding on the server --------------------------------------------------------


def test_server_folding_leaves_every_non_ascii_character_non_ascii(dsn: str) -> None:
    """_fold Rule 1 checked on the server for every code point: only ASCII letters fold
    to ASCII, U+0130 and U+212A are rewritten exactly as Python lowercases them, and no
    other character's folded form contains ASCII."""
    expr = fold_sql('chr(i) COLLATE "C"')
    with connect(dsn) as conn:
        rows = conn.execute(
            f"SELECT i, {expr} FROM generate_series(1, 1114111) AS i"
            " WHERE (i < 55296 OR i > 57343)"
            f" AND ({expr} ~ '[\\x01-\\x7f]' OR i < 128)"
        ).fetchall()
    folded = {int(i): str(text) for i, text in rows}
    assert sorted(cp for cp in folded if cp >= 128) == [0x130, 0x212A]
    for cp, text in folded.items():
        assert text == chr(cp).lower()


def test_search_is_case_insensitive_like_python_for_unicode_text(store: Any) -> None:
    prompts = {"a": "İstanbul", "b": "KELVIN \u212a", "c": "Straße ΣΑΣ", "d": "plain ascii"}
    for i, (tid, prompt) in enumerate(prompts.items()):
        store.insert_task(Task(id=tid, project_id="p", prompt=prompt, created_at=float(i + 1)))
    for q in ["i̇st", "İST", "k", "K", "ss", "ß", "σας", "ΣΑΣ", "ASCII", "", "\x00"]:
        expected = sorted((t for t, p in prompts.items() if q.lower() in p.lower()), reverse=True)
        listing = store.list_tasks("p", status=None, q=q, limit=10)
        assert [t.id for t in listing.rows] == expected, q
        assert listing.total == len(expected)


# ---- isolation and opening ---------------------------------------------------------------


def test_two_schemas_do_not_see_each_other(dsn: str) -> None:
    a = throwaway_store(World(tasks=(Task(id="t", project_id="p", prompt="A"),)))
    b = throwaway_store(World(tasks=(Task(id="t", project_id="p", prompt="B"),)))
    try:
        assert a.schema != b.schema
        ta, tb = a.get_task("t"), b.get_task("t")
        assert ta is not None and tb is not None and (ta.prompt, tb.prompt) == ("A", "B")
        assert b.transition_task("t", "running", {"status": "failed"}) is not None
        assert a.get_task("t") == ta
    finally:
        a.close()
        b.close()


def test_open_store_creates_the_schema_and_reopens_it(dsn: str, schema: str) -> None:
    with open_store(dsn, 2, schema=schema) as first:
        first.insert_task(Task(id="t", project_id="p"))
    with open_store(dsn, 1, schema=schema, must_exist=True) as again:
        assert again.get_task("t") is not None


def test_pool_size_is_validated(dsn: str, schema: str) -> None:
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="pool_size"):
            PostgresStore(dsn, pool_size=bad, schema=schema)  # type: ignore[arg-type]


@pytest.mark.rule("TRN-8")
def test_an_unreachable_server_fails_at_open_with_the_server_error() -> None:
    import psycopg

    from markertools_adapters.errors import StoreUnavailable

    with pytest.raises(StoreUnavailable, match=r"^OperationalError: connection failed") as failed:
        open_store("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    assert isinstance(failed.value.__cause__, psycopg.OperationalError)


# ---- every port lookup has an index --------------------------------------------------------

# (statement, params) pairs the adapter runs; with sequential scans disabled, the plan of
# each must not contain one (an index exists that serves it).
INDEXED = [
    ("SELECT * FROM tasks WHERE id = ANY(%s)", (["a", "b"],)),
    ("SELECT count(*) FROM tasks WHERE parent_task_id = %s AND coordinator_part IS NULL", ("a",)),
    (
        "SELECT * FROM tasks WHERE project_id = %s ORDER BY created_at DESC, id DESC LIMIT 20",
        ("p",),
    ),
    (
        "SELECT * FROM tasks WHERE project_id = %s AND status = %s"
        " ORDER BY created_at DESC, id DESC LIMIT 20",
        ("p", "running"),
    ),
    ("SELECT * FROM todos WHERE project_id = %s AND status = ANY(%s)", ("p", ["pending"])),
    ("SELECT * FROM automations WHERE status = 'active' AND next_run_at <= %s", (1.0,)),
    ("SELECT name FROM automations WHERE project_id = %s AND status = 'active'", ("p",)),
    ("SELECT * FROM costs WHERE task_id = %s", ("t",)),
    ("SELECT * FROM task_attempts WHERE task_id = %s ORDER BY attempt_no DESC LIMIT 1", ("t",)),
    ("SELECT text FROM followups WHERE task_id = %s", ("t",)),
    ("SELECT * FROM tasks WHERE created_by = %s", ("u",)),
]


@pytest.mark.parametrize(("statement", "params"), INDEXED)
def test_port_lookups_use_an_index(store: Any, dsn: str, statement: str, params: Any) -> None:
    with connect(dsn, store.schema) as conn:
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(row[0] for row in conn.execute(f"EXPLAIN {statement}", params))
    assert "Seq Scan" not in plan, plan


def test_the_index_check_detects_a_full_scan(store: Any, dsn: str) -> None:
    with connect(dsn, store.schema) as conn:
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(
            row[0] for row in conn.execute("EXPLAIN SELECT * FROM tasks WHERE prompt = 'x'")
        )
    assert "Seq Scan" in plan


def test_automation_rows_keep_next_run_at_in_step(store: Any, dsn: str) -> None:
    from markertools.domain.schedule import next_run_at

    auto = Automation(
        id="a", project_id="p", name="n", prompt="x", interval_seconds=60, created_at=100.0
    )
    store.insert_automation(auto)
    assert store.claim_automation("a", 100.0, 130.0) is True
    claimed = store.get_automation("a")
    assert claimed is not None and claimed == attrs.evolve(
        auto, last_run_at=130.0, last_slot_at=100.0, run_count=1
    )
    with connect(dsn, store.schema) as conn:
        stored = conn.execute("SELECT next_run_at FROM automations").fetchone()
    assert stored == (next_run_at(claimed),)
