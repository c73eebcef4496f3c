"""TRN-12 (shape, not time): hostile bodies of every kind — long lists, many keys, deep
nesting up to and past the limit, long strings full of escapes, repeated ids, many
near-miss fences — never make parse or delivery raise, and what they produce stays
within the caps (commands per kind, notes and reasons of bounded size, a report under
64 KB). bench/bench_worst.py times the same shapes at the body-size limit."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.strategies.core import make_world, rig, task

from markertools import deliver_turn, parse_turn
from markertools.parse.jsonstrict import MAX_DEPTH
from markertools.parse.kinds import KINDS

NAMES = [name for k in KINDS for name in k.names]
BY_NAME = {name: k for k in KINDS for name in k.names}
REASON_MAX = 4_000  # characters of one rendered reason or note


@st.composite
def hostile_body(draw: st.DrawFn, kind_name: str) -> str:
    kind = BY_NAME[kind_name]
    base = json.loads(kind.example)
    n = draw(st.integers(1, 3_000))
    shape = draw(st.sampled_from(["list", "keys", "nest", "string", "ids", "field"]))
    if shape == "list":
        base[draw(st.sampled_from(["extra", *[f.name for f in kind.fields]]))] = [0] * n
    elif shape == "keys":
        base.update({f"k{i}\n```task-create": i for i in range(n)})
    elif shape == "nest":
        depth = draw(st.integers(MAX_DEPTH - 3, MAX_DEPTH + 2))
        base["extra"] = json.loads("[" * depth + "]" * depth)
    elif shape == "string":
        base["extra"] = draw(st.sampled_from(['é\n"\\', "\U0001f600", "```task-poll\n"])) * n
    elif shape == "ids":
        ids = [f"t{i % draw(st.integers(1, n))}\n```" for i in range(n)]
        base[draw(st.sampled_from(["task_ids", "thread_ids", "threads"]))] = ids
    else:
        texts = [f.name for f in kind.fields if f.kind in ("text", "ref")]
        if texts:
            base[draw(st.sampled_from(texts))] = "x\n```\n" * n
    return json.dumps(base)


@st.composite
def hostile_turns(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        name = draw(st.sampled_from(NAMES))
        repeat = draw(st.sampled_from([1, 1, 3, 60]))
        parts.append(f"```{name}\n{draw(hostile_body(name))}\n```\n" * repeat)
    if draw(st.booleans()):
        parts.append("```task-lisst\n{}\n```\n" * draw(st.integers(1, 200)))
    return "".join(draw(st.permutations(parts)))


@pytest.mark.rule("TRN-12", "EXT-6", "TRN-8")
@settings(deadline=None)
@given(hostile_turns())
def test_hostile_bodies_stay_within_the_caps(text: str) -> None:
    plan = parse_turn(text)
    per_kind: dict[str, int] = {}
    for command in plan.commands:
        per_kind[command.kind] = per_kind.get(command.kind, 0) + 1
        for note in command.notes:
            assert len(note.render()) <= REASON_MAX and len(note.render("zh")) <= REASON_MAX
    for kind in KINDS:
        assert per_kind.get(kind.name, 0) <= kind.cap
    for issue in plan.issues:
        assert len(issue.reason.render()) <= REASON_MAX
    r = rig(make_world(task("t1"), task("t2"), task("t0\n```", status="completed")))
    report = deliver_turn(text, sender="t1", outcome="completed", ports=r.ports)
    assert report.delivered and report.message is not None
    assert len(report.message.encode()) < 64 * 1024
    assert sum(e.count for e in report.entries) == len(plan.commands) + len(plan.issues)
    assert len(report.entries) <= len(plan.commands) + 50 + 3 * len(NAMES)


_NUMBER = st.one_of(
    st.integers(-(10**35), 10**35).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1e400", "-1E+308", "1e-400", "2.5e10", "0.0", "-0", "1" * 31, "9" * 30]),
)


@pytest.mark.rule("VAL-1")
@given(st.lists(_NUMBER, min_size=1, max_size=40))
def test_dense_bodies_refuse_and_accept_numbers_exactly_as_the_hooked_decoder(
    literals: list[str],
) -> None:
    # a dense body takes the decoder without number hooks unless a literal may need them
    from markertools.parse import jsonstrict

    body = '{"a": [' + ",".join(literals) + "]}"
    result = jsonstrict.loads_object(body)
    try:
        expected = jsonstrict._DECODER.decode(body)
    except jsonstrict._Refuse as refused:
        assert isinstance(result, jsonstrict.JsonRefusal) and result.reason == refused.reason
    else:
        assert result == expected
