"""The rollout reader: turn boundaries, ids, statuses, agent text, compressed files."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import zstandard
from support.strategies.codex import ROLLOUT

from markertools_adapters.codex import (
    CodexInputError,
    RolloutTurnReader,
    read_rollout,
    thread_id_from_name,
)

SESSION = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"


def ev(kind: str, **payload: Any) -> dict[str, Any]:
    return {
        "timestamp": "2025-10-01T10:00:00.000Z",
        "type": "event_msg",
        "payload": {"type": kind, **payload},
    }


def rollout_line(kind: str, **payload: Any) -> dict[str, Any]:
    return {"timestamp": "2025-10-01T10:00:00.000Z", "type": kind, "payload": payload}


def write(path: Path, *lines: dict[str, Any] | str) -> Path:
    path.write_text(
        "".join(x if isinstance(x, str) else json.dumps(x) + "\n" for x in lines),
        encoding="utf-8",
    )
    return path


def test_fixture_rollout_turns() -> None:
    t = read_rollout(ROLLOUT)
    assert t.problems == ()
    assert [(x.turn_id, x.status) for x in t.turns] == [
        ("0199a213-81c0-7800-8aa1-bbab2a035a53", "completed"),
        ("0199a214-0000-7000-8000-000000000002", "interrupted"),
        ("line-21", "failed"),  # task_started without turn_id: synthesized, stable id
        ("0199a216-0000-7000-8000-000000000004", "completed"),
        ("0199a217-0000-7000-8000-000000000005", "inProgress"),  # the file ends mid-turn
    ]
    assert {x.thread_id for x in t.turns} == {SESSION}
    first = t.turns[0]
    # agent_message events only: the identical response_item messages are not doubled
    assert first.text.count("```task-create") == 1
    assert first.text.count("```todo-create") == 1
    assert first.text == (
        "I will hand the parser work to a helper.\n\n```task-create\n"
        '{"prompt": "Rewrite the parser", "name": "parser"}\n```\n'
        "\n\n"
        'And I keep a todo for the docs:\n\n```todo-create\n{"title": "Document the parser"}\n```'
    )
    assert "Planning" not in first.text  # reasoning is not agent text
    assert t.turns[2].error == "You've hit your usage limit."
    # an active_turn_not_steerable error does not fail its turn (as upstream)
    assert (t.turns[3].status, t.turns[3].error) == ("completed", None)
    assert t.turns[3].text == 'Checking on the helper:\n\n~~~task-poll\n{"task_id": "t1"}\n~~~'


@pytest.mark.rule("TRN-3")
def test_rollout_outcomes() -> None:
    outcomes = [x.delivery_outcome for x in read_rollout(ROLLOUT).turns]
    assert outcomes == ["completed", "interrupted", "failed", "completed", "unfinished"]


def test_thread_id_falls_back_to_the_file_name(tmp_path: Path) -> None:
    name = f"rollout-2025-10-01T10-00-00-{SESSION.upper()}.jsonl"
    path = write(tmp_path / name, ev("task_started", turn_id="a"), ev("task_complete", turn_id="a"))
    assert [x.thread_id for x in read_rollout(path).turns] == [SESSION]
    assert thread_id_from_name(Path("notes.jsonl")) is None
    assert thread_id_from_name(Path(f"rollout-x-{SESSION}.jsonl.zst")) == SESSION


def test_turn_ids_from_turn_context_and_completion(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.jsonl",
        ev("task_started"),
        rollout_line("turn_context", turn_id="from-context", cwd="/x"),
        ev("agent_message", message="a"),
        ev("task_complete"),
        ev("task_started"),
        ev("agent_message", message="b"),
        ev("task_complete", turn_id="from-complete"),
        ev("task_started"),
        ev("task_complete"),
    )
    assert [x.turn_id for x in read_rollout(path).turns] == [
        "from-context",
        "from-complete",
        "line-8",
    ]


def test_completion_naming_another_turn_taints_the_open_one(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.jsonl",
        ev("task_started", turn_id="a"),
        ev("agent_message", message="x"),
        ev("task_complete", turn_id="b"),
    )
    (turn,) = read_rollout(path).turns
    assert (turn.turn_id, turn.status, turn.delivery_outcome) == ("a", "completed", "incomplete")


def test_superseded_and_implicit_turns_are_unfinished(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.jsonl",
        ev("agent_message", message="implicit"),  # older rollouts: no task_started
        ev("user_message", message="next"),
        ev("task_started", turn_id="a"),
        ev("agent_message", message="never completed"),
        ev("task_started", turn_id="b"),
        ev("agent_message", message="done"),
        ev("task_complete", turn_id="b"),
    )
    turns = read_rollout(path).turns
    assert [(x.turn_id, x.status, x.text) for x in turns] == [
        ("line-1", "inProgress", "implicit"),
        ("a", "inProgress", "never completed"),
        ("b", "completed", "done"),
    ]


@pytest.mark.rule("TRN-3")
def test_late_abort_downgrades_a_finished_turn(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.jsonl",
        ev("task_started", turn_id="a"),
        ev("task_complete", turn_id="a"),
        ev("turn_aborted", turn_id="a", reason="interrupted"),
    )
    assert [x.status for x in read_rollout(path).turns] == ["interrupted"]


def test_abort_without_id_ends_the_open_turn(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.jsonl",
        ev("task_started", turn_id="a"),
        ev("turn_aborted", reason="replaced"),
        ev("turn_aborted", reason="interrupted"),  # nothing open: reported, no effect
    )
    t = read_rollout(path)
    assert [x.status for x in t.turns] == ["interrupted"]
    assert [p.line for p in t.problems] == [3]


def test_malformed_rollout_lines(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(
        b"".join(
            [
                json.dumps(rollout_line("session_meta", id="s1")).encode() + b"\n",
                json.dumps(ev("task_started", turn_id="a")).encode() + b"\n",
                b"{oops\n",  # 3
                b'{"record_type": "state"}\n',  # 4: a pre-2025 line shape
                json.dumps(ev("agent_message", message=7)).encode() + b"\n",  # 5
                json.dumps(ev("agent_message", message="caf\u00e9"), ensure_ascii=False)
                .encode()
                .replace(b"\xc3\xa9", b"\xc3")
                + b"\n",  # 6: invalid UTF-8
                b"\n",
                json.dumps(ev("task_complete", turn_id="a")).encode() + b"\n",  # 8
                json.dumps(rollout_line("response_item", type="message")).encode() + b"\n",
                json.dumps(ev("task_started", turn_id="b")).encode() + b"\n",  # 10
                b'{"timestamp": "2025", "type": "event_msg", "payload": {"type": "agent_mes',
            ]
        )
    )
    t = read_rollout(path)
    assert [p.line for p in t.problems] == [3, 4, 5, 6, 11]
    a, b = t.turns
    assert (a.thread_id, a.text, a.problem_lines) == ("s1", "caf\ufffd", (3, 4, 5, 6))
    assert a.delivery_outcome == "incomplete"
    assert (b.status, b.problem_lines) == ("inProgress", (11,))
    assert "truncated" in t.problems[-1].reason


def test_reader_is_incremental() -> None:
    reader = RolloutTurnReader(thread_id="hint")
    data = "".join(
        json.dumps(x) + "\n"
        for x in (
            ev("task_started", turn_id="a"),
            ev("agent_message", message="x"),
            ev("task_complete", turn_id="a"),
        )
    )
    out = []
    for ch in data:
        out.extend(reader.feed(ch))
    assert [(x.thread_id, x.turn_id, x.text, x.line) for x in out] == [("hint", "a", "x", 3)]
    assert reader.close() == []


# ---- compressed rollouts ----------------------------------------------------------------


def test_zstd_rollout_reads_like_the_plain_one(tmp_path: Path) -> None:
    path = tmp_path / (ROLLOUT.name + ".zst")
    path.write_bytes(zstandard.ZstdCompressor().compress(ROLLOUT.read_bytes()))
    assert read_rollout(path) == read_rollout(ROLLOUT)


def test_corrupt_zstd_is_a_problem_not_an_exception(tmp_path: Path) -> None:
    packed = zstandard.ZstdCompressor().compress(ROLLOUT.read_bytes())
    truncated = tmp_path / "cut.jsonl.zst"
    truncated.write_bytes(packed[: len(packed) // 2])
    garbage = tmp_path / "garbage.jsonl.zst"
    garbage.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 64)
    for path in (truncated, garbage):
        t = read_rollout(path)
        assert t.problems, path
        assert all(x.status != "completed" or not x.problem_lines for x in t.turns)


def test_zst_without_zstandard_names_the_missing_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(b"{}\n"))
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import now raises ImportError
    with pytest.raises(CodexInputError, match="zstandard"):
        read_rollout(path)
