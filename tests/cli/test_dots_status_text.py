"""`markertools dots status` as text (issue 24 item 5), on state directories written by
the real plan store through the pure core: a paused run shows why; the latest alerts
and the pending notices show; the quota line says "unknown" when the window the plan
watches was not reported (with what the last report held, and since when), never a
bare "88% left" beside an alert saying the window is missing; a cancelled run does not
list its unfinished roles as paused or queued. The same lines are `dots run`'s live view
and final print (see test_dots_terminal.py). JSON only grows (docs/cli.md)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from support.codex import OfflineCodex
from support.dots import OWNER, plan, role, running, until, workdir, worker

from markertools.plans import (
    Cancel,
    Event,
    Finish,
    HostSettings,
    Launch,
    Pause,
    QuotaObserved,
    QuotaWindow,
    StartRun,
    TurnEnded,
    TurnStarted,
    new_run,
    validate_proposal,
)
from markertools_adapters.codex.fakemodel import Text, rate_limit_headers
from markertools_adapters.planstore import RunJournal, host

AT = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC; the commands below run with TZ=UTC
SHOWN = "2027-01-15 08:00"  # a day other than today: date and time


def two_roles(tmp: Path, **quota: Any) -> dict[str, Any]:
    return plan(
        role("reader", tmp),
        role("fixer", tmp, dependsOn=["reader"]),
        quota={"stopAtLeftPercent": 25, **quota},
    )


def first_turn() -> list[Event]:
    reply = "reader: the fault is in parse.py\nline 3, off by one"
    return [
        StartRun("e1"),
        Launch("e2", "reader"),
        TurnStarted("e3", "reader", "thread-1", "turn-1"),
        TurnEnded("e4", "reader", "d1", reply, "completed"),
    ]


def journal(root: Path, raw: dict[str, Any], events: list[Event]) -> str:
    proposal = validate_proposal(raw).proposal
    assert proposal is not None
    run_id = uuid.uuid4().hex
    with host(root) as (store, lock):
        run = RunJournal.create(store, lock, new_run(run_id, proposal, AT, owner="terminal"))
        for event in events:
            run.submit(event, AT)
    return run_id


def status(root: Path, *extra: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "markertools", "dots", "status", "--state-dir", str(root), *extra],
        capture_output=True, text=True, timeout=60, env={**os.environ, "TZ": "UTC"},
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


@pytest.mark.rule("DOT-8", "PLN-8")
def test_a_paused_run_shows_why_its_alerts_notices_and_an_unknown_quota(tmp_path: Path) -> None:
    root = tmp_path / "state"
    seen = (QuotaWindow(88.0, "codex", 300),)  # the 5-hour window; the plan watches the weekly one
    run_id = journal(
        root, two_roles(tmp_path, windowMinutes=10080), [*first_turn(), QuotaObserved("e5", seen), Pause("e6")]
    )
    assert status(root).splitlines() == [
        f"run {run_id}: paused (1/12 turns)",
        "  paused: paused on request",
        f"  quota: unknown since {SHOWN}: the window the plan watches (10080-min window) was not "
        "reported; the last report had 88% left of the 300-min window (bucket codex)",
        "  notices pending: 1 (the pause), not delivered yet",
        "  reader       paused             turns 1   reader: the fault is in parse.py",
        "  fixer        queued             turns 0",
        f"  alert {SHOWN}: the quota window to watch (bucket any, 10080 minutes) was not reported; "
        "the quota stop could not be checked",
        f"  alert {SHOWN}: paused on request",
    ]


@pytest.mark.rule("DOT-8", "PLN-8")
def test_an_observed_quota_shows_its_window_and_the_stop(tmp_path: Path) -> None:
    root = tmp_path / "state"
    seen = (QuotaWindow(88.0, "codex", 300),)
    journal(root, two_roles(tmp_path, windowMinutes=300), [*first_turn(), QuotaObserved("e5", seen)])
    lines = status(root).splitlines()
    assert lines[1] == "  quota: 88% left of the 300-min window (bucket codex); the run pauses at 25% left"
    assert "  paused:" not in "\n".join(lines)


@pytest.mark.rule("DOT-8", "PLN-8")
def test_a_run_whose_turns_report_the_watched_window_has_no_unknown_quota_alert(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    """Issue 36: the supervisor's first quota poll comes as the first turn starts, before
    any model response has reported a window; it used to record an empty observation,
    and `dots status` then showed "the quota window to watch (bucket any, 300 minutes)
    was not reported; the quota stop could not be checked" for a run whose turns did
    report that window. A real run on the pinned Codex (offline, the fake model sending
    the rate-limit headers): the status shows the window, and no such alert."""
    fake = offline_codex.fake
    fake.rate_limit_headers = rate_limit_headers(40.0, 300, 1893456000)  # 60 % left
    fake.default_reply = None
    fake.reply_for = lambda body: Text("reader: the fault is in parse.py", delay=1.5)
    root = tmp_path / "state"
    raw = plan(
        role("reader", workdir(tmp_path, "a")),
        quota={"stopAtLeftPercent": 25, "windowMinutes": 300},
    )

    async def go() -> str:
        # the first poll comes as the turn starts, another while its one response waits
        settings = HostSettings(max_concurrent=3, poll_ms=1000)
        async with running(offline_codex, root, settings=settings) as sup:
            run_id: str = (await sup.start(raw, owner=OWNER))["runId"]

            def ended() -> bool:
                view = sup.status(owner=OWNER, run_id=run_id)[0]
                return worker(view, "reader").get("lastOutcome") == "completed"

            await until(ended)
            return run_id

    run_id = asyncio.run(go())
    lines = status(root).splitlines()
    assert lines[0] == f"run {run_id}: running (1/12 turns)"
    assert lines[1] == (
        "  quota: 60% left of the 300-min window (bucket codex); the run pauses at 25% left"
    )
    assert not [line for line in lines if "was not reported" in line], lines
    assert not [line for line in lines if "could not be checked" in line], lines
    assert not [line for line in lines if line.startswith("  alert ")], lines
    (view,) = json.loads(status(root, "--json"))["runs"]
    assert view["quota"]["unknown"] is False
    assert view["alerts"] == []


@pytest.mark.rule("DOT-16", "PLN-6")
def test_a_cancelled_run_does_not_list_its_roles_as_paused_or_queued(tmp_path: Path) -> None:
    root = tmp_path / "state"
    run_id = journal(root, two_roles(tmp_path), [*first_turn(), Cancel("e5")])
    assert status(root).splitlines()[:5] == [
        f"run {run_id}: cancelled (1/12 turns)",
        "  quota: not reported yet",
        "  notices pending: 1 (the cancellation), not delivered yet",
        "  reader       not finished (run cancelled) turns 1   reader: the fault is in parse.py",
        "  fixer        not finished (run cancelled) turns 0",
    ]


@pytest.mark.rule("DOT-16", "DOT-13")
def test_after_a_cancel_the_columns_stay_aligned_and_the_pending_notice_says_what_it_is(
    tmp_path: Path,
) -> None:
    """Issue 36 item 7: a completed role beside one the cancel left unfinished used to
    read "completed          turns 2" above "not finished (run cancelled) turns 0"; and
    "notices pending: 1" said nothing of what was pending."""
    root = tmp_path / "state"
    raw = plan(role("reader", tmp_path), role("fixer", tmp_path), quota={"stopAtLeftPercent": None})
    events: list[Event] = [
        *first_turn(),
        Finish("e5", "reader", "parse.py line 3", "d1"),
        Launch("e6", "fixer"),
        TurnStarted("e7", "fixer", "thread-2", "turn-2"),
        TurnEnded("e8", "fixer", "d2", "fixer: fixed", "completed"),
        Cancel("e9"),
    ]
    run_id = journal(root, raw, events)
    lines = status(root).splitlines()
    assert lines[:5] == [
        f"run {run_id}: cancelled (2/12 turns)",
        "  quota: not reported yet",
        "  notices pending: 1 (the cancellation), not delivered yet",
        "  reader       completed                    turns 1   reader: the fault is in parse.py",
        "  fixer        not finished (run cancelled) turns 1   fixer: fixed",
    ]
    assert lines[3].index("turns") == lines[4].index("turns")


@pytest.mark.rule("DOT-16", "DOT-13")
def test_a_run_with_nothing_pending_shows_no_notice_line(tmp_path: Path) -> None:
    root = tmp_path / "state"
    run_id = journal(root, two_roles(tmp_path), [StartRun("e1")])
    lines = status(root).splitlines()
    assert lines[0] == f"run {run_id}: running (0/12 turns)"
    assert not any("notices pending" in line for line in lines)


@pytest.mark.rule("DOT-13")
def test_the_json_view_only_grows(tmp_path: Path) -> None:
    root = tmp_path / "state"
    seen = (QuotaWindow(88.0, "codex", 300),)
    journal(root, two_roles(tmp_path, windowMinutes=10080), [*first_turn(), QuotaObserved("e5", seen), Pause("e6")])
    (view,) = json.loads(status(root, "--json"))["runs"]
    before = {"runId", "state", "goal", "pauseReason", "turnsUsed", "maxTurns", "workers", "quota",
              "alerts", "pendingNotices"}
    assert before <= set(view)
    assert {"windows", "unknown", "stopAtLeftPercent"} <= set(view["quota"])
    assert view["pauseReason"] == "user"
    assert view["pauseDetail"] == "paused on request"
    assert view["quota"]["unknown"] is True
    assert view["quota"]["unknownSince"] == AT
    assert view["quota"]["watch"] == {"bucket": None, "windowMinutes": 10080}
    assert view["quota"]["windows"] == [{"leftPercent": 88.0, "bucket": "codex", "windowMinutes": 300}]


@pytest.mark.rule("DOT-14", "DOT-13")
def test_hidden_characters_in_names_replies_and_alerts_are_shown_escaped(tmp_path: Path) -> None:
    """Issue 37 item 6: a role named with a zero-width space and a reply carrying tag
    characters read like plain text in `dots status`."""
    root = tmp_path / "state"
    raw = plan(role("read\u200ber", tmp_path), quota={"stopAtLeftPercent": None})
    tags = "".join(chr(0xE0000 + ord(c)) for c in "rm")
    events: list[Event] = [
        StartRun("e1"),
        Launch("e2", "read\u200ber"),
        TurnStarted("e3", "read\u200ber", "thread-1", "turn-1"),
        TurnEnded("e4", "read\u200ber", "d1", f"done{tags}\ufeff", "completed"),
    ]
    journal(root, raw, events)
    out = status(root)
    assert "  read\\u200ber completed" not in out  # (it awaits a decision)
    assert "  read\\u200ber" in out and "done\\U000e0072\\U000e006d\\ufeff" in out
    assert not any(0xE0000 <= ord(c) <= 0xE007F or c in "\u200b\ufeff" for c in out)
