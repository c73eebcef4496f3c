"""Who priced a cost row (issue 39, WRK-8) on every store - memory, the toy kit store,
SQLite and PostgreSQL: `priced_by` ("claude-code", "table", None) is kept by every writer
(`record_cost`, `finish_turn`, `charge_turn`), read back by `task_costs`, replayed with a
finished turn, exported to a world and loaded back; and FLT-6's digest of a turn whose
cost names no pricer is the one a store kept before the field existed."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from markertools import CostRow, Quota, Task, TurnCost, TurnFinishedDifferently, finish_digest
from markertools_adapters.world import World, dumps_world, loads_world

MakeStore = Callable[[World], Any]
NOW = 1_798_333_200.0


def _world() -> World:
    return World(
        now=NOW,
        tasks=(Task("t1", "p1", status="running", created_by="u1", prompt="work"),),
        quotas=(Quota("u1", 10, 0),),
    )


@pytest.mark.rule("WRK-8")
def test_every_writer_keeps_who_priced_the_row_and_a_world_carries_it(
    make_store: MakeStore,
) -> None:
    store = make_store(_world())
    store.record_cost(CostRow("t1", 1, Decimal("0.5"), 10, priced_by="table"))
    charged = store.charge_turn(
        "t1", "turn-2", TurnCost(Decimal("0.25"), 20, priced_by="claude-code")
    )
    assert charged.cost == CostRow("t1", 2, Decimal("0.25"), 20, priced_by="claude-code")
    done = store.finish_turn(
        "t1", "turn-3", outcome="completed", result_text="ok", cost=TurnCost(None, 30, priced=False)
    )
    assert done.cost is not None and done.cost.priced_by is None
    rows = store.task_costs("t1")
    assert [(r.round, r.priced_by) for r in rows] == [(1, "table"), (2, "claude-code"), (3, None)]
    assert store.get_quota("u1").used_usd == Decimal("0.25")  # record_cost charges nothing

    again = store.charge_turn(
        "t1", "turn-2", TurnCost(Decimal("0.25"), 20, priced_by="claude-code")
    )
    assert again.replayed and again.cost == charged.cost  # the replay says who priced it

    exported = store.export_world(NOW)
    text = dumps_world(exported)
    costs = json.loads(text)["costs"]
    assert [c.get("priced_by") for c in costs] == ["table", "claude-code", None]
    assert "priced_by" not in costs[2]  # a row that names no pricer dumps as before
    reloaded = make_store(loads_world(text))
    assert reloaded.task_costs("t1") == rows


@pytest.mark.rule("FLT-6")
def test_a_turn_whose_cost_names_no_pricer_keeps_the_digest_of_before(
    make_store: MakeStore,
) -> None:
    store = make_store(_world())
    cost = TurnCost(Decimal("1.5"), 5)
    done = store.finish_turn("t1", "turn-1", outcome="completed", result_text="ok", cost=cost)
    # the digest as markertools computed it before `priced_by` existed
    canonical = json.dumps(
        ["completed", "ok", None, ["1500000", 5, False, True], False], separators=(",", ":")
    )
    assert done.digest == "finish:" + hashlib.sha256(canonical.encode()).hexdigest()
    assert done.digest == finish_digest("completed", "ok", None, cost, False)

    named = TurnCost(Decimal("1.5"), 5, priced_by="table")
    assert finish_digest("completed", "ok", None, named, False) != done.digest
    with pytest.raises(TurnFinishedDifferently):
        store.finish_turn("t1", "turn-1", outcome="completed", result_text="ok", cost=named)
    same = store.finish_turn("t1", "turn-1", outcome="completed", result_text="ok", cost=cost)
    assert same.replayed and same.cost == done.cost


@pytest.mark.rule("WRK-8")
def test_a_pricer_that_is_not_text_is_refused() -> None:
    with pytest.raises(TypeError, match=r"^TurnCost.priced_by: expected a string or None, got int"):
        TurnCost(1, 2, priced_by=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^CostRow.priced_by: expected a string or None"):
        CostRow("t1", 1, priced_by=b"table")  # type: ignore[arg-type]
