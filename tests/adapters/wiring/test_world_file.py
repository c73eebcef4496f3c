"""The world file (docs/cli.md): the documented example loads, omitted lists are empty, omitted
fields take the documented defaults (created_at = now), `now` as epoch or ISO 8601 with an
offset, strict types, errors naming the bad field, unknown fields rejected, exact round trip."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from support.strategies.core import world_files

from markertools.domain.model import Automation, Environment, Project, Task, Todo
from markertools_adapters.world import (
    World,
    WorldFileError,
    dumps_world,
    loads_world,
    world_from_json,
    world_to_json,
)

CLI_EXAMPLE = {
    "now": 1798333200,
    "projects": [
        {
            "id": "p1",
            "name": "shop",
            "repo_url": None,
            "environment": {"name": "dev", "branch": "main", "status": "ready"},
        }
    ],
    "permissions": [
        {"user": "u1", "project": "p1", "grants": ["read", "create_task", "approve_merge"]}
    ],
    "tasks": [
        {
            "id": "t1",
            "project_id": "p1",
            "status": "running",
            "created_by": "u1",
            "parent_task_id": None,
            "executor": "local",
            "environment_id": None,
            "model": None,
            "effort": None,
            "goal_mode": False,
            "verify_command": None,
            "is_coordinator": False,
            "coordinator_part": None,
            "prompt": "...",
            "result_text": None,
            "error_text": None,
            "actual_model": None,
            "worktree": None,
            "host": None,
            "created_at": 1798330000,
        }
    ],
    "todos": [
        {
            "id": "d1",
            "project_id": "p1",
            "title": "...",
            "description": None,
            "status": "pending",
            "priority": "medium",
            "due_at": None,
            "task_id": None,
            "sort_order": None,
            "completed_at": None,
        }
    ],
    "automations": [
        {
            "id": "a1",
            "project_id": "p1",
            "name": "nightly",
            "prompt": "...",
            "interval_seconds": 86400,
            "first_run_at": None,
            "run_once": False,
            "bind": None,
            "bound_task_id": None,
            "repo_url": None,
            "status": "active",
            "created_by": "u1",
            "created_at": 1798330000,
            "last_run_at": None,
            "run_count": 0,
        }
    ],
    "costs": [
        {
            "task_id": "t1",
            "round": 1,
            "usd": 0.12,
            "tokens": 3000,
            "estimated": False,
            "priced": True,
        }
    ],
    "quotas": [{"user": "u1", "total_usd": 50.0, "used_usd": 12.5}],
}


def error_of(obj) -> str:
    with pytest.raises(WorldFileError) as info:
        world_from_json(obj)
    return str(info.value)


def test_the_documented_example_loads():
    world = world_from_json(CLI_EXAMPLE)
    assert world.now == 1798333200.0
    assert world.projects == (Project("p1", "shop", None, Environment("dev", "main", "ready")),)
    assert world.tasks[0] == Task(
        "t1", "p1", created_by="u1", prompt="...", created_at=1798330000.0
    )
    assert world.todos[0] == Todo("d1", "p1", "...", created_at=1798333200.0)
    assert world.automations[0].created_at == 1798330000.0
    assert world.quotas[0].total_usd == 50.0


def test_omitted_lists_are_empty_and_fields_take_the_documented_defaults():
    world = world_from_json(
        {
            "now": 1000,
            "tasks": [{"id": "t1", "project_id": "p1"}],
            "todos": [{"id": "d1", "project_id": "p1"}],
            "automations": [{"id": "a1", "project_id": "p1", "name": "n", "prompt": "p"}],
        }
    )
    assert (world.projects, world.permissions, world.costs, world.quotas) == ((), (), (), ())
    assert world.tasks[0] == Task("t1", "p1", status="running", created_at=1000.0)
    assert world.todos[0] == Todo(
        "d1", "p1", status="pending", priority="medium", created_at=1000.0
    )
    assert world.automations[0] == Automation(
        "a1", "p1", "n", "p", status="active", created_at=1000.0
    )


@pytest.mark.parametrize(
    "now,expected",
    [
        ("2026-12-27T10:00:00+08:00", 1798336800.0),
        ("2026-12-27T02:00:00Z", 1798336800.0),
        (1798336800.5, 1798336800.5),
    ],
)
def test_now_as_epoch_or_iso_with_offset(now, expected):
    assert world_from_json({"now": now}).now == expected


@pytest.mark.parametrize(
    "now,needle",
    [
        ("2026-12-27T10:00:00", "now: '2026-12-27T10:00:00' has no UTC offset"),
        ("tomorrow", "now: 'tomorrow' is not an ISO 8601"),
        (True, "now: expected a number, got a boolean"),
        (None, "now: expected a number, got null"),
    ],
)
def test_bad_now_is_an_error_naming_now(now, needle):
    assert needle in error_of({"now": now})


def test_now_is_required():
    assert error_of({}).startswith("now: required")


@pytest.mark.parametrize(
    "patch,needle",
    [
        (
            {
                "tasks": [
                    {"id": "a", "project_id": "p"},
                    {"id": "b", "project_id": "p"},
                    {"id": "c", "project_id": "p", "status": "done"},
                ]
            },
            'tasks[2].status: expected one of queued, running, completed, failed, interrupted, merged, merge-failed, got "done"',
        ),
        (
            {"tasks": [{"id": "a", "project_id": "p", "stauts": "queued"}]},
            "tasks[0]: unknown field(s) 'stauts'",
        ),
        ({"tasks": [{"id": "a"}]}, "tasks[0].project_id: required field missing"),
        (
            {"tasks": [{"id": "a", "project_id": "p", "created_at": "1798330000"}]},
            "tasks[0].created_at: expected a number, got the string",
        ),
        (
            {"tasks": [{"id": "a", "project_id": "p", "goal_mode": 1}]},
            "tasks[0].goal_mode: expected true or false",
        ),
        (
            {"tasks": [{"id": "a", "project_id": "p", "executor": "k8s"}]},
            "tasks[0].executor: expected one of local, docker, cloud",
        ),
        (
            {"tasks": [{"id": "a", "project_id": "p", "effort": "huge"}]},
            "tasks[0].effort: expected one of null, low",
        ),
        (  # the storage half of ENG-1: a task's engine is one of the two engines
            {"tasks": [{"id": "a", "project_id": "p", "engine": "gpt"}]},
            'tasks[0].engine: expected one of null, codex, claude-code, got "gpt"',
        ),
        (
            {"tasks": [{"id": "a", "project_id": "p", "engine": 1}]},
            "tasks[0].engine: expected a string, got the number 1",
        ),
        ({"tasks": [{"id": "", "project_id": "p"}]}, "tasks[0].id: must not be empty"),
        (
            {"tasks": [{"id": "a", "project_id": "p"}, {"id": "a", "project_id": "p"}]},
            "tasks[1].id: duplicate 'a' (first at tasks[0])",
        ),
        ({"tasks": {"id": "a"}}, "tasks: expected a list, got an object"),
        ({"tasks": ["t1"]}, "tasks[0]: expected an object"),
        (
            {"costs": [{"task_id": "t", "round": 1.5}]},
            "costs[0].round: expected an integer, got 1.5",
        ),
        (
            {"costs": [{"task_id": "t", "round": 1, "tokens": -3}]},
            "costs[0].tokens: must not be negative",
        ),
        (
            {"permissions": [{"user": "u", "project": "p", "grants": "read"}]},
            "permissions[0].grants: expected a list of strings",
        ),
        (
            {"permissions": [{"user": "u", "project": "p", "grants": ["raed"]}]},
            "permissions[0].grants[0]: expected one of read, create_task, approve_merge",
        ),
        (
            {"projects": [{"id": "p", "environment": {"nmae": "dev"}}]},
            "projects[0].environment: unknown field(s) 'nmae'",
        ),
        (
            {"todos": [{"id": "d", "project_id": "p", "priority": "urgent"}]},
            "todos[0].priority: expected one of low, medium, high",
        ),
        (
            {
                "automations": [
                    {"id": "a", "project_id": "p", "name": "n", "prompt": "p", "bind": "hourly"}
                ]
            },
            "automations[0].bind: expected one of null, cron, heartbeat",
        ),
        ({"quotas": [{"user": "u", "total_usd": "50"}]}, "quotas[0].total_usd: expected a number"),
        ({"tsks": []}, "tsks: unknown top-level field"),
    ],
)
def test_errors_name_the_bad_field(patch, needle):
    assert needle in error_of({"now": 1000, **patch})


def test_an_error_names_the_other_problems():
    """Issue 24: "(and 1 more problem(s))" did not say which; now each is named."""
    message = error_of(
        {"now": 1, "tasks": [{"id": "a", "project_id": "p", "status": "x"}, {"id": "b"}]}
    )
    assert message == (
        "tasks[1].project_id: required field missing (1 more problem: tasks[0].status: "
        'expected one of queued, running, completed, failed, interrupted, merged, '
        'merge-failed, got "x")'
    )


def test_many_problems_are_named_in_full_then_by_path_on_one_line():
    tasks = [{"id": f"t{i}", "project_id": "p", "status": "x"} for i in range(20)]
    message = error_of({"now": 1, "tasks": tasks})
    assert "\n" not in message
    first, rest = message.split(" (19 more problems: ", 1)
    assert first.startswith("tasks[0].status: expected one of")
    in_full, by_path = rest.split("; also at ")
    assert [p.split(": ")[0] for p in in_full.split("; ")] == [
        "tasks[1].status",
        "tasks[2].status",
        "tasks[3].status",
    ]
    named = [f"tasks[{i}].status" for i in range(4, 14)]
    assert by_path == ", ".join(named) + " and 6 more)"


def test_loads_world_rejects_non_json_and_nan():
    with pytest.raises(WorldFileError, match="not JSON"):
        loads_world("{now: 1}")
    with pytest.raises(WorldFileError, match="NaN"):
        loads_world('{"now": NaN}')
    with pytest.raises(WorldFileError, match="expected a JSON object"):
        loads_world("[1]")


def test_dump_has_the_documented_shape():
    out = world_to_json(world_from_json(CLI_EXAMPLE))
    for key in CLI_EXAMPLE:
        assert key in out
    assert out["tasks"][0]["created_at"] == 1798330000  # integral floats as integers
    assert set(CLI_EXAMPLE["tasks"][0]) <= set(out["tasks"][0])
    assert out["now"] == 1798333200
    assert json.loads(dumps_world(world_from_json(CLI_EXAMPLE))) == out


@given(world_files())
def test_dump_then_load_round_trips_exactly(world):
    assert loads_world(dumps_world(world)) == world


def test_the_example_round_trips():
    world = world_from_json(CLI_EXAMPLE)
    assert world_from_json(world_to_json(world)) == world
    assert isinstance(world, World)


def test_a_loaded_world_can_then_be_stored_in_sqlite_in_a_fresh_process():
    """Structuring records with cattrs resolves their annotations (attrs.resolve_types);
    the SQLite codec imported afterwards must still understand them."""
    import subprocess
    import sys

    code = (
        "import json, sys\n"
        "from markertools_adapters.world import world_from_json\n"
        "world = world_from_json(json.loads(sys.argv[1]))\n"
        "from markertools_adapters.sqlite import create_store_from_world\n"
        "store = create_store_from_world(world)\n"
        "from markertools_adapters.memory import MemoryStore\n"
        "expected = MemoryStore.from_world(world).export_world(world.now)\n"
        "assert store.export_world(world.now) == expected, 'sqlite and memory disagree'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(CLI_EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
