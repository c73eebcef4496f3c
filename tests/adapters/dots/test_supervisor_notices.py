"""Decisions and the outbox (DOT-9, DOT-10, PLN-9) with a clock the test moves: an
unanswered decision is reminded after decisionTimeoutMs, reminders never re-send a
turn, and the retry limit pauses the run; a failing notifier is retried after 5 s then
10 s and its third failure pauses the run; an offline conversation's notices wait and
go out when it comes back. Workers are the scripted fake app-server (fast, no model)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from support.dots import OWNER, Confirm, JsonSupervisor, plan, role, until, workdir, worker
from test_supervisor_faults import fake_bin

from markertools.plans import HostSettings
from markertools_adapters.dots import NoticeOut, Supervisor
from markertools_adapters.dots._views import run_view


class Clock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


class Scripted:
    """A notifier answering from a script (then `default`), recording (time, notice)."""

    def __init__(self, clock: Clock, *answers: str, default: str = "delivered") -> None:
        self.clock = clock
        self.answers = list(answers)
        self.default = default
        self.calls: list[tuple[float, NoticeOut]] = []

    async def notify(self, notice: NoticeOut) -> Any:
        self.calls.append((self.clock.t, notice))
        return self.answers.pop(0) if self.answers else self.default


async def _open(tmp: Path, clock: Clock, notifier: Scripted) -> Supervisor:
    sup = JsonSupervisor(Supervisor(
        tmp / "state",
        codex_bin=fake_bin(tmp, "ok"),
        confirmer=Confirm(),
        notifier=notifier,
        settings=HostSettings(max_concurrent=3, poll_ms=60_000),
        clock=clock,
        tick_seconds=0.02,
    ))
    await sup.open()
    return sup


def _body(tmp: Path) -> dict[str, Any]:
    return plan(
        role("reader", workdir(tmp, "a")),
        supervision={"decisionTimeoutMs": 1000, "maxDecisionRetries": 2, "maxTotalReminders": 8},
    )


@pytest.mark.rule("DOT-9", "PLN-7")
def test_an_unanswered_decision_is_reminded_then_the_run_pauses_and_no_turn_is_resent(
    tmp_path: Path,
) -> None:
    clock = Clock()
    notices = Scripted(clock)

    async def go() -> dict[str, Any]:
        sup = await _open(tmp_path, clock, notices)
        try:
            run_id = (await sup.start(_body(tmp_path), owner=OWNER))["runId"]
            kinds = lambda: [n.kind for _, n in notices.calls]  # noqa: E731
            await until(lambda: kinds() == ["decision"])
            for expected in (["decision", "reminder"], ["decision", "reminder", "reminder"]):
                clock.t += 1.01
                await until(lambda e=expected: kinds() == e)
            clock.t += 1.01
            await until(lambda: sup.status(owner=OWNER, run_id=run_id)[0]["state"] == "paused")
            await until(lambda: kinds()[-1] == "paused")
            return sup.status(owner=OWNER, run_id=run_id)[0]
        finally:
            await sup.close()

    view = asyncio.run(go())
    assert view["pauseReason"] == "decision-retries"
    assert worker(view, "reader")["turns"] == 1 and view["turnsUsed"] == 1  # never re-sent
    decision_ids = {n.decision_id for _, n in notices.calls if n.kind in ("decision", "reminder")}
    assert len(decision_ids) == 1  # reminders name the same decision
    assert "reminder: worker reader still awaits a decision" in notices.calls[1][1].text


@pytest.mark.rule("DOT-10", "PLN-9")
def test_a_failing_notifier_is_retried_after_5_then_10_seconds_and_pauses_the_run(
    tmp_path: Path,
) -> None:
    clock = Clock()
    notices = Scripted(clock, default="failed")

    async def go() -> dict[str, Any]:
        sup = await _open(tmp_path, clock, notices)
        try:
            run_id = (await sup.start(_body(tmp_path), owner=OWNER))["runId"]
            await until(lambda: len(notices.calls) == 1)
            start = notices.calls[0][0]
            clock.t += 4.9
            await asyncio.sleep(0.2)
            assert len(notices.calls) == 1  # not before 5 s
            clock.t += 0.2
            await until(lambda: len(notices.calls) == 2)
            clock.t = start + 5.1 + 9.9
            await asyncio.sleep(0.2)
            assert len(notices.calls) == 2  # not before 10 more seconds
            clock.t = start + 5.1 + 10.1
            await until(lambda: sup.runs[run_id].state.status == "paused")
            times = [t - start for t, _ in notices.calls[:3]]
            assert times[1] == pytest.approx(5.1) and times[2] == pytest.approx(15.2)
            return run_view(sup.runs[run_id].state).to_json()
        finally:
            await sup.close()

    view = asyncio.run(go())
    assert view["pauseReason"] == "notify-failures"
    assert view["alerts"][-1]["message"].startswith(
        "notification delivery failed 3 times in a row (last error: no detail)"
    )


@pytest.mark.rule("DOT-10", "PLN-9")
def test_an_offline_conversation_gets_its_notices_when_it_returns(tmp_path: Path) -> None:
    clock = Clock()
    notices = Scripted(clock, "offline")

    async def go() -> list[str]:
        sup = await _open(tmp_path, clock, notices)
        try:
            await sup.start(_body(tmp_path), owner=OWNER)
            await until(lambda: len(notices.calls) == 1)
            clock.t += 60
            await asyncio.sleep(0.3)
            assert len(notices.calls) == 1  # waits for the conversation: no retries, no failure
            sup.status(owner=OWNER)  # the conversation is back
            await until(lambda: len(notices.calls) == 2)
            return [n.kind for _, n in notices.calls]
        finally:
            await sup.close()

    assert asyncio.run(go()) == ["decision", "decision"]
