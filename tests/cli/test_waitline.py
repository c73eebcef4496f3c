"""The status line of a waiting `deliver --db` (issue 36, item 2), driven by a real
delivery: `WaitLine` is the delivery's change waiter and wraps its clock (here a virtual
one), so every line it shows comes from a round the delivery made - the block (kind and
line, found in the turn's own plan), the task ids still waited for as delivery resolved
them (`@NAME` included), and the nearer of the block's timeout and the deadline."""

from __future__ import annotations

import pytest
from support.paths import REPO

from markertools import deliver_turn, parse_turn
from markertools_adapters.cli._waitline import WaitLine, clock_text, wait_text
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.sqlite import create_store_from_world
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import loads_world

TURN = """Split and wait.

```task-create
{"name": "probe", "prompt": "probe the latency"}
```

```task-poll
{"task_id": "@probe", "timeout_seconds": 30, "interval_seconds": 10}
```

```wait-threads
{"task_ids": ["t-api", "@probe"], "timeout_seconds": 900, "interval_seconds": 60}
```
"""


@pytest.mark.rule("TRN-11", "VAL-8")
def test_every_line_names_the_block_the_delivery_is_waiting_in() -> None:
    world = loads_world((REPO / "examples" / "worlds" / "shop.json").read_text())
    store = create_store_from_world(world)
    clock = VirtualClock(world.now)
    shown: list[str | None] = []
    line = WaitLine(
        parse_turn(TURN), "t-lead", clock, deadline=600, show=shown.append, after=0,
        monotonic=clock.now,
    )
    ports = store_ports(
        store, clock=line.watched, random=SeededRandom(3), executor=NoopExecutor(), waiter=line
    )
    with line:
        report = deliver_turn(TURN, sender="t-lead", outcome="completed", ports=ports)
    store.close()
    probe = report.entries[0].target
    assert probe is not None and [e.outcome for e in report.entries] == ["done"] * 3
    texts = [t for t in shown if t is not None]
    assert shown[-1] is None  # the line ends with the delivery
    poll = [t for t in texts if "task-poll" in t]
    wait = [t for t in texts if "wait-threads" in t]
    assert len(poll) + len(wait) == len(texts)
    assert poll[0] == (
        f"deliver is waiting: task-poll (line 7) for {probe} to finish, checked every 10 s"
        " · at most 0:30 more (its timeout, 30 s) · Ctrl-C stops"
    )
    assert wait[0] == (
        f"deliver is waiting: wait-threads (line 11) for t-api, {probe} to finish, checked "
        "every 60 s · at most 9:30 more (--deadline 600 s) · Ctrl-C stops"
    )  # 30 s of the deadline went to the poll
    assert wait[-1].endswith(" · at most 0:00 more (--deadline 600 s) · Ctrl-C stops")
    assert texts.index(wait[0]) > texts.index(poll[-1])  # the poll first, then the wait


@pytest.mark.rule("TRN-11")
def test_a_round_no_block_holds_names_the_ids_and_the_deadline() -> None:
    assert wait_text(
        None, ["t-1", "t-2", "t-3", "t-4"], now=10, block_started=10, deadline_at=70, deadline=60
    ) == (
        "deliver is waiting: a poll or wait for t-1, t-2, t-3 and 1 more to finish · at most "
        "1:00 more (--deadline 60 s) · Ctrl-C stops"
    )
    assert wait_text(None, [], now=0, block_started=0, deadline_at=None, deadline=None) == (
        "deliver is waiting: a poll or wait for its tasks to finish · Ctrl-C stops"
    )
    assert [clock_text(s) for s in (0, 0.2, 59.5, 61, 3600, -3)] == [
        "0:00", "0:01", "1:00", "1:01", "1:00:00", "0:00"
    ]  # fmt: skip
