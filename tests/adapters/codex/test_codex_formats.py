"""Where the agent text lives in each rollout format (one source per turn, never two),
completed turns whose text cannot be found, pre-2025 rollouts, and rollbacks / reverts
in both readers (a reverted turn is never delivered)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.strategies.codex import agent_item, line, turn_completed, turn_started
from typer.testing import CliRunner

from markertools_adapters.cli import app
from markertools_adapters.codex import (
    AppServerTurnReader,
    RolloutTurnReader,
    read_app_server_stream,
    read_rollout,
    thread_id_from_name,
)

THREAD = "01a23332-08ac-7cd3-8eb4-3f6d05fad406"
SEGMENT = "01a23336-2ed3-7ab3-a352-1d12ad66734d"
SEGMENT2 = "01a23336-aaaa-7ab3-a352-1d12ad66734d"


def rec(kind: str, ordinal: int | None = None, **payload: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"timestamp": "2026-12-01T20:00:00.000Z", "type": kind}
    if ordinal is not None:
        out["ordinal"] = ordinal
    out["payload"] = payload
    return out


def ev(kind: str, ordinal: int | None = None, **payload: Any) -> dict[str, Any]:
    return rec("event_msg", ordinal, type=kind, **payload)


def assistant(text: str, turn: str | None = None, ordinal: int | None = None) -> dict[str, Any]:
    meta = {"internal_chat_message_metadata_passthrough": {"turn_id": turn}} if turn else {}
    return rec(
        "response_item",
        ordinal,
        type="message",
        role="assistant",
        content=[{"type": "output_text", "text": text, "annotations": []}],
        **meta,
    )


def agent_item_done(turn: str, item: str, text: str, ordinal: int | None = None) -> dict[str, Any]:
    return ev(
        "item_completed",
        ordinal,
        thread_id=THREAD,
        turn_id=turn,
        item={"type": "AgentMessage", "id": item, "content": [{"type": "Text", "text": text}]},
    )


def write(path: Path, *lines: dict[str, Any] | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(x if isinstance(x, str) else json.dumps(x) + "\n" for x in lines),
        encoding="utf-8",
    )
    return path


def listing(path: Path, *extra: str) -> Any:
    result = CliRunner().invoke(app, ["parse", "--codex-rollout", str(path), *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.output) if "--json" in extra else result.output


# ---- one source of agent text per turn -------------------------------------------------------


@pytest.mark.rule("DOT-3")
def test_v0169_shape_reads_each_message_once(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.jsonl",
        rec("session_meta", 0, id=THREAD),
        ev("task_started", 1, turn_id="a", turn_attribution={"turn_id": "a"}),
        agent_item_done("a", "m1", "first"),
        assistant("first", "a"),
        agent_item_done("a", "m2", '```task-create\n{"prompt": "x"}\n```'),
        assistant('```task-create\n{"prompt": "x"}\n```', "a"),
        ev("task_complete", 6, turn_id="a", last_agent_message="```task-create\n..."),
    )
    t = read_rollout(path)
    assert t.problems == ()
    (turn,) = t.turns
    assert turn.text == 'first\n\n```task-create\n{"prompt": "x"}\n```'
    assert turn.deliverable


@pytest.mark.rule("DOT-3")
def test_fallback_sources_in_order(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.jsonl",
        ev("task_started", turn_id="items"),
        agent_item_done("items", "m1", "from the item"),
        agent_item_done("items", "m1", "from the item, completed again"),  # same id: replaced
        ev("task_complete", turn_id="items", last_agent_message="not this"),
        ev("task_started", turn_id="last"),
        ev("task_complete", turn_id="last", last_agent_message="only the last message"),
        ev("task_started", turn_id="old"),
        ev("agent_message", message="agent_message event"),
        ev("task_complete", turn_id="old", last_agent_message="not this either"),
    )
    t = read_rollout(path)
    assert t.problems == ()
    assert [x.text for x in t.turns] == [
        "from the item, completed again",
        "only the last message",
        "agent_message event",
    ]


@pytest.mark.rule("TRN-3")
def test_sources_that_disagree_taint_the_turn(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.jsonl",
        ev("task_started", turn_id="a"),
        agent_item_done("a", "m1", "one"),
        agent_item_done("a", "m2", "two"),
        assistant("one", "a"),  # the second assistant message is missing
        ev("task_complete", turn_id="a"),
    )
    t = read_rollout(path)
    (turn,) = t.turns
    assert (turn.text, turn.delivery_outcome) == ("one", "incomplete")
    assert [p.line for p in t.problems] == [5] and "differ" in t.problems[0].reason


def test_an_assistant_message_of_another_turn_is_not_taken(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.jsonl",
        ev("task_started", turn_id="a"),
        assistant("stray", "zzz"),
        assistant("mine", "a"),
        ev("task_complete", turn_id="a"),
    )
    t = read_rollout(path)
    assert [x.text for x in t.turns] == ["mine"]
    assert [p.line for p in t.problems] == [2]


@pytest.mark.rule("TRN-3")
def test_a_completed_turn_without_text_is_a_problem_not_zero_blocks(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.jsonl",
        rec("session_meta", id=THREAD),
        ev("task_started", turn_id="a"),
        ev("some_future_agent_text_event", text="```task-create\n{}\n```"),
        ev("task_complete", turn_id="a", last_agent_message=None),
        ev("task_started", turn_id="b"),
        ev("turn_aborted", turn_id="b", reason="interrupted"),  # not completed: no problem
    )
    t = read_rollout(path)
    (a, b) = t.turns
    assert (a.status, a.text, a.delivery_outcome) == ("completed", "", "incomplete")
    assert b.status == "interrupted"
    assert [p.line for p in t.problems] == [4]
    assert "turn a completed but no agent text" in t.problems[0].reason
    as_json = listing(path, "--json")
    assert as_json["problems"] == [{"line": 4, "reason": t.problems[0].reason}]
    text = listing(path)
    assert "not deliverable" in text and "line 4: turn a completed but no agent text" in text


def test_the_app_server_reports_a_completed_turn_without_an_agent_message() -> None:
    t = read_app_server_stream(
        [
            line(turn_started("t", "u")),
            line(turn_completed("t", "u")),
            line(agent_item("t", "v", "m", "")),  # an empty message is a message
            line(turn_completed("t", "v")),
        ]
    )
    assert [p.line for p in t.problems] == [2]
    assert "no agent message" in t.problems[0].reason


# ---- pre-2025 rollouts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "first",
    [
        {"record_type": "state"},
        {"id": THREAD, "timestamp": "2025-05-01T10:00:00Z", "instructions": None},
        {"type": "message", "role": "assistant", "content": []},
    ],
)
def test_a_pre_2025_rollout_is_refused_with_a_reason(tmp_path: Path, first: dict[str, Any]) -> None:
    path = write(
        tmp_path / "old.jsonl",
        first,
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]},
        ev("task_started", turn_id="a"),  # even a modern-looking line later is not read
        ev("task_complete", turn_id="a", last_agent_message="x"),
    )
    t = read_rollout(path)
    assert t.turns == ()
    (problem,) = t.problems
    assert problem.line == 1 and "before 2025" in problem.reason
    assert "before 2025" in listing(path)


# ---- rollbacks and reverts --------------------------------------------------------------------


@pytest.mark.rule("TRN-3")
def test_thread_rolled_back_drops_the_last_turns(tmp_path: Path) -> None:
    turns = []
    for name in ("a", "b", "c"):
        turns += [ev("task_started", turn_id=name), ev("agent_message", message=name)]
        turns.append(ev("task_complete", turn_id=name))
    path = write(
        tmp_path / "r.jsonl",
        *turns,
        ev("thread_rolled_back", num_turns=2),
        ev("task_started", turn_id="d"),
        ev("agent_message", message="d"),
        ev("task_complete", turn_id="d"),
    )
    t = read_rollout(path)
    assert [x.turn_id for x in t.turns] == ["a", "d"]
    (problem,) = t.problems
    assert problem.line == 10 and "b, c" in problem.reason
    # the incremental reader returned b and c before it knew: it lists them as reverted
    reader = RolloutTurnReader()
    returned = [x.turn_id for x in reader.feed(path.read_bytes())]
    assert returned == ["a", "b", "c", "d"]
    assert sorted(k[0] for k in reader.reverted) == ["b", "c"]


def test_a_rollback_without_a_count_drops_every_earlier_turn(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.jsonl",
        ev("task_started", turn_id="a"),
        ev("agent_message", message="a"),
        ev("task_complete", turn_id="a"),
        ev("thread_rolled_back", num_turns="two"),
    )
    t = read_rollout(path)
    assert t.turns == () and "every earlier turn" in t.problems[0].reason


def _turn(name: str, first: int) -> list[dict[str, Any]]:
    return [
        ev("task_started", first, turn_id=name),
        agent_item_done(name, f"m-{name}", name, first + 1),
        assistant(name, name, first + 2),
        ev("task_complete", first + 3, turn_id=name, last_agent_message=name),
    ]


def _segment_meta(own: str, base: str, cut: int) -> dict[str, Any]:
    return rec(
        "session_meta",
        cut,
        id=THREAD,
        history_base={"thread_id": base, "end_ordinal_exclusive": cut, "end_byte_offset": 1},
    )


@pytest.mark.rule("TRN-3")
def test_a_revert_segment_cuts_the_file_it_continues(tmp_path: Path) -> None:
    day1, day2 = tmp_path / "sessions/2026/12/01", tmp_path / "sessions/2026/12/02"
    base = write(
        day1 / f"rollout-2026-12-01T20-00-00-{THREAD}.jsonl",
        rec("session_meta", 0, id=THREAD),
        *_turn("a", 1),
        *_turn("b", 5),
        *_turn("c", 9),
    )
    assert [x.turn_id for x in read_rollout(base).turns] == ["a", "b", "c"]
    # thread/revert before b, a day later: the segment lives in another day's folder
    segment = write(
        day2 / f"rollout-2026-12-01T20-00-00-{THREAD}_{SEGMENT}.jsonl",
        _segment_meta(SEGMENT, THREAD, 5),
        *_turn("d", 6),
    )
    t = read_rollout(base)
    assert [x.turn_id for x in t.turns] == ["a"]
    assert [p.line for p in t.problems] == [6, 10]
    assert all(SEGMENT in p.reason and "never delivered" in p.reason for p in t.problems)
    assert [x.turn_id for x in read_rollout(segment).turns] == ["d"]
    assert thread_id_from_name(segment) == THREAD
    # a second revert, before a, from the first file again: d's segment is dead
    write(
        day2 / f"rollout-2026-12-02T09-00-00-{THREAD}_{SEGMENT2}.jsonl",
        _segment_meta(SEGMENT2, THREAD, 1),
        *_turn("e", 2),
    )
    assert read_rollout(base).turns == ()
    assert read_rollout(segment).turns == ()
    assert "not in the live history" in read_rollout(segment).problems[0].reason


def test_an_unreadable_segment_reverts_everything(tmp_path: Path) -> None:
    base = write(
        tmp_path / f"rollout-2026-12-01T20-00-00-{THREAD}.jsonl",
        rec("session_meta", 0, id=THREAD),
        *_turn("a", 1),
    )
    write(tmp_path / f"rollout-2026-12-01T20-00-00-{THREAD}_{SEGMENT}.jsonl", "{oops\n")
    t = read_rollout(base)
    assert t.turns == ()
    assert t.problems[0].line == 0 and "history_base" in t.problems[0].reason


@pytest.mark.rule("TRN-3")
def test_thread_reverted_drops_every_earlier_turn_of_that_thread() -> None:
    reverted = {"method": "thread/reverted", "params": {"threadId": "t"}}
    messages = [
        turn_started("t", "a"),
        agent_item("t", "a", "m1", "a"),
        turn_completed("t", "a"),
        agent_item("other", "x", "m2", "x"),
        turn_completed("other", "x"),
        turn_started("t", "open"),
        reverted,
        agent_item("t", "open", "m3", "late"),
        turn_completed("t", "open"),  # reverted while open: never returned
        turn_started("t", "b"),
        agent_item("t", "b", "m4", "b"),
        turn_completed("t", "b"),
    ]
    t = read_app_server_stream(line(m) for m in messages)
    assert [(x.thread_id, x.turn_id) for x in t.turns] == [("other", "x"), ("t", "b")]
    assert [p.line for p in t.problems] == [7, 9]
    assert "a, open" in t.problems[0].reason
    reader = AppServerTurnReader()
    returned = [x.turn_id for m in messages for x in reader.feed(line(m))]
    assert returned == ["a", "x", "b"]  # a was returned before the revert was known
    assert sorted(reader.reverted) == [("t", "a"), ("t", "open")]
