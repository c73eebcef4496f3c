"""The supervisor against real `codex app-server` workers (the pinned binary, offline,
the fake Responses server): a two-role plan runs to completed with the fixer's first
instruction carrying the reader's conclusion as data; the run files hold the
app-server's raw notifications and are private to the user."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path

import pytest
from support.codex import OfflineCodex
from support.dots import (
    OWNER,
    Confirm,
    Notices,
    plan,
    raw_notifications,
    role,
    running,
    until,
    workdir,
)

from markertools_adapters.codex.fakemodel import Text, last_user_text


@pytest.mark.rule("DOT-1", "DOT-2", "DOT-3", "DOT-9", "PLN-5")
def test_two_role_plan_runs_to_completed_with_the_conclusion_as_data(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    fake = offline_codex.fake
    fake.push(Text("reader: the fault is in parse.py line 3"), Text("fixer: fixed parse.py"))
    state_dir = tmp_path / "state"
    notices = Notices()
    confirm = Confirm()
    proposal = plan(
        role("reader", workdir(tmp_path, "a")),
        role("fixer", workdir(tmp_path, "b"), dependsOn=["reader"], sandbox="workspace-write"),
    )

    async def scenario() -> tuple[dict, str]:
        async with running(offline_codex, state_dir, confirmer=confirm, notifier=notices) as sup:
            view = await sup.start(proposal, owner=OWNER)
            run_id = view["runId"]
            decisions = lambda: [n for n in notices.seen if n.kind == "decision"]  # noqa: E731
            await until(lambda: len(decisions()) == 1)
            (pending,) = sup.pending_decisions(owner=OWNER)
            assert pending["worker"] == "reader"
            assert decisions()[0].decision_id == pending["decisionId"]
            assert pending["replyHead"] == "reader: the fault is in parse.py line 3"
            sup.finish(owner=OWNER, run_id=run_id, worker="reader", conclusion="CONCLUSION: parse.py:3 off by one", decision_id=pending["decisionId"])
            await until(lambda: len(decisions()) == 2)
            (pending,) = sup.pending_decisions(owner=OWNER)
            assert pending["worker"] == "fixer"
            done = sup.finish(owner=OWNER, run_id=run_id, worker="fixer", conclusion="fixed and tested", decision_id=pending["decisionId"])
            return done, run_id

    done, run_id = asyncio.run(scenario())
    assert done["state"] == "completed"
    assert [w["state"] for w in done["workers"]] == ["completed", "completed"]
    assert [c.step for c in confirm.asked] == ["plan", "launch"]
    # the fixer's first instruction: its own text, then the reader's conclusion framed as data
    bodies = [r.body for r in fake.responses_requests()]
    fixer_text = last_user_text(bodies[1]) or ""
    assert fixer_text.startswith("fixer: do your part")
    assert "the accepted conclusion of role reader" in fixer_text
    assert "<<<BEGIN DATA " in fixer_text and "CONCLUSION: parse.py:3 off by one" in fixer_text
    assert fixer_text.index("<<<BEGIN DATA") < fixer_text.index("CONCLUSION") < fixer_text.index("<<<END DATA")
    # decision notices went out, one per turn
    assert [n.kind for n in notices.seen if n.kind == "decision"] == ["decision", "decision"]
    # DOT-2: the run files, private, holding the raw notifications verbatim
    record = state_dir / f"run-{run_id}.json"
    journal = state_dir / f"run-{run_id}.jsonl"
    for path in (record, journal):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    raws = raw_notifications(state_dir, run_id)
    methods = [m["method"] for m in raws]
    assert methods.count("turn/completed") == 2 and "turn/started" in methods
    saved = json.loads(record.read_text())
    assert saved["status"] == "completed" and saved["owner"] == OWNER
    assert [c["step"] for c in saved["confirmations"]] == ["plan", "launch"]
