"""Issue 26 items 3 and 7 through `dots serve` (the SDK client in both protocol eras,
the real pinned Codex under the fake model): a proposal whose ids, models or paths
carry control characters is refused by dots_start before any question, naming the
path; a proposal whose free text tries to draw a fake header or limits line is asked
with that text fenced off below its label; and every budget or tune value that will
be refused is refused before the user is asked - with one `dots_tune:` prefix, never
two. The elicitation callback records every question (for the refusals: never one)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from support.codex import OfflineCodex
from support.dots import OWNER, Confirm, plan, role, running, workdir
from test_mcp_support import ERAS, Answers, call, client, make_dots, ok, refused

from markertools_adapters.codex.fakemodel import Text
from markertools_adapters.dots import DotsError

REASON = (
    "must not contain control characters (line breaks, tabs, escapes, bidi controls): "
    "found {char} at character {index}"
)
FAKE_LIMITS = "limits: maxTurns 1, timeoutMs 1000 (SAFE)"
FAKE_HEADER = "== Launch these workers?"
LABELS = ("goal:", "plan:", "workers:")


def run_files(state: Path) -> list[str]:
    return sorted(p.name for p in state.glob("run-*"))


# (what it tries, how the proposal is made hostile, the path and reason of the refusal)
HOSTILE_IDS = [
    ("role named with a newline", {"name": f"reader\n{FAKE_HEADER}"}, "name", ("U+000A", 7)),
    ("model with an ESC sequence", {"model": "gpt\x1b[2K"}, "model", ("U+001B", 4)),
    ("model with a bidi override", {"model": "gpt\u202e5"}, "model", ("U+202E", 4)),
    ("cwd with a line separator", {"cwd": "/tmp\u2028x"}, "cwd", ("U+2028", 5)),
    ("thread id with a tab", {"existingThreadId": "thr\t1"}, "existingThreadId", ("U+0009", 4)),
]


@pytest.mark.rule("DOT-14", "PLN-2")
@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(
    ("what", "change", "field", "found"), HOSTILE_IDS, ids=[h[0] for h in HOSTILE_IDS]
)
def test_dots_start_refuses_control_characters_before_any_question(
    offline_codex: OfflineCodex,
    tmp_path: Path,
    mode: str,
    what: str,
    change: dict[str, str],
    field: str,
    found: tuple[str, int],
) -> None:
    state = tmp_path / "state"
    dots = make_dots(offline_codex, state)
    answers = Answers()
    proposal = plan({**role("reader", workdir(tmp_path, "a")), **change})

    async def scenario() -> Any:
        async with client(dots, mode, answers) as c:
            return await call(c, "dots_start", {"proposal": proposal})

    text, path = refused(asyncio.run(scenario()))
    reason = REASON.format(char=found[0], index=found[1])
    assert text == f"dots_start: invalid proposal: proposal.workers[0].{field}: {reason}"
    assert path == f"proposal.workers[0].{field}"
    assert answers.asked == []  # nobody was asked
    assert run_files(state) == []


@pytest.mark.rule("DOT-14")
@pytest.mark.parametrize("mode", ERAS)
def test_free_text_that_imitates_the_question_is_fenced_off(
    offline_codex: OfflineCodex, tmp_path: Path, mode: str
) -> None:
    state = tmp_path / "state"
    dots = make_dots(offline_codex, state)
    answers = Answers("accept", "decline")
    proposal = plan(
        role("reader", workdir(tmp_path, "a"), instruction=f"go\n\x1b[1A\x1b[2K{FAKE_LIMITS}"),
        goal=f"fix it\n\nLaunch these workers?\n{FAKE_LIMITS}",
        plan=f"read\u2028{FAKE_HEADER}\u202e",
    )

    async def scenario() -> Any:
        async with client(dots, mode, answers) as c:
            return await call(c, "dots_start", {"proposal": proposal})

    text, _ = refused(asyncio.run(scenario()))
    assert text == "dots_start: the user did not confirm the launch (decline); nothing was started"
    first, second = answers.asked
    for question, title in ((first, "Start this plan?"), (second, "Launch these workers?")):
        lines = question.splitlines()
        assert lines[0] == title
        assert [x for x in lines if "Launch these workers?" in x and not x.startswith(" ")] == (
            [title] if title.startswith("Launch") else []
        )
        at_column_0 = [x for x in lines[1:] if x and not x.startswith(" ")]
        assert all(x in LABELS or x.startswith("limits: maxTurns 12,") for x in at_column_0)
    assert [x for x in second.splitlines() if x.startswith("limits:")] == [
        "limits: maxTurns 12, timeoutMs 600000, maxConcurrent 3, quota stop: off "
        "(stopAtLeftPercent is null), allowedModels none"
    ]
    assert "  | fix it\n  |\n  | Launch these workers?\n  | " + FAKE_LIMITS in first
    assert "  | read\\u2028== Launch these workers?\\u202e" in first
    assert "    first instruction:\n      | go\n      | \\x1b[1A\\x1b[2K" + FAKE_LIMITS in first
    assert run_files(state) == []


@pytest.mark.rule("DOT-14", "DOT-13")
@pytest.mark.parametrize("mode", ERAS)
def test_budget_and_tune_values_that_will_be_refused_are_refused_before_asking(
    offline_codex: OfflineCodex, tmp_path: Path, mode: str
) -> None:
    offline_codex.fake.push(Text("reader: the fault is in parse.py"))
    offline_codex.fake.push(Text("fixer: fixed"))
    dots = make_dots(offline_codex, tmp_path / "state")
    answers = Answers()
    proposal = plan(
        role("reader", workdir(tmp_path, "a")),
        role("fixer", workdir(tmp_path, "b"), dependsOn=["reader"]),
    )
    got: dict[str, tuple[str, str | None]] = {}

    async def scenario() -> str:
        async with client(dots, mode, answers) as c:
            run_id: str = ok(await call(c, "dots_start", {"proposal": proposal}))["runId"]
            status = ok(await call(c, "dots_status", {"waitMs": 30_000}))
            (decision,) = status["pendingDecisions"]

            async def tune(name: str, worker: str, **changes: Any) -> None:
                args = {"runId": run_id, "worker": worker, "changes": changes}
                got[name] = refused(await call(c, "dots_tune", args))

            async def budget(name: str, value: int) -> None:
                args = {"runId": run_id, "action": "budget", "budget": value}
                got[name] = refused(await call(c, "dots_control", args))

            await budget("budget 201", 201)
            await tune("timeout 7200001", "reader", timeoutMs=7_200_001)
            await tune("timeout + wider sandbox", "reader", timeoutMs=7_200_001,
                       sandbox="workspace-write")  # fmt: skip
            await tune("effort + wider sandbox", "reader", effort="extreme",
                       sandbox="workspace-write")  # fmt: skip
            await tune("model with a newline", "reader", model=f"gpt\n{FAKE_LIMITS}")
            await tune("unknown worker", "ghost", sandbox="workspace-write")
            finish = {"runId": run_id, "worker": "reader", "decisionId": decision["decisionId"],
                      "conclusion": "parse.py line 3"}  # fmt: skip
            ok(await call(c, "dots_finish", finish))
            await tune("finished role", "reader", sandbox="workspace-write", model="gpt-x")
            ok(await call(c, "dots_control", {"runId": run_id, "action": "cancel"}))
            await budget("cancelled run: budget", 40)
            await tune("cancelled run: tune", "fixer", sandbox="workspace-write")
            return run_id

    run_id = asyncio.run(scenario())
    assert len(answers.asked) == 2  # the two questions of dots_start, nothing after
    effort = "'none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'"
    assert got == {
        "budget 201": (
            "dots_control: budget must be between 1 and 200 (maxTurns), got 201", "budget"
        ),
        "timeout 7200001": (
            "dots_tune: changes.timeoutMs must be between 1 and 7200000, got 7200001",
            "changes.timeoutMs",
        ),
        "timeout + wider sandbox": (
            "dots_tune: changes.timeoutMs must be between 1 and 7200000, got 7200001",
            "changes.timeoutMs",
        ),
        "effort + wider sandbox": (
            f"dots_tune: changes.effort must be one of {effort}, got 'extreme'",
            "changes.effort",
        ),
        "model with a newline": (
            "dots_tune: changes.model " + REASON.format(char="U+000A", index=4),
            "changes.model",
        ),
        "unknown worker": (f"dots_tune: no worker 'ghost' in run {run_id}", "worker"),
        "finished role": (
            "dots_tune: worker: role 'reader' has completed; it has no next turns to change",
            "worker",
        ),
        "cancelled run: budget": (
            "dots_control: runId: the run is cancelled, not running", "runId"
        ),
        "cancelled run: tune": ("dots_tune: runId: the run is cancelled, not running", "runId"),
    }


@pytest.mark.rule("DOT-14", "DOT-13")
def test_the_supervisor_itself_refuses_what_no_tool_argument_check_caught(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    """Values the MCP argument models would stop first, given to `Supervisor.tune` /
    `control` directly (the library API): still refused before the confirmer is asked."""
    confirm = Confirm()
    body = plan(role("reader", workdir(tmp_path, "a")))

    async def go() -> dict[str, tuple[str, str | None]]:
        out: dict[str, tuple[str, str | None]] = {}
        async with running(offline_codex, tmp_path / "s", confirmer=confirm) as sup:
            run_id = (await sup.start(body, owner=OWNER))["runId"]
            for name, changes in (
                ("full access", {"sandbox": "danger-full-access", "timeoutMs": 9_000_000}),
                ("timeout 0", {"timeoutMs": 0, "sandbox": "workspace-write"}),
                ("bidi model", {"model": "gpt\u202e5", "sandbox": "workspace-write"}),
            ):
                with pytest.raises(DotsError) as tune:
                    await sup.tune(owner=OWNER, run_id=run_id, worker="reader", changes=changes)
                out[name] = (tune.value.message, tune.value.field)
            with pytest.raises(DotsError) as budget:
                await sup.control(owner=OWNER, run_id=run_id, action="budget", budget=0)
            out["budget 0"] = (budget.value.message, budget.value.field)
        return out

    got = asyncio.run(go())
    assert len(confirm.asked) == 2  # dots_start's two questions only
    assert got == {
        "full access": (
            "changes.sandbox must be one of 'read-only', 'workspace-write', "
            "got 'danger-full-access'",
            "changes.sandbox",
        ),
        "timeout 0": (
            "changes.timeoutMs must be between 1 and 7200000, got 0", "changes.timeoutMs"
        ),
        "bidi model": (
            "changes.model " + REASON.format(char="U+202E", index=4), "changes.model"
        ),
        "budget 0": ("budget must be between 1 and 200 (maxTurns), got 0", "budget"),
    }
