"""The app-server client against the real pinned Codex binary, offline: handshake, a turn
that completes with the fake model's text, notifications delivered verbatim with their
raw line, and a process that dies failing its pending requests."""

from __future__ import annotations

import asyncio
import json
import signal

import pytest
from support.codex import PINNED_VERSION, OfflineCodex

from markertools_adapters.codex.client import AppServerExited
from markertools_adapters.codex.fakemodel import Hang, Text


@pytest.mark.rule("DOT-3")
def test_a_turn_completes_and_notifications_arrive_verbatim(offline_codex: OfflineCodex) -> None:
    raw: list[tuple[dict[str, object], str]] = []
    offline_codex.fake.push(Text("hello from the fake model"))

    async def run() -> dict[str, object]:
        async with offline_codex.started(on_notification=lambda m, line: raw.append((m, line))) as c:
            thread = await c.thread_start(
                str(offline_codex.home), sandbox="read-only", approval_policy="on-request"
            )
            tid = thread["thread"]["id"]
            await c.turn_start(tid, "say hello")
            done = await c.wait_for(lambda m: m.get("method") == "turn/completed", 30)
            return done

    done = asyncio.run(run())
    assert done["params"]["turn"]["status"] == "completed"  # type: ignore[index]
    methods = [m["method"] for m, _ in raw]
    assert "turn/started" in methods and "item/completed" in methods
    for decoded, line in raw:
        assert json.loads(line) == decoded  # the raw line is exactly what was decoded
    texts = [
        m["params"]["item"]["text"]  # type: ignore[index]
        for m, _ in raw
        if m["method"] == "item/completed" and m["params"]["item"]["type"] == "agentMessage"  # type: ignore[index]
    ]
    assert texts == ["hello from the fake model"]


@pytest.mark.rule("DOT-3")
def test_a_killed_app_server_fails_pending_requests_and_later_calls(
    offline_codex: OfflineCodex,
) -> None:
    offline_codex.fake.push(Hang())

    async def run() -> tuple[BaseException | None, BaseException | None]:
        async with offline_codex.started() as c:
            thread = await c.thread_start(str(offline_codex.home), sandbox="read-only")
            await c.turn_start(thread["thread"]["id"], "hang")
            pending = asyncio.ensure_future(c.thread_list())
            await asyncio.sleep(0.2)
            c.signal(signal.SIGKILL)
            first = await asyncio.gather(pending, return_exceptions=True)
            try:
                await c.model_list()
                later = None
            except AppServerExited as exc:
                later = exc
            return (first[0] if isinstance(first[0], BaseException) else None), later

    pending_error, later_error = asyncio.run(run())
    # the pending request either got its answer before the kill or failed with the exit
    assert pending_error is None or isinstance(pending_error, AppServerExited)
    assert isinstance(later_error, AppServerExited)
    assert "exited" in str(later_error)


def test_the_pinned_binary_is_the_pinned_version(offline_codex: OfflineCodex) -> None:
    import subprocess

    out = subprocess.run([offline_codex.binary, "--version"], capture_output=True, text=True)
    assert PINNED_VERSION in out.stdout
