"""Issue 27 item 2 on every store (memory, the toy kit store, SQLite, PostgreSQL): a turn
id cannot be fooled. The digest of the turn's input is journalled with the turn id
(`turn_digest`); delivering the same turn id again with other text raises
`TurnIdReused` - naming the turn id and both digests' heads - and changes nothing,
where it used to return the first report and silently drop the new blocks. A journal
written before digests existed (no digest row) still replays."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest
from support.exactly_once import NOW, TURN, ports_for, snapshot, world

from markertools import TurnIdReused, deliver_turn, parse_turn, turn_digest
from markertools.deliver.once import DIGEST_POSITION

MakeStore = Callable[[Any], Any]
OTHER = TURN.replace("second child", "a third child") + (
    '\n```todo-create\n{"title": "a todo the first text never had"}\n```\n'
)


def deliver(store: Any, text: str = TURN, turn_id: str = "turn-1") -> Any:
    """The turn of the exactly-once suite as sender t-s, with a turn id."""
    return deliver_turn(
        text, sender="t-s", outcome="completed", ports=ports_for(store), turn_id=turn_id
    )


def _digest_head(text: str) -> str:
    return turn_digest(text)[: len("text:") + 12]


@pytest.mark.rule("TRN-9")
def test_the_same_turn_id_with_other_text_is_refused_and_changes_nothing(
    make_store: MakeStore,
) -> None:
    store = make_store(world())
    first = deliver(store)  # turn id "turn-1"
    assert first.delivered and not first.replayed
    before = snapshot(store)
    with pytest.raises(TurnIdReused) as raised:
        deliver(store, OTHER)
    error = raised.value
    assert isinstance(error, ValueError)
    assert (error.sender, error.turn_id) == ("t-s", "turn-1")
    assert (error.stored, error.given) == (
        turn_digest(TURN) + "|outcome:completed",
        turn_digest(OTHER) + "|outcome:completed",
    )
    assert str(error) == (
        "turn id 'turn-1' of sender 't-s' was already delivered with other input (journalled"
        f" digest {_digest_head(TURN)}…/completed, this one {_digest_head(OTHER)}…/completed):"
        " nothing was run or replayed; a turn id names one turn of one sender task - give a"
        " new turn its own id"
    )
    assert snapshot(store) == before  # no task, todo, audit record or follow-up more
    assert not any(t.title.startswith("a todo the first") for t in store.export_world(NOW).todos)
    again = deliver(store)  # the same text is still a replay
    assert again.replayed and again.entries == first.entries
    fresh = deliver(store, OTHER, turn_id="turn-2")  # a new turn has its own id
    assert fresh.delivered and not fresh.replayed
    assert any(t.title.startswith("a todo the first") for t in store.export_world(NOW).todos)


@pytest.mark.rule("TRN-9")
def test_a_turn_id_is_unique_per_sender_and_a_plan_has_a_digest_of_its_own(
    make_store: MakeStore,
) -> None:
    store = make_store(world())
    ports = ports_for(store)
    deliver_turn("All done.", sender="t-s", outcome="completed", ports=ports, turn_id="shared")
    # another sender's turn may use the same id: the scope is (sender, turn id)
    other = deliver_turn(TURN, sender="t-run", outcome="completed", ports=ports, turn_id="shared")
    assert other.delivered and not other.replayed
    # the plan of the text is other input than the text: refused, not silently replayed
    with pytest.raises(TurnIdReused, match="plan:"):
        plan = parse_turn("All done.")
        deliver_turn(plan, sender="t-s", outcome="completed", ports=ports, turn_id="shared")
    plan = parse_turn(TURN)
    assert turn_digest(plan) == turn_digest(parse_turn(TURN)) != turn_digest(TURN)
    assert turn_digest(plan).startswith("plan:") and len(turn_digest(plan)) == 5 + 64


@pytest.mark.rule("TRN-9", "TRN-10")
def test_a_discarded_turn_id_is_pinned_to_its_text_too(make_store: MakeStore) -> None:
    store = make_store(world())
    ports = ports_for(store)
    failed = deliver_turn(TURN, sender="t-s", outcome="failed", ports=ports, turn_id="turn-9")
    assert failed.delivered is False
    with pytest.raises(TurnIdReused):
        deliver_turn(OTHER, sender="t-s", outcome="completed", ports=ports, turn_id="turn-9")
    replay = deliver_turn(TURN, sender="t-s", outcome="failed", ports=ports, turn_id="turn-9")
    assert replay.replayed and replay.not_delivered == failed.not_delivered


@attrs.define
class WithoutDigests:
    """The journal of a store as a release before issue 27 wrote it: no digest rows."""

    store: Any

    def record_block(self, sender: str, turn_id: str, position: int, entry: str) -> None:
        if position != DIGEST_POSITION:
            self.store.record_block(sender, turn_id, position, entry)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


@pytest.mark.rule("TRN-9")
def test_a_journal_without_a_digest_row_matches_and_is_left_as_it_is(
    make_store: MakeStore,
) -> None:
    store = make_store(world())
    old = attrs.evolve(ports_for(store), journal=WithoutDigests(store))
    first = deliver_turn(TURN, sender="t-s", outcome="completed", ports=old, turn_id="turn-1")
    assert DIGEST_POSITION not in store.block_entries("t-s", "turn-1")
    before = snapshot(store)
    replay = deliver(store, OTHER)  # today's code on the old journal: a replay, as before
    assert replay.replayed and replay.entries == first.entries
    assert snapshot(store) == before
    assert DIGEST_POSITION not in store.block_entries("t-s", "turn-1")  # no wrong digest
