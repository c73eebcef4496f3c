"""DOT-14 through MCP elicitation, in both protocol eras (handshake-era
`elicitation/create` mid-call; 2026-07-28 `InputRequiredResult` and a retry): accepted,
declined at either step, accepted without the tick, unsupported by the client (a clear
tool error, never an implicit yes); dots_tune and a raised budget ask, a narrowing
tune asks nothing. A refused confirmation creates and changes nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from support.codex import OfflineCodex
from support.dots import plan, role, workdir
from test_mcp_support import ERAS, Answers, call, client, make_dots, ok, refused

from markertools_adapters.codex.fakemodel import Text


def one_role(tmp: Path) -> dict[str, Any]:
    return plan(role("reader", workdir(tmp, "a")))


def run_files(state: Path) -> list[str]:
    return sorted(p.name for p in state.glob("run-*"))


@pytest.mark.rule("DOT-14")
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(
    ("script", "step", "answer"),
    [
        (("decline",), "plan", "decline"),
        (("cancel",), "plan", "cancel"),
        (("accept", "decline"), "launch", "decline"),
        (("accept-unticked",), "plan", "decline"),
    ],
)
def test_a_refused_confirmation_starts_nothing(
    offline_codex: OfflineCodex,
    tmp_path: Path,
    mode: str,
    script: tuple[str, ...],
    step: str,
    answer: str,
) -> None:
    state = tmp_path / "state"
    dots = make_dots(offline_codex, state)
    answers = Answers(*script)

    async def scenario() -> tuple[Any, Any]:
        async with client(dots, mode, answers) as c:
            result = await call(c, "dots_start", {"proposal": one_role(tmp_path)})
            status = ok(await call(c, "dots_status"))
            return result, status

    result, status = asyncio.run(scenario())
    text, field = refused(result)
    assert text == (
        f"dots_start: the user did not confirm the {step} ({answer}); nothing was started"
    )
    assert field is None
    assert len(answers.asked) == len(script)
    assert status["runs"] == [] and run_files(state) == []
    assert offline_codex.fake.responses_requests() == []


@pytest.mark.rule("DOT-14")
@pytest.mark.parametrize("mode", ERAS)
def test_a_client_without_elicitation_is_refused_clearly(
    offline_codex: OfflineCodex, tmp_path: Path, mode: str
) -> None:
    state = tmp_path / "state"
    dots = make_dots(offline_codex, state)

    async def scenario() -> Any:
        async with client(dots, mode, None) as c:  # no callback: no elicitation capability
            return await call(c, "dots_start", {"proposal": one_role(tmp_path)})

    text, _ = refused(asyncio.run(scenario()))
    assert text == (
        "dots_start: dots_start needs the user's confirmation (Start this plan?), but this "
        "MCP client cannot ask the user (it did not declare the elicitation capability); "
        "nothing was changed"
    )
    assert run_files(state) == []


@pytest.mark.rule("DOT-14", "DOT-13")
@pytest.mark.parametrize("mode", ERAS)
def test_tune_and_budget_ask_when_they_widen(
    offline_codex: OfflineCodex, tmp_path: Path, mode: str
) -> None:
    offline_codex.fake.push(Text("reader: read it"))
    dots = make_dots(offline_codex, tmp_path / "state")
    # start (2x accept), widen sandbox: decline, widen sandbox: accept, budget up: decline
    answers = Answers("accept", "accept", "decline", "accept", "decline")

    async def scenario() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with client(dots, mode, answers) as c:
            run_id = ok(await call(c, "dots_start", {"proposal": one_role(tmp_path)}))["runId"]
            ok(await call(c, "dots_status", {"waitMs": 30_000}))
            widen = {"runId": run_id, "worker": "reader", "changes": {"sandbox": "workspace-write"}}
            out["declined"] = refused(await call(c, "dots_tune", widen))
            out["accepted"] = ok(await call(c, "dots_tune", widen))
            asked = len(answers.asked)
            narrow = {"runId": run_id, "worker": "reader", "changes": {"effort": "low"}}
            ok(await call(c, "dots_tune", narrow))
            out["narrow_asked"] = len(answers.asked) - asked
            more = {"runId": run_id, "action": "budget", "budget": 40}
            out["budget"] = refused(await call(c, "dots_control", more))
            fewer = {"runId": run_id, "action": "budget", "budget": 6}
            out["fewer"] = ok(await call(c, "dots_control", fewer))
        return out

    out = asyncio.run(scenario())
    assert out["declined"] == (
        "dots_tune: changes: the user did not confirm the change (decline); nothing changed",
        "changes",
    )
    reader = next(w for w in out["accepted"]["workers"] if w["name"] == "reader")
    assert reader["sandbox"] == "workspace-write"
    assert out["narrow_asked"] == 0
    assert out["budget"] == (
        "dots_control: the user did not confirm the new budget (decline); nothing changed",
        "budget",
    )
    assert out["fewer"]["maxTurns"] == 6
    assert answers.asked[2].startswith("Change worker reader?")
    assert "sandbox read-only -> workspace-write" in answers.asked[2]
    assert answers.asked[4].startswith("Raise the turn budget?")
