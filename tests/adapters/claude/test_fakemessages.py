"""ENG-3: the scripted fake of the Anthropic Messages API speaks only what the real API
does - every event of every reply kind is a `RawMessageStreamEvent` of the official
`anthropic` SDK (pinned in `dev`) with no field the type lacks, and the SDK's own client
reads the fake's streams, errors, side requests and token counts - and the request
helpers read what Claude Code sends. The command-line wrapper runs the real pinned CLI
against it with `--replies`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import anthropic
import pydantic
import pytest
from anthropic.types import RawMessageStreamEvent

from markertools_adapters.claude.fakemessages import (
    BashCall,
    EditCall,
    FakeMessages,
    Hang,
    HttpError,
    McpToolUse,
    Text,
    ToolUse,
    Usage,
    WriteCall,
    last_user_text,
    request_texts,
    stream_events,
    tool_results,
)

EVENTS = pydantic.TypeAdapter(RawMessageStreamEvent)
REPLIES = [
    Text("Hello from the fake model, in pieces." * 3, chunk=7),
    McpToolUse("markertools", "task_create", {"prompt": "a child", "name": "kid"}),
    BashCall("make test", description="run the tests", unsandboxed=True),
    EditCall("/w/app.py", "old line", "new line"),
    WriteCall("/w/notes.md", "# notes\n" * 40),
    ToolUse("WebSearch", {"query": "markertools"}, text="Let me look that up."),
    Text("cached", usage=Usage(10, 5, cache_read_input_tokens=90, cache_creation_input_tokens=3)),
]


def _extras(value: Any, where: str = "event") -> list[str]:
    """Fields the SDK's types do not define, anywhere in a validated event."""
    found: list[str] = []
    if isinstance(value, pydantic.BaseModel):
        found += [f"{where}.{k}" for k in value.model_extra or {}]
        for name in type(value).model_fields:
            found += _extras(getattr(value, name), f"{where}.{name}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _extras(item, f"{where}[{i}]")
    return found


@pytest.mark.rule("ENG-3")
@pytest.mark.parametrize("reply", REPLIES, ids=lambda r: type(r).__name__)
def test_every_event_is_a_message_stream_event_of_the_official_sdk(reply: Any) -> None:
    events = stream_events(reply, "claude-test", 7)
    for event in events:
        assert _extras(EVENTS.validate_python(event)) == []
    kinds = [e["type"] for e in events]
    assert kinds[:1] == ["message_start"] and kinds[-2:] == ["message_delta", "message_stop"]


@pytest.mark.rule("ENG-3")
def test_the_sdk_client_reads_the_fakes_streams_errors_counts_and_side_requests() -> None:
    with FakeMessages([*REPLIES, HttpError(400)]) as fake:
        client = anthropic.Anthropic(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        ask = {
            "model": "claude-test",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}],
        }
        finals = []
        for _ in REPLIES:
            with client.messages.stream(**ask) as stream:
                finals.append(stream.get_final_message())
        text, create, bash, edit, write, search, cached = finals
        assert text.content[0].text == REPLIES[0].text and text.stop_reason == "end_turn"
        assert (text.usage.input_tokens, text.usage.output_tokens) == (100, 20)
        assert create.stop_reason == "tool_use"
        assert (create.content[0].name, create.content[0].input) == (
            "mcp__markertools__task_create",
            {"prompt": "a child", "name": "kid"},
        )
        assert bash.content[0].input == {
            "command": "make test",
            "description": "run the tests",
            "dangerouslyDisableSandbox": True,
        }
        assert (
            edit.content[0].name == "Edit" and write.content[0].input["content"] == "# notes\n" * 40
        )
        assert [b.type for b in search.content] == ["text", "tool_use"]
        assert cached.usage.cache_read_input_tokens == 90
        with pytest.raises(anthropic.BadRequestError) as error:
            client.messages.create(**ask, stream=True)
        assert error.value.body == {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "fake server error"},
        }
        # a side request (no stream) and a token count leave the script alone
        fake.push(Text("scripted"))
        assert client.messages.create(**ask).content[0].text == "ok"
        assert (
            client.messages.count_tokens(model="claude-test", messages=ask["messages"]).input_tokens
            == 100
        )
        assert [r.reply for r in fake.requests][-3:] == ["HttpError", "aux", "count"]
        assert len(fake.script) == 1 and fake.unknown_requests() == []


@pytest.mark.rule("ENG-3")
def test_a_hang_pings_until_released() -> None:
    with FakeMessages([Hang()]) as fake:
        body = json.dumps({"model": "m", "max_tokens": 5, "stream": True, "messages": []}).encode()
        request = urllib.request.Request(f"{fake.base_url}/v1/messages", body, method="POST")
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.readline() == b"event: message_start\n"
            assert fake.hanging.wait(10)
            seen = [answer.readline() for _ in range(6)]
            assert b"event: ping\n" in seen
            fake.release_hangs()
            answer.read()  # the stream ends once released
        assert not fake.hanging.is_set()


@pytest.mark.rule("ENG-3")
def test_the_request_helpers_read_what_claude_code_sends() -> None:
    body = {
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>ctx</system-reminder>"},
                    {"type": "text", "text": "[agent:a] do it"},
                ],
            },
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": "done",
                        "is_error": False,
                    }
                ],
            },
        ],
    }
    assert last_user_text(body) == "[agent:a] do it"
    assert tool_results(body) == [("toolu_1", "done", False)]
    assert request_texts(body) == [
        "You are Claude Code.",
        "<system-reminder>ctx</system-reminder>",
        "[agent:a] do it",
        "done",
    ]


@pytest.mark.rule("ENG-3")
def test_the_wrapper_runs_the_real_cli_offline_with_replies(tmp_path: Path) -> None:
    from support.claude import claude_bin

    binary = claude_bin()
    replies = tmp_path / "replies.txt"
    replies.write_text("First reply.\n%%\nSecond reply.\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    wrapper = [sys.executable, "-m", "markertools_adapters.claude.fakemessages"]
    wrapper += ["--home", str(tmp_path / "home"), "--replies", str(replies), "--"]
    results = []
    for prompt in ("one", "two", "three"):
        done = subprocess.run(
            [*wrapper, binary, "-p", prompt, "--output-format", "json"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        results.append(json.loads(done.stdout)["result"])
    # a new fake per run: each run's first turn gets reply 1 of the file
    assert results == ["First reply.", "First reply.", "First reply."]
    done = subprocess.run(
        [*wrapper[:-3], "--replies", str(tmp_path / "missing.txt"), "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"fakemessages: --replies {tmp_path / 'missing.txt'}: cannot read it"
    )
