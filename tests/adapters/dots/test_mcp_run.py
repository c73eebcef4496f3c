"""`dots serve` driven by the SDK's own MCP client in-process, in both protocol eras,
against the real pinned Codex (offline, fake Responses server): the nine tools and
their schemas, the full two-role run (reader -> fixer dependsOn) with the fixer's
first instruction carrying the reader's conclusion as data, both confirmations asked
by elicitation, `pendingDecisions` on every result and `waitMs`."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from support.codex import OfflineCodex
from support.dots import plan, role, until, workdir
from test_mcp_support import (
    ERAS,
    LEGACY,
    RecordingAnswers,
    Transcript,
    as_json,
    client,
    make_dots,
    ok,
)

from markertools_adapters.codex.fakemodel import Text, last_user_text

TOOLS = {
    "dots_probe",
    "dots_threads",
    "dots_thread_read",
    "dots_start",
    "dots_status",
    "dots_dispatch",
    "dots_tune",
    "dots_control",
    "dots_finish",
}


def two_roles(tmp: Path) -> dict[str, Any]:
    return plan(
        role("reader", workdir(tmp, "a")),
        role("fixer", workdir(tmp, "b"), dependsOn=["reader"], sandbox="workspace-write"),
    )


@pytest.mark.rule("DOT-13")
@pytest.mark.parametrize("mode", ERAS)
def test_nine_tools_with_camelcase_schemas_and_no_confirmed_argument(
    offline_codex: OfflineCodex, tmp_path: Path, mode: str
) -> None:
    dots = make_dots(offline_codex, tmp_path / "state")

    async def scenario() -> Any:
        async with client(dots, mode) as c:
            return (await c.list_tools()).tools

    tools = {t.name: t for t in asyncio.run(scenario())}
    assert set(tools) == TOOLS
    schemas = {name: t.input_schema for name, t in tools.items()}
    assert schemas["dots_dispatch"]["required"] == ["runId", "worker", "instruction", "decisionId"]
    assert set(schemas["dots_tune"]["properties"]["changes"]["properties"]) == {
        "model",
        "effort",
        "timeoutMs",
        "sandbox",
    }
    assert schemas["dots_control"]["properties"]["action"]["enum"] == [
        "pause",
        "resume",
        "cancel",
        "budget",
    ]
    assert schemas["dots_status"]["properties"]["waitMs"]["maximum"] == 240_000
    assert set(schemas["dots_threads"]["properties"]["options"]["properties"]) == {
        "limit",
        "cursor",
        "cwd",
        "searchTerm",
        "archived",
    }
    for schema in schemas.values():  # DOT-14: nothing to pass a confirmation in
        assert "confirmed" not in str(schema).lower()
        assert schema["additionalProperties"] is False


@pytest.mark.rule("DOT-13", "DOT-14", "DOT-9", "DOT-10", "PLN-7")
@pytest.mark.parametrize("mode", ERAS)
def test_two_role_run_through_mcp(offline_codex: OfflineCodex, tmp_path: Path, mode: str) -> None:
    fake = offline_codex.fake
    fake.push(
        Text("reader: the fault is in parse.py"),
        Text("reader: line 3, an off-by-one in the slice"),
        Text("fixer: fixed parse.py, tests pass"),
    )
    dots = make_dots(offline_codex, tmp_path / "state")
    log = Transcript()
    answers = RecordingAnswers(log)

    def sent_ids() -> set[str | None]:
        return {n.decision_id for n in dots.notifier.sent if n.kind == "decision"}

    async def next_decision(c: Any, worker: str) -> dict[str, Any]:
        status = ok(await log.call(c, "dots_status", {"waitMs": 30_000}))
        (pending,) = status["pendingDecisions"]
        assert pending["worker"] == worker
        (run,) = status["runs"]
        current = next(w for w in run["workers"] if w["name"] == worker)
        assert current["decision"]["id"] == pending["decisionId"]  # worker.decision.id
        # DOT-9/10: the decision notice reaches the live connection (MCP notification)
        await until(lambda: pending["decisionId"] in sent_ids())
        return pending

    async def scenario() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with client(dots, mode, answers) as c:
            probe = ok(await log.call(c, "dots_probe"))
            assert probe["model"] == "fake-model"
            started = await log.call(c, "dots_start", {"proposal": two_roles(tmp_path)})
            view = ok(started)
            out["start_text"] = started.content[0].text  # type: ignore[union-attr]
            assert as_json(started) == view  # the same JSON for hosts that read only text
            run_id = view["runId"]
            pending = await next_decision(c, "reader")
            assert pending["replyHead"] == "reader: the fault is in parse.py"
            dispatched = {
                "runId": run_id,
                "worker": "reader",
                "instruction": "which line exactly?",
                "decisionId": pending["decisionId"],
            }
            assert ok(await log.call(c, "dots_dispatch", dispatched))["pendingDecisions"] == []
            pending = await next_decision(c, "reader")
            done = {
                "runId": run_id,
                "worker": "reader",
                "decisionId": pending["decisionId"],
                "conclusion": "CONCLUSION: parse.py:3 off by one",
            }
            assert ok(await log.call(c, "dots_finish", done))["pendingDecisions"] == []
            pending = await next_decision(c, "fixer")
            final = {
                "runId": run_id,
                "worker": "fixer",
                "decisionId": pending["decisionId"],
                "conclusion": "fixed and tested",
            }
            out["final"] = ok(await log.call(c, "dots_finish", final))
            out["notified"] = [n.kind for n in dots.notifier.sent]
        return out

    out = asyncio.run(scenario())
    target = os.environ.get("MARKERTOOLS_DOTS_TRANSCRIPT")
    if target and mode == LEGACY:
        log.write(target)
    assert out["start_text"].startswith("started run ")
    assert out["final"]["state"] == "completed"
    assert [w["state"] for w in out["final"]["workers"]] == ["completed", "completed"]
    assert [w["turns"] for w in out["final"]["workers"]] == [2, 1]
    # DOT-14: two confirmations, the plan and then the launch details, asked of the user
    assert len(answers.asked) == 2
    assert answers.asked[0].startswith("Start this plan?")
    assert "goal:\n  | fix the module\n" in answers.asked[0]
    assert "first instruction:\n      | reader: do your part\n" in answers.asked[0]
    assert answers.asked[1].startswith("Launch these workers?")
    assert "sandbox workspace-write" in answers.asked[1]
    # the dispatched instruction went to the reader's thread, then the fixer started
    bodies = [r.body for r in fake.responses_requests()]
    assert last_user_text(bodies[1]) == "which line exactly?"
    fixer_text = last_user_text(bodies[2]) or ""
    assert fixer_text.startswith("fixer: do your part")
    assert "<<<BEGIN DATA " in fixer_text and "CONCLUSION: parse.py:3 off by one" in fixer_text
    assert out["notified"].count("decision") == 3
