"""`markertools dots serve` over stdio (the console script in a child process, the
SDK's client on the other end), against the real pinned Codex (offline; the server
inherits the offline CODEX_HOME environment): the two-role run in both protocol eras,
notices through `--notify-command` (the notice JSON on stdin), the reconnect rule of
DOT-15 (a new connection without a conversation key sees nothing; the same
`_meta["markertools/conversation"]` sees its runs again, still paused-safe after the
restart), and a server started inside a worker refusing changes."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from support.codex import OfflineCodex
from support.dots import plan, role, until, workdir
from test_mcp_support import ERAS, LEGACY, MODERN, Answers, call, ok, refused

from markertools_adapters.codex.fakemodel import Text

MARKERTOOLS = str(Path(sys.executable).parent / "markertools")


@asynccontextmanager
async def served(
    codex: OfflineCodex,
    state: Path,
    mode: str,
    answers: Answers | None,
    *extra: str,
    env: dict[str, str] | None = None,
) -> AsyncIterator[Client]:
    args = ["dots", "serve", "--state-dir", str(state), "--codex-bin", codex.binary]
    args += ["--poll-ms", "1000", *extra]
    params = StdioServerParameters(command=MARKERTOOLS, args=args, env={**codex.env, **(env or {})})
    async with Client(
        params, mode=mode, elicitation_callback=answers, read_timeout_seconds=60
    ) as c:
        yield c


def two_roles(tmp: Path) -> dict[str, Any]:
    return plan(
        role("reader", workdir(tmp, "a")),
        role("fixer", workdir(tmp, "b"), dependsOn=["reader"]),
    )


@pytest.mark.rule("DOT-13", "DOT-14", "DOT-10")
@pytest.mark.parametrize("mode", ERAS)
def test_two_role_run_over_stdio_with_a_notify_command(
    offline_codex: OfflineCodex, tmp_path: Path, mode: str
) -> None:
    offline_codex.fake.push(Text("reader: parse.py:3"), Text("fixer: fixed"))
    inbox = tmp_path / "notices.jsonl"
    hook = tmp_path / "hook.py"
    hook.write_text(
        "import sys\n"
        f"with open({str(inbox)!r}, 'a') as f:\n"
        "    f.write(sys.stdin.read().replace('\\n', ' ') + '\\n')\n"
    )
    command = f"{sys.executable} {hook}"
    answers = Answers()

    def notices() -> list[dict[str, Any]]:
        if not inbox.exists():
            return []
        return [json.loads(line) for line in inbox.read_text().splitlines()]

    async def scenario() -> dict[str, Any]:
        async with served(
            offline_codex, tmp_path / "state", mode, answers, "--notify-command", command
        ) as c:
            tools = {t.name for t in (await c.list_tools()).tools}
            assert len(tools) == 9
            run_id = ok(await call(c, "dots_start", {"proposal": two_roles(tmp_path)}))["runId"]
            for name, conclusion in (("reader", "the fault: parse.py:3"), ("fixer", "fixed")):
                (pending,) = ok(await call(c, "dots_status", {"waitMs": 30_000}))[
                    "pendingDecisions"
                ]
                assert pending["worker"] == name
                await until(
                    lambda p=pending: p["decisionId"] in {n["decisionId"] for n in notices()}
                )
                args = {
                    "runId": run_id,
                    "worker": name,
                    "decisionId": pending["decisionId"],
                    "conclusion": conclusion,
                }
                view = ok(await call(c, "dots_finish", args))
            return view

    view = asyncio.run(scenario())
    assert view["state"] == "completed"
    assert len(answers.asked) == 2
    decisions = [n for n in notices() if n["kind"] == "decision"]
    assert [n["worker"] for n in decisions] == ["reader", "fixer"]
    first = decisions[0]
    assert first["uri"] == f"dots://runs/{view['runId']}"
    assert first["replyHead"] == "reader: parse.py:3"
    assert first["conversation"].startswith("connection-")


@pytest.mark.rule("DOT-15", "DOT-11")
def test_a_reconnect_needs_the_conversation_key(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    offline_codex.fake.push(Text("reader: done"))
    state = tmp_path / "state"
    proposal = plan(role("reader", workdir(tmp_path, "a")))

    async def scenario() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with served(offline_codex, state, LEGACY, Answers()) as c:
            out["run"] = ok(await call(c, "dots_start", {"proposal": proposal}, "chat-42"))["runId"]
            await call(c, "dots_status", {"waitMs": 30_000}, "chat-42")
        async with served(offline_codex, state, MODERN, Answers()) as c:  # a new process
            out["anonymous"] = ok(await call(c, "dots_status"))
            out["keyed"] = ok(await call(c, "dots_status", {}, "chat-42"))
        return out

    out = asyncio.run(scenario())
    assert out["anonymous"]["runs"] == []
    (run,) = out["keyed"]["runs"]
    assert run["runId"] == out["run"]


@pytest.mark.rule("DOT-15")
def test_a_server_started_by_a_worker_refuses_changes(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    async def scenario() -> tuple[Any, Any]:
        async with served(
            offline_codex,
            tmp_path / "state",
            LEGACY,
            Answers(),
            env={"MARKERTOOLS_DOTS_WORKER": "run-9:fixer"},
        ) as c:
            proposal = plan(role("reader", workdir(tmp_path, "a")))
            return (
                refused(await call(c, "dots_start", {"proposal": proposal})),
                ok(await call(c, "dots_probe")),
            )

    (text, _), probe = asyncio.run(scenario())
    assert text == (
        "dots_start: dots_start is refused: this dots server runs inside worker run-9:fixer "
        "of a dots run (MARKERTOOLS_DOTS_WORKER is set), and a worker cannot start or change "
        "any run"
    )
    assert probe["model"] == "fake-model"


@pytest.mark.rule("DOT-13")
def test_an_empty_worker_variable_is_still_worker_mode(offline_codex: OfflineCodex, tmp_path: Path) -> None:
    """Issue 26 item 9: MARKERTOOLS_DOTS_WORKER="" turned worker mode off."""

    async def scenario() -> tuple[str, str | None]:
        env = {"MARKERTOOLS_DOTS_WORKER": ""}
        async with served(offline_codex, tmp_path / "state", LEGACY, Answers(), env=env) as c:
            return refused(await call(c, "dots_control", {"runId": "r", "action": "cancel"}))

    text, field = asyncio.run(scenario())
    assert "is refused: this dots server runs inside worker (unnamed) of a dots run" in text
    assert field is None
    assert not (tmp_path / "state" / "host.lock").exists()
