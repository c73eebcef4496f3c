"""`markertools dots view` on a run the real supervisor is driving (the pinned Codex CLI
offline, the fake Responses server): while the supervisor holds the state directory's
host lock and the reader awaits a decision, the command reads the run as it stands and
the page, in a real headless Chromium, shows the reader's finished turn with its
instruction and the head of the real reply, and the fixer's lane still empty."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.browser import Chromium, chromium_bin, distinct_colours
from support.cli import cli
from support.codex import OfflineCodex
from support.dots import OWNER, Notices, plan, role, running, until, workdir

from markertools_adapters.codex.fakemodel import Text


@pytest.mark.rule("VEW-2", "DOT-2")
def test_a_run_in_progress_shows_what_is_known_so_far(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    offline_codex.fake.push(Text("reader: the fault is in parse.py line 3\nmore evidence below"))
    state = tmp_path / "state"
    out = tmp_path / "run.html"
    notices = Notices()
    proposal = plan(
        role("reader", workdir(tmp_path, "a")),
        role("fixer", workdir(tmp_path, "b"), dependsOn=["reader"]),
    )

    async def scenario() -> tuple[str, str]:
        async with running(offline_codex, state, notifier=notices) as sup:
            run_id = (await sup.start(proposal, owner=OWNER))["runId"]
            await until(lambda: any(n.kind == "decision" for n in notices.seen))
            done = await asyncio.to_thread(
                cli, "dots", "view", run_id, "--state-dir", str(state), "--out", str(out)
            )
            assert done.returncode == 0 and done.stderr == "", done.stderr
            return run_id, done.stdout

    run_id, line = asyncio.run(scenario())
    assert line.startswith(f"wrote {out} (") and "in progress: what is known so far" in line
    assert "1 turn in 2 lanes" in line
    browser = Chromium(chromium_bin())
    try:
        page = browser.page()
        page.open(out)
        lanes = page.eval("[...document.querySelectorAll('#timeline .lane-sub')].map(e => e.textContent)")
        assert lanes == ["run · running", "awaiting-decision · 1 turn", "queued · 0 turns"]
        page.click("#timeline g.turn", 0)
        assert page.text("#turn-detail").startswith("reader · turn 1 · completed")
        assert page.text("#turn-detail pre.instruction") == "reader: do your part"
        assert page.text("#turn-detail pre.reply").startswith("reader: the fault is in parse.py line 3")
        assert run_id in page.text("h1")
        page.settle()
        assert page.requests == [out.resolve().as_uri()] and page.errors == []
        colours, dominant = distinct_colours(page.screenshot(tmp_path / "run-real.png"))
        assert colours >= 16 and dominant < 0.97
    finally:
        browser.close()
