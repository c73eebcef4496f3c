"""Properties of the Codex readers: deltas never matter, threads never mix, any prefix
or chunking of a stream is safe and consistent, and no input bytes make them raise."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from support.strategies.codex import (
    APPSERVER_STREAM,
    ROLLOUT,
    agent_texts,
    line,
    message_stream,
    turn_completed,
    turn_started,
)

from markertools_adapters.codex import (
    AppServerTurnReader,
    CodexTurn,
    RolloutTurnReader,
    read_app_server_stream,
)

FIXTURE_BYTES = APPSERVER_STREAM.read_bytes()
ROLLOUT_BYTES = ROLLOUT.read_bytes()


def _expected(texts: list[str]) -> str:
    return "\n\n".join(t for t in texts if t)


def _turn_stream(thread: str, turn: str, texts: list[str], cuts: list[list[int]]) -> list[dict]:
    out = [turn_started(thread, turn)]
    for i, text in enumerate(texts):
        out += message_stream(thread, turn, f"m{i}", text, cuts[i] if i < len(cuts) else [])
    return out


def _read_all(reader: AppServerTurnReader | RolloutTurnReader, chunks: list[bytes]):
    turns: list[CodexTurn] = []
    for chunk in chunks:
        turns.extend(reader.feed(chunk))
    turns.extend(reader.close())
    return turns


@given(
    texts=st.lists(agent_texts, min_size=1, max_size=4),
    cuts=st.lists(st.lists(st.integers(0, 250), max_size=12), max_size=4),
)
def test_delta_splitting_never_changes_the_text(texts: list[str], cuts: list[list[int]]) -> None:
    messages = [*_turn_stream("thr", "turn", texts, cuts), turn_completed("thr", "turn")]
    (turn,) = read_app_server_stream(line(m) for m in messages).turns
    assert turn.text == _expected(texts)
    # the same turn with no deltas at all reads the same
    plain = [m for m in messages if m["method"] != "item/agentMessage/delta"]
    (again,) = read_app_server_stream(line(m) for m in plain).turns
    assert (again.text, again.status, again.problem_lines) == (turn.text, "completed", ())


@given(
    a_texts=st.lists(agent_texts, min_size=1, max_size=3),
    b_texts=st.lists(agent_texts, min_size=1, max_size=3),
    same_turn_id=st.booleans(),
    order=st.lists(st.booleans(), max_size=80),
)
def test_interleaving_two_threads_never_mixes_their_text(
    a_texts: list[str], b_texts: list[str], same_turn_id: bool, order: list[bool]
) -> None:
    b_turn = "turn_a" if same_turn_id else "turn_b"
    a = [*_turn_stream("thr_a", "turn_a", a_texts, []), turn_completed("thr_a", "turn_a")]
    b = [*_turn_stream("thr_b", b_turn, b_texts, [[3, 9]]), turn_completed("thr_b", b_turn)]
    merged: list[dict] = []
    for pick_a in order:  # an arbitrary interleaving that keeps each thread's own order
        source = a if (pick_a and a) or not b else b
        if source:
            merged.append(source.pop(0))
    merged += a + b
    turns = {t.thread_id: t for t in read_app_server_stream(line(m) for m in merged).turns}
    assert turns["thr_a"].text == _expected(a_texts)
    assert turns["thr_b"].text == _expected(b_texts)
    assert turns["thr_a"].deliverable and turns["thr_b"].deliverable


@given(cut=st.integers(0, len(FIXTURE_BYTES)))
def test_truncating_the_stream_at_any_byte_is_safe(cut: int) -> None:
    full = _read_all(AppServerTurnReader(), [FIXTURE_BYTES])
    finished = [t for t in full if t.finished]
    part = _read_all(AppServerTurnReader(), [FIXTURE_BYTES[:cut]])
    part_finished = [t for t in part if t.finished]
    # whatever ended before the cut is exactly what the full stream says about it
    assert part_finished == finished[: len(part_finished)]
    # and nothing unfinished is ever presented as deliverable
    assert all(not t.deliverable for t in part if not t.finished)


@given(cut=st.integers(0, len(ROLLOUT_BYTES)))
def test_truncating_a_rollout_at_any_byte_is_safe(cut: int) -> None:
    full = [t for t in _read_all(RolloutTurnReader(), [ROLLOUT_BYTES]) if t.finished]
    part = [t for t in _read_all(RolloutTurnReader(), [ROLLOUT_BYTES[:cut]]) if t.finished]
    assert part == full[: len(part)]


@given(sizes=st.lists(st.integers(1, 400), min_size=1, max_size=40))
def test_chunking_never_changes_the_result(sizes: list[int]) -> None:
    for data, make in ((FIXTURE_BYTES, AppServerTurnReader), (ROLLOUT_BYTES, RolloutTurnReader)):
        chunks, start, i = [], 0, 0
        while start < len(data):
            size = sizes[i % len(sizes)]
            chunks.append(data[start : start + size])
            start, i = start + size, i + 1
        whole, pieces = make(), make()
        assert _read_all(pieces, chunks) == _read_all(whole, [data])
        assert pieces.problems == whole.problems


@settings(max_examples=200)
@given(data=st.binary(max_size=2000))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    for reader in (AppServerTurnReader(), RolloutTurnReader()):
        turns = _read_all(reader, [data])
        for t in turns:
            t.text.encode("utf-8")  # always printable
        assert all(p.line >= 1 for p in reader.problems)


def _json_values() -> st.SearchStrategy[object]:
    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10))
    return st.recursive(
        scalars,
        lambda kids: (
            st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=3)
        ),
        max_leaves=12,
    )


@given(
    method=st.sampled_from(["turn/started", "turn/completed", "item/completed", "error", "x"]),
    params=_json_values(),
    event=st.sampled_from(
        [
            "task_started",
            "task_complete",
            "turn_aborted",
            "agent_message",
            "error",
            "user_message",
            "zzz",
        ]
    ),
    payload=st.dictionaries(
        st.sampled_from(["turn_id", "message", "codex_error_info", "x"]), _json_values(), max_size=3
    ),
)
def test_wrong_shapes_never_raise(method: str, params: object, event: str, payload: dict) -> None:
    stream = json.dumps({"method": method, "params": params}) + "\n"
    stream += line(turn_completed("t", "u"))
    assert len(read_app_server_stream([stream]).turns) >= 1
    rollout = RolloutTurnReader()
    _read_all(
        rollout,
        [json.dumps({"type": "event_msg", "payload": {"type": event, **payload}}).encode() + b"\n"],
    )
