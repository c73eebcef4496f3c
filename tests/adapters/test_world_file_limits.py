"""`loads_world` keeps its promise (issue 19): whatever the text, only WorldFileError;
a duplicate key is refused as in block bodies; `merge_worlds` adds or refuses whole."""

from __future__ import annotations

import json

import pytest

from markertools.domain.model import Task
from markertools_adapters.world import (
    MergeConflict,
    World,
    WorldFileError,
    dumps_world,
    loads_world,
    merge_worlds,
)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('{"now": 1, "now": 2}', 'duplicate key "now"'),
        ('{"now": 1, "tasks": [{"id": "t", "id": "u", "project_id": "p"}]}', 'duplicate key "id"'),
        ('{"now": ' + "1" * 5000 + "}", "5000 digits"),
        ('{"now": -' + "9" * 31 + "}", "31 digits"),
        ("[" * 100_000, "nested"),
        ('{"now": 1, "tasks": ' + "[" * 500 + "]" * 500 + "}", "nested"),
        ('{"now": NaN}', "NaN"),
        ("\ud800", "not JSON"),
    ],
)
def test_only_world_file_errors(text: str, needle: str) -> None:
    with pytest.raises(WorldFileError) as info:
        loads_world(text)
    assert needle in str(info.value)


def test_a_dump_loads_back_equal() -> None:
    world = loads_world(json.dumps({"now": 5, "tasks": [{"id": "t", "project_id": "p"}]}))
    assert loads_world(dumps_world(world)) == world


def test_merge_keeps_identical_records_once_and_lists_conflicts() -> None:
    base = World(now=10, tasks=(Task("t1", "p"), Task("t2", "p")))
    extra = World(now=99, tasks=(Task("t1", "p"), Task("t3", "p")))
    merged, added = merge_worlds(base, extra)
    assert [t.id for t in merged.tasks] == ["t1", "t2", "t3"] and merged.now == 10
    assert [t.id for t in added.tasks] == ["t3"]
    with pytest.raises(MergeConflict) as info:
        merge_worlds(base, World(now=1, tasks=(Task("t1", "p", status="failed"), Task("t2", "q"))))
    assert info.value.conflicts == ("tasks t1", "tasks t2")
