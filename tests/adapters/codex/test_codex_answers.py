"""Typed app-server answers (`markertools_adapters.codex.answers`): decoded once, total
on any JSON value, and checked on the real pinned binary's own answers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.codex import OfflineCodex

from markertools.plans import QuotaWindow
from markertools_adapters.codex.answers import (
    HistoryTurn,
    ModelInfo,
    RateLimits,
    RateWindow,
    decode_model_list,
    decode_rate_limits,
    decode_thread,
    decode_thread_list,
    rate_limits_of_read,
)
from markertools_adapters.codex.fakemodel import Text, rate_limit_headers

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
SHAPED_KEYS = st.sampled_from(
    ["data", "model", "id", "isDefault", "supportedReasoningEfforts", "reasoningEffort",
     "thread", "turns", "items", "type", "text", "content", "cwd", "rateLimits", "primary",
     "usedPercent", "windowDurationMins", "limitId", "nextCursor", "status"]
)
shaped = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5)
    | st.sampled_from(["userMessage", "agentMessage"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(SHAPED_KEYS, inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(json_values, shaped))
def test_decoders_are_total(value: Any) -> None:
    """Rule 1: any JSON value decodes to a record; nothing raises."""
    decode_model_list(value)
    decode_rate_limits(value)
    rate_limits_of_read(value)
    decode_thread(value)
    decode_thread_list(value)


def test_model_list_keeps_models_efforts_and_the_default() -> None:
    answer = {
        "data": [
            {"id": "m1", "model": "gpt-a", "supportedReasoningEfforts": [
                {"reasoningEffort": "low"}, {"reasoningEffort": "high"}, {"bogus": 1}]},
            {"id": "m2", "model": "gpt-b", "isDefault": True, "defaultReasoningEffort": "medium"},
            {"isDefault": True},  # no name: left out
            "junk",
        ]
    }
    listing = decode_model_list(answer)
    assert listing.names == ("gpt-a", "gpt-b")
    assert listing.find("m1") == ModelInfo("gpt-a", "m1", False, ("low", "high"), None)
    assert listing.default() == ModelInfo("gpt-b", "m2", True, (), "medium")
    assert decode_model_list({"data": [{"model": "x"}]}).default() == ModelInfo("x")
    assert decode_model_list(None).default() is None


def test_rate_limit_updates_merge_field_by_field() -> None:
    """Rule 2: the update notification is sparse; what it lacks keeps its value."""
    first = decode_rate_limits(
        {"limitId": "codex", "primary": {"usedPercent": 12, "windowDurationMins": 300,
                                         "resetsAt": 99},
         "secondary": {"usedPercent": 40.5}, "credits": {"hasCredits": True}}
    )
    assert first is not None
    update = decode_rate_limits({"primary": {"usedPercent": 80}, "secondary": None})
    assert update is not None
    merged = first.merged(update)
    assert merged == RateLimits("codex", RateWindow(80.0), RateWindow(40.5), {"hasCredits": True})
    assert merged.windows() == (
        QuotaWindow(left_percent=20.0, bucket="codex", window_minutes=None),
        QuotaWindow(left_percent=59.5, bucket="codex", window_minutes=None),
    )
    assert RateWindow(130.0).left_percent == 0.0
    assert decode_rate_limits("nope") is None
    assert decode_rate_limits({"primary": {"usedPercent": True}}) == RateLimits()


def test_thread_history_joins_each_turns_messages() -> None:
    answer = {
        "thread": {
            "id": "thr", "cwd": "/w",
            "turns": [
                {"id": "t1", "status": "completed", "items": [
                    {"type": "userMessage", "content": [{"type": "text", "text": "do it"}]},
                    {"type": "agentMessage", "text": "first"},
                    {"type": "reasoning", "text": "hidden"},
                    {"type": "agentMessage", "text": "second"},
                ]},
                {"status": "completed"},  # no id: left out
                {"id": "t2", "items": "junk"},
            ],
        }
    }
    history = decode_thread(answer)
    assert history.cwd == "/w" and history.thread_id == "thr"
    assert history.turns == (
        HistoryTurn("t1", "completed", "do it", "first\nsecond"),
        HistoryTurn("t2", None, "", ""),
    )
    assert history.turn_ids == ("t1", "t2")
    assert history.last(1) == (HistoryTurn("t2", None, "", ""),)
    assert history.last(0) == ()


def test_thread_pages_keep_the_cursor() -> None:
    page = decode_thread_list(
        {"data": [{"id": "a", "cwd": "/w", "preview": "hi", "updatedAt": 5, "model": "m"},
                  {"cwd": "/no-id"}], "nextCursor": "c2"}
    )
    assert [t.id for t in page.threads] == ["a"]
    assert page.threads[0].updated_at == 5 and page.next_cursor == "c2"


def test_lone_surrogates_become_replacement_characters() -> None:
    """Rule 3."""
    history = decode_thread({"thread": {"turns": [
        {"id": "t", "items": [{"type": "agentMessage", "text": "a\ud800b"}]}]}})
    assert history.turns[0].agent == "a\ufffdb"


@pytest.mark.rule("DOT-3", "DOT-5", "DOT-8")
def test_the_pinned_binarys_own_answers_decode(offline_codex: OfflineCodex) -> None:
    """model/list, account/rateLimits/updated and thread/read of codex 0.169, decoded."""
    offline_codex.fake.rate_limit_headers = rate_limit_headers(30.0, 300, 4_102_444_800)
    offline_codex.fake.push(Text("the agent's answer"))

    updates: list[Any] = []

    def seen(message: dict[str, Any], raw: str) -> None:
        if message.get("method") == "account/rateLimits/updated":
            updates.append(message["params"]["rateLimits"])

    async def run() -> tuple[Any, Any]:
        async with offline_codex.started(on_notification=seen) as c:
            models = await c.model_list()
            started = await c.thread_start(
                str(offline_codex.home), sandbox="read-only", approval_policy="on-request"
            )
            tid = started["thread"]["id"]
            await c.turn_start(tid, "answer please")
            await c.wait_for(lambda m: m.get("method") == "turn/completed", 30)
            thread = await c.thread_read(tid, include_turns=True)
            return models, thread

    models, thread = asyncio.run(run())
    listing = decode_model_list(models)
    assert set(listing.names) == {"fake-model", "fake-mini"}
    assert listing.default() is not None
    history = decode_thread(thread)
    assert history.cwd == str(offline_codex.home)
    assert len(history.turns) == 1
    assert history.turns[0].user.endswith("answer please")
    assert history.turns[0].agent == "the agent's answer"
    # offline, account/rateLimits/read needs an account; the update notifications that
    # the fake's headers cause are what the supervisor merges (DOT-8)
    assert updates, "the fake's rate-limit headers produce account/rateLimits/updated"
    merged = RateLimits()
    for update in updates:
        decoded = decode_rate_limits(update)
        assert decoded is not None
        merged = merged.merged(decoded)
    assert merged.primary is not None and merged.primary.used_percent == 30.0
    assert merged.windows()[0].left_percent == 70.0
