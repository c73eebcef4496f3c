"""Background work is supervised (issue 25, DOT-1): an exception planted in each of the
supervisor's background paths - delivering a notice, polling the quota, timing a turn
out, refusing an approval request, ending the workers - pauses that run with an alert
naming what failed; the supervisor stays alive (its next call works, another run goes
on) and no task exception is ever left unretrieved. On the real pinned Codex binary,
offline, under the fake model."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

import pytest
from support.codex import OfflineCodex
from support.dots import OWNER, plan, role, running, until, workdir

from markertools.plans import HostSettings
from markertools_adapters.codex.fakemodel import ShellCall, Text


def planted(what: str) -> Any:
    async def fail(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError(f"planted in {what}")

    def fail_now(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError(f"planted in {what}")

    return fail_now if what == "notice_out" else fail


async def _scenario(
    codex: OfflineCodex, tmp: Path, patch: str, body: dict[str, Any], trigger: Any
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """Run `body` with `patch` planted, `trigger` it, wait for the pause; then check the
    supervisor still answers and starts a second run. Returns (the faulted run's view,
    unretrieved exceptions seen by the loop, the second run's view)."""
    unhandled: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: unhandled.append(ctx))
    settings = HostSettings(max_concurrent=3, poll_ms=1000)
    async with running(codex, tmp / "state", settings=settings) as sup:
        setattr(sup.sup, patch, planted(patch))
        run_id = (await sup.start(body, owner=OWNER))["runId"]
        await trigger(sup, run_id)

        def faulted() -> bool:
            view = sup.status(owner=OWNER, run_id=run_id)[0]
            return any("supervisor failed while" in a["message"] for a in view["alerts"])

        await until(faulted, 30)
        view = sup.status(owner=OWNER, run_id=run_id)[0]
        delattr(sup.sup, patch)  # the fault is gone; the supervisor never went away
        # alive: a second run starts and reaches its decision
        codex.fake.push(Text("second run: done"))
        other = plan(role("other", workdir(tmp, "other")))
        second = (await sup.start(other, owner=OWNER))["runId"]
        await until(lambda: any(p["runId"] == second for p in sup.pending_decisions(owner=OWNER)), 30)
        second_view = sup.status(owner=OWNER, run_id=second)[0]
    gc.collect()
    await asyncio.sleep(0)
    return view, unhandled, second_view


def _check(view: dict[str, Any], unhandled: list[dict[str, Any]], second: dict[str, Any], what: str) -> None:
    alert = next(a["message"] for a in view["alerts"] if "supervisor failed while" in a["message"])
    assert f"the supervisor failed while {what} (RuntimeError: planted in" in alert
    assert "the run is paused and can be resumed" in alert
    assert unhandled == []  # nothing "never retrieved", no loop-level error
    assert second["workers"][0]["state"] == "awaiting-decision"


async def _wait_decision(sup: Any, run_id: str) -> None:
    await until(lambda: bool(sup.pending_decisions(owner=OWNER)), 30)


@pytest.mark.rule("DOT-1", "DOT-9")
def test_a_fault_while_delivering_a_notice_pauses_the_run(offline_codex: OfflineCodex, tmp_path: Path) -> None:
    offline_codex.fake.push(Text("reader: found it"))
    body = plan(role("reader", workdir(tmp_path, "a")))

    async def go() -> Any:
        async def nothing(sup: Any, run_id: str) -> None:
            return None

        return await _scenario(offline_codex, tmp_path, "notice_out", body, nothing)

    view, unhandled, second = asyncio.run(go())
    _check(view, unhandled, second, "notice")
    assert view["state"] == "paused" and view["pauseReason"] == "internal-error"


@pytest.mark.rule("DOT-1", "DOT-8")
def test_a_fault_while_polling_the_quota_pauses_the_run(offline_codex: OfflineCodex, tmp_path: Path) -> None:
    offline_codex.fake.push(Text("slow answer", delay=3.0))  # live for 3 s: the poll comes
    body = plan(role("reader", workdir(tmp_path, "a")))

    async def go() -> Any:
        async def nothing(sup: Any, run_id: str) -> None:
            return None

        return await _scenario(offline_codex, tmp_path, "_poll_quota", body, nothing)

    view, unhandled, second = asyncio.run(go())
    _check(view, unhandled, second, "quota poll")


@pytest.mark.rule("DOT-1", "DOT-4")
def test_a_fault_while_timing_a_turn_out_pauses_the_run(offline_codex: OfflineCodex, tmp_path: Path) -> None:
    offline_codex.fake.push(Text("too slow", delay=4.0))  # past its 1 s timeoutMs
    body = plan(role("reader", workdir(tmp_path, "a")), timeoutMs=1000)

    async def go() -> Any:
        async def nothing(sup: Any, run_id: str) -> None:
            return None

        return await _scenario(offline_codex, tmp_path, "_time_out", body, nothing)

    view, unhandled, second = asyncio.run(go())
    _check(view, unhandled, second, "timeout of reader")


@pytest.mark.rule("DOT-1", "DOT-7")
def test_a_fault_while_refusing_an_approval_pauses_the_run(offline_codex: OfflineCodex, tmp_path: Path) -> None:
    offline_codex.fake.push(ShellCall("rm -rf /tmp/x"), Text("after the refusal"))
    body = plan(role("reader", workdir(tmp_path, "a"), sandbox="workspace-write"))

    async def go() -> Any:
        async def nothing(sup: Any, run_id: str) -> None:
            return None

        return await _scenario(offline_codex, tmp_path, "_refused_request", body, nothing)

    view, unhandled, second = asyncio.run(go())
    _check(view, unhandled, second, "refusal to reader")


@pytest.mark.rule("DOT-1", "DOT-16")
def test_a_fault_while_ending_the_workers_is_an_alert_and_the_supervisor_lives(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    offline_codex.fake.push(Text("reader: found it"))
    body = plan(role("reader", workdir(tmp_path, "a")))

    async def go() -> Any:
        async def finish_run(sup: Any, run_id: str) -> None:
            await _wait_decision(sup, run_id)
            sup.finish(owner=OWNER, run_id=run_id, conclusion="done")  # ends the workers

        return await _scenario(offline_codex, tmp_path, "end_workers", body, finish_run)

    view, unhandled, second = asyncio.run(go())
    _check(view, unhandled, second, "ending workers")
    assert view["state"] == "completed"  # a finished run only records the alert
