"""The app-server stream reader: fixtures validated against the upstream JSON Schemas,
turn assembly, statuses, errors, threads, malformed input."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from support.strategies.codex import (
    APPSERVER_STREAM,
    FIXTURES,
    agent_item,
    delta,
    error_note,
    line,
    turn_completed,
    turn_started,
    validate_notification,
)

from markertools_adapters.codex import (
    AppServerTurnReader,
    CodexTurn,
    read_app_server_events,
    read_app_server_stream,
)

# ---- the fixtures speak the real protocol -----------------------------------------------


def test_fixture_stream_notifications_validate_against_upstream_schemas() -> None:
    checked = 0
    for raw in APPSERVER_STREAM.read_text().splitlines():
        checked += validate_notification(json.loads(raw))
    assert checked >= 25  # the stream's turn/item/error notifications were all checked


def test_builders_validate_against_upstream_schemas() -> None:
    for message in (
        turn_started("t", "u"),
        turn_completed("t", "u", "failed", "boom"),
        agent_item("t", "u", "m", "x"),
        agent_item("t", "u", "m", "", "item/started"),
        error_note("t", "u", "x", True),
    ):
        assert validate_notification(message)


def test_schema_validation_rejects_a_wrong_shape() -> None:
    bad = agent_item("t", "u", "m", "x")
    del bad["params"]["item"]["text"]
    with pytest.raises(jsonschema.ValidationError):
        validate_notification(bad)
    with pytest.raises(jsonschema.ValidationError):
        validate_notification(turn_completed("t", "u", "cancelled"))


# ---- the fixture stream, turn by turn ---------------------------------------------------


def _by_id(turns: tuple[CodexTurn, ...]) -> dict[str, CodexTurn]:
    return {t.turn_id: t for t in turns}


def test_fixture_stream_turns() -> None:
    transcript = read_app_server_events(APPSERVER_STREAM)
    assert transcript.problems == ()
    assert [(t.thread_id, t.turn_id, t.status) for t in transcript.turns] == [
        ("thr_a", "turn_a1", "completed"),
        ("thr_a", "turn_a2", "interrupted"),
        ("thr_b", "turn_b1", "completed"),
        ("thr_a", "turn_a3", "failed"),
        ("thr_b", "turn_b2", "inProgress"),  # open when the stream ended
    ]
    turns = _by_id(transcript.turns)
    # two agent messages joined by a blank line; reasoning text (which holds a fence) and
    # deltas are not part of it
    assert turns["turn_a1"].text == (
        "I will hand the parser work to a helper.\n\n```task-create\n"
        '{"prompt": "Rewrite the parser", "name": "parser"}\n```\n'
        "\n\n"
        'And I keep a todo for the docs:\n\n```todo-create\n{"title": "Document the parser"}\n```'
    )
    assert "from reasoning" not in turns["turn_a1"].text
    assert turns["turn_a1"].error is None  # the retried error does not count
    assert turns["turn_b1"].text.startswith("Thread b, first part.\n\n```task-poll")
    assert "1. read" not in turns["turn_b1"].text  # plan items are not agent text
    assert turns["turn_a3"].error == "You've hit your usage limit."
    assert turns["turn_b2"].text == ""  # only a delta arrived: deltas never build text
    assert transcript.last_completed() == turns["turn_b1"]


@pytest.mark.rule("TRN-3")
def test_only_completed_turns_are_deliverable() -> None:
    turns = _by_id(read_app_server_events(APPSERVER_STREAM).turns)
    assert {k: t.delivery_outcome for k, t in turns.items()} == {
        "turn_a1": "completed",
        "turn_a2": "interrupted",
        "turn_b1": "completed",
        "turn_a3": "failed",
        "turn_b2": "unfinished",
    }
    assert [k for k, t in turns.items() if t.deliverable] == ["turn_a1", "turn_b1"]


def test_feeding_byte_by_byte_equals_whole_file() -> None:
    data = APPSERVER_STREAM.read_bytes()
    whole = read_app_server_stream([data])
    reader = AppServerTurnReader()
    turns: list[CodexTurn] = []
    for i in range(len(data)):
        turns.extend(reader.feed(data[i : i + 1]))
    turns.extend(reader.close())
    assert tuple(turns) == whole.turns


def test_turns_are_yielded_when_their_turn_completed_line_arrives() -> None:
    reader = AppServerTurnReader()
    assert reader.feed(line(turn_started("t", "u"))) == []
    assert reader.feed(line(agent_item("t", "u", "m", "hi"))) == []
    partial = line(turn_completed("t", "u"))
    assert reader.feed(partial[:-5]) == []  # no newline yet: nothing processed
    done = reader.feed(partial[-5:])
    assert [(t.turn_id, t.text, t.line) for t in done] == [("u", "hi", 3)]
    assert reader.close() == []


def test_feed_message_accepts_decoded_messages() -> None:
    reader = AppServerTurnReader()
    reader.feed_message(agent_item("t", "u", "m", "a"))
    (turn,) = reader.feed_message(turn_completed("t", "u"), line=7)
    assert (turn.text, turn.line) == ("a", 7)
    reader.feed_message(["not", "an", "object"], line=8)
    assert [p.line for p in reader.problems] == [8]


# ---- statuses and errors ----------------------------------------------------------------


def _read(*messages: dict[str, Any] | str) -> Any:
    return read_app_server_stream(m if isinstance(m, str) else line(m) for m in messages)


def test_in_progress_never_ends_a_turn() -> None:
    t = _read(
        agent_item("t", "u", "m", "x"),
        turn_completed("t", "u", "inProgress"),
        agent_item("t", "u", "m2", "y"),
        turn_completed("t", "u"),
    )
    assert [(x.status, x.text) for x in t.turns] == [("completed", "x\n\ny")]
    assert "inProgress" in t.problems[0].reason and t.problems[0].line == 2


def test_retried_error_neither_ends_nor_fails_the_turn() -> None:
    t = _read(
        agent_item("t", "u", "m", "x"),
        error_note("t", "u", "retrying", True),
        turn_completed("t", "u"),
    )
    assert [(x.status, x.error) for x in t.turns] == [("completed", None)]


def test_final_error_message_is_kept_when_turn_completed_has_none() -> None:
    t = _read(error_note("t", "u", "quota", False), turn_completed("t", "u", "failed"))
    assert [(x.status, x.error) for x in t.turns] == [("failed", "quota")]
    t = _read(error_note("t", "u", "not steerable", False), turn_completed("t", "u"))
    assert [(x.status, x.error) for x in t.turns] == [("completed", None)]


def test_turn_error_field_wins_over_error_notification() -> None:
    t = _read(error_note("t", "u", "a", False), turn_completed("t", "u", "failed", "b"))
    assert t.turns[0].error == "b"


@pytest.mark.rule("TRN-3")
def test_unknown_status_is_a_problem_and_the_turn_stays_unfinished() -> None:
    t = _read(agent_item("t", "u", "m", "x"), turn_completed("t", "u", "cancelled"))
    assert [(x.status, x.delivery_outcome, x.problem_lines) for x in t.turns] == [
        ("inProgress", "unfinished", (2,))
    ]


def test_responses_and_server_requests_are_ignored() -> None:
    t = _read(
        {"id": 1, "result": {"turn": {"id": "u", "status": "inProgress", "items": []}}},
        {"id": 2, "error": {"code": -32600, "message": "bad"}},
        {"id": 0, "method": "item/completed", "params": {"threadId": "t"}},  # a request
        {"id": 3, "method": "item/tool/requestUserInput", "params": {}},
        {"method": "some/future/method", "params": {"x": 1}},
        {
            "method": "item/completed",
            "params": {"threadId": "t", "turnId": "u", "item": {"type": "futureItem", "id": "f"}},
        },
        agent_item("t", "u", "m", "ok"),
        turn_completed("t", "u"),
    )
    assert [x.text for x in t.turns] == ["ok"] and t.problems == ()


def test_turn_items_are_a_fallback_only_when_no_item_completed_arrived() -> None:
    done = turn_completed("t", "u")
    done["params"]["turn"]["items"] = [{"type": "agentMessage", "id": "m", "text": "from items"}]
    assert [x.text for x in _read(done).turns] == ["from items"]
    assert [x.text for x in _read(agent_item("t", "u", "m", "streamed"), done).turns] == [
        "streamed"
    ]


def test_item_completed_twice_keeps_position_and_last_text() -> None:
    t = _read(
        agent_item("t", "u", "m1", "one"),
        agent_item("t", "u", "m2", "two"),
        agent_item("t", "u", "m1", "ONE"),
        turn_completed("t", "u"),
    )
    assert t.turns[0].text == "ONE\n\ntwo"


def test_empty_messages_add_no_blank_lines() -> None:
    t = _read(
        agent_item("t", "u", "a", ""), agent_item("t", "u", "b", "x"), turn_completed("t", "u")
    )
    assert t.turns[0].text == "x"


def test_late_events_after_turn_completed_are_reported_not_applied() -> None:
    t = _read(
        agent_item("t", "u", "m", "x"),
        turn_completed("t", "u"),
        agent_item("t", "u", "m2", "late"),
        turn_completed("t", "u"),
    )
    assert [x.text for x in t.turns] == ["x"]
    assert [p.line for p in t.problems] == [3, 4]
    assert t.turns[0].problem_lines == ()


def test_threads_sharing_a_stream_keep_their_own_text() -> None:
    t = _read(
        turn_started("A", "1"),
        turn_started("B", "1"),  # same turn id in another thread
        agent_item("A", "1", "m", "from A"),
        agent_item("B", "1", "m", "from B"),
        delta("A", "1", "m", "noise"),
        turn_completed("B", "1"),
        turn_completed("A", "1"),
    )
    assert [(x.thread_id, x.text) for x in t.turns] == [("B", "from B"), ("A", "from A")]


# ---- malformed input --------------------------------------------------------------------


def test_malformed_lines_are_reported_and_skipped() -> None:
    data = b"".join(
        [
            line(turn_started("t", "u")).encode(),
            b"{not json\n",  # 2
            b"[1, 2]\n",  # 3
            b"\n",  # 4: blank, silently skipped
            b'{"params": {}}\n',  # 5: neither notification nor response
            line(agent_item("t", "u", "m", "caf\u00e9")).encode().replace(b"\xc3\xa9", b"\xff"),
            json.dumps({"method": "item/completed", "params": {"threadId": "t"}}).encode()
            + b"\n",  # 7: names the thread, no turnId
            line(turn_completed("t", "u")).encode(),  # 8
            line(turn_started("t", "v")).encode(),  # 9
            b'{"method": "item/completed", "params": {"threadId": "t", "tu',  # 10: truncated
        ]
    )
    t = read_app_server_stream([data])
    assert [p.line for p in t.problems] == [2, 3, 5, 6, 7, 10]
    reasons = {p.line: p.reason for p in t.problems}
    assert reasons[2].startswith("not JSON")
    assert reasons[3] == "not a JSON object (found an array)"
    assert "invalid UTF-8" in reasons[6]
    assert "turnId" in reasons[7]
    assert "truncated" in reasons[10]
    first, second = t.turns
    assert first.text == "caf\ufffd"  # repaired, reported, kept
    assert first.status == "completed" and first.problem_lines == (2, 3, 5, 6, 7)
    assert first.delivery_outcome == "incomplete" and not first.deliverable
    assert (second.status, second.problem_lines) == ("inProgress", (10,))


def test_problem_naming_a_turn_taints_only_that_turn() -> None:
    bad = agent_item("t", "u", "m", "x")
    bad["params"]["item"]["text"] = 5
    t = _read(
        turn_started("t", "u"),
        turn_started("t", "v"),
        bad,
        turn_completed("t", "u"),
        turn_completed("t", "v"),
    )
    assert [(x.turn_id, x.problem_lines) for x in t.turns] == [("u", (3,)), ("v", ())]


def test_malformed_line_between_turns_taints_nothing() -> None:
    t = _read(agent_item("t", "u", "m", "x"), turn_completed("t", "u"), "garbage\n")
    assert t.turns[0].deliverable and [p.line for p in t.problems] == [3]


def test_hostile_lines_never_raise() -> None:
    t = read_app_server_stream(
        [
            "[" * 100_000 + "\n",
            '{"a": ' + "1" * 10_000 + "}\n",
            '{"method": 5}\n',
            '{"method": "turn/completed", "params": []}\n',
            '{"method": "turn/completed", "params": {"threadId": "t", "turn": {"id": 1}}}\n',
            '{"method": "error", "params": {"threadId": "t", "turnId": "u", "error": {}}}\n',
            '{"id": 1}\n',
            "\x00\x00\n",
            '{"method": "item/completed", "params": {"threadId": "t", "turnId": "u", '
            '"item": {"type": "agentMessage", "id": "m", "text": "\\ud800"}}}\n',
            line(turn_completed("t", "u")),
        ]
    )
    assert len(t.problems) == 8
    assert t.turns[0].text == "\ufffd"  # a lone surrogate cannot reach a printer
    t.turns[0].text.encode("utf-8")


def test_overlong_line_is_skipped_without_being_buffered() -> None:
    reader = AppServerTurnReader(max_line_bytes=400)
    reader.feed(line(turn_started("t", "u")))
    for _ in range(50):
        reader.feed("x" * 64)  # 3 200 bytes with no newline: never held in memory
    reader.feed("\n" + line(agent_item("t", "u", "m", "ok")))
    (turn,) = reader.feed(line(turn_completed("t", "u")))
    assert turn.text == "ok" and turn.problem_lines == (2,)
    assert "longer than 400 bytes" in reader.problems[0].reason


def test_close_is_idempotent_and_reports_open_turns_once() -> None:
    reader = AppServerTurnReader()
    reader.feed(line(agent_item("t", "u", "m", "x")))
    assert [(t.status, t.line) for t in reader.close()] == [("inProgress", 0)]
    assert reader.close() == []


def test_missing_file_is_an_input_error(tmp_path: Any) -> None:
    from markertools_adapters.codex import CodexInputError

    with pytest.raises(CodexInputError, match="cannot read"):
        read_app_server_events(tmp_path / "nope.jsonl")
    assert FIXTURES.is_dir()
