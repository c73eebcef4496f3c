"""The readers against what the pinned Codex binary really writes: a live two-turn
thread (stream collected from the client, rollout file codex wrote, and the CLI listing
of it), the same captures committed under tests/fixtures/codex/v0169/ so the format is
checked without the binary too, and a thread/revert (stream and rollout segments).

When a new Codex version changes where the agent text lives, these fail: they count the
marker blocks of each turn instead of trusting that some text was found."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.codex import OfflineCodex
from support.strategies.codex import FIXTURES
from typer.testing import CliRunner

from markertools.parse.turn import parse_turn
from markertools_adapters.cli import app
from markertools_adapters.codex import (
    CodexTranscript,
    read_app_server_events,
    read_app_server_stream,
    read_rollout,
)
from markertools_adapters.codex.fakemodel import Text

V0169 = FIXTURES / "v0169"
REVERT = V0169 / "revert"

FIRST = (
    'Two tasks.\n\n```task-create\n{"prompt": "x"}\n```\n\n'
    'and\n\n```task-create\n{"prompt": "the second thing"}\n```\n'
)
SECOND = 'One more.\n\n```task-create\n{"prompt": "z"}\n```\n'


def _blocks(transcript: CodexTranscript) -> list[tuple[str, int]]:
    return [(t.status, len(parse_turn(t.text).commands)) for t in transcript.turns]


def _listing(path: Path) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["parse", "--codex-rollout", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


async def _turns(c: Any, thread_id: str, prompts: list[str]) -> list[str]:
    ids = []
    for prompt in prompts:
        started = await c.turn_start(thread_id, prompt)
        ids.append(started["turn"]["id"])
        await c.wait_for(lambda m: m.get("method") == "turn/completed", 30)
    return ids


# ---- live, against the real binary ---------------------------------------------------------


@pytest.mark.rule("DOT-3")
def test_a_real_two_turn_thread_reads_in_stream_rollout_and_cli(
    offline_codex: OfflineCodex,
) -> None:
    raw: list[str] = []
    offline_codex.fake.push(Text(FIRST), Text(SECOND))

    async def run() -> tuple[str, str]:
        async with offline_codex.started(on_notification=lambda m, line: raw.append(line)) as c:
            thread = await c.thread_start(
                str(offline_codex.home), sandbox="read-only", approval_policy="on-request"
            )
            await _turns(c, thread["thread"]["id"], ["plan please", "one more please"])
            return thread["thread"]["id"], thread["thread"]["path"]

    thread_id, rollout_path = asyncio.run(run())

    stream = read_app_server_stream(line + "\n" for line in raw)
    assert stream.problems == ()
    assert _blocks(stream) == [("completed", 2), ("completed", 1)]
    assert {t.thread_id for t in stream.turns} == {thread_id}
    assert all(t.deliverable for t in stream.turns)

    (path,) = offline_codex.rollouts()
    assert path == Path(rollout_path)
    rollout = read_rollout(path)
    assert rollout.problems == ()
    assert _blocks(rollout) == [("completed", 2), ("completed", 1)]
    # the rollout gives the same turns (ids, thread, text) as the stream
    assert [(t.thread_id, t.turn_id, t.text) for t in rollout.turns] == [
        (t.thread_id, t.turn_id, t.text) for t in stream.turns
    ]
    assert [t.text for t in rollout.turns] == [FIRST, SECOND]

    listing = _listing(path)
    assert listing["problems"] == []
    assert [(t["status"], t["blocks"]) for t in listing["turns"]] == [
        ("completed", 2),
        ("completed", 1),
    ]


@pytest.mark.rule("DOT-3")
def test_a_real_thread_revert_never_delivers_the_reverted_turns(
    offline_codex: OfflineCodex,
) -> None:
    raw: list[str] = []
    offline_codex.fake.push(Text(FIRST), Text(SECOND), Text(SECOND), Text("after the revert"))

    async def run() -> list[str]:
        async with offline_codex.started(on_notification=lambda m, line: raw.append(line)) as c:
            thread = await c.thread_start(
                str(offline_codex.home), sandbox="read-only", approval_policy="on-request"
            )
            tid = thread["thread"]["id"]
            ids = await _turns(c, tid, ["one", "two", "three"])
            await c.request("thread/revert", {"threadId": tid, "beforeTurnId": ids[1]})
            ids += await _turns(c, tid, ["four"])
            return ids

    ids = asyncio.run(run())
    assert any(json.loads(x).get("method") == "thread/reverted" for x in raw)

    # stream: thread/reverted does not say how far; every earlier turn is dropped
    stream = read_app_server_stream(line + "\n" for line in raw)
    assert [t.turn_id for t in stream.turns] == [ids[3]]
    assert any("thread/reverted" in p.reason for p in stream.problems)

    # rollout: the first file keeps the turn before the cut, the segment the new one
    files = offline_codex.rollouts()
    assert len(files) == 2, files
    base, segment = sorted(files, key=lambda p: len(p.name))
    kept = read_rollout(base)
    assert [(t.turn_id, t.text) for t in kept.turns] == [(ids[0], FIRST)]
    dropped = [p.reason for p in kept.problems]
    assert len(dropped) == 2 and all("reverted" in r for r in dropped)
    assert ids[1] in dropped[0] and ids[2] in dropped[1]
    assert [(t.turn_id, t.text) for t in read_rollout(segment).turns] == [
        (ids[3], "after the revert")
    ]


# ---- the committed captures (no binary needed) ---------------------------------------------


@pytest.mark.rule("DOT-3")
def test_committed_v0169_captures_read_two_and_one_blocks() -> None:
    for transcript in (
        read_app_server_events(V0169 / "stream-two-turns.jsonl"),
        read_rollout(V0169 / "rollout-two-turns.jsonl"),
    ):
        assert transcript.problems == ()
        assert _blocks(transcript) == [("completed", 2), ("completed", 1)]
        assert all(t.deliverable for t in transcript.turns)
    listing = _listing(V0169 / "rollout-two-turns.jsonl")
    assert listing["problems"] == []
    assert [t["blocks"] for t in listing["turns"]] == [2, 1]


@pytest.mark.rule("TRN-3")
def test_committed_v0169_revert_captures(tmp_path: Path) -> None:
    base, segment = sorted(REVERT.glob("rollout-*.jsonl"), key=lambda p: len(p.name))
    kept = read_rollout(base)
    assert _blocks(kept) == [("completed", 1)]
    assert [p.line for p in kept.problems] == [15, 24]  # the two reverted turns' starts
    assert [t.text for t in read_rollout(segment).turns] == ["after revert"]
    stream = read_app_server_events(REVERT / "stream-revert.jsonl")
    assert [t.text for t in stream.turns] == ["after revert"]
    # alone (its segment is not next to it) the first file shows all three turns: the
    # revert is known only from the segment file codex writes beside it
    alone = tmp_path / base.name
    shutil.copy(base, alone)
    assert len(read_rollout(alone).turns) == 3
